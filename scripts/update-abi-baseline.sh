#!/bin/sh
# SPDX-License-Identifier: MIT
# Regenerates abi/libbrisk.abi, the ABI baseline tests/package/abi_check.sh
# compares libbrisk against, from a Release build:
#   scripts/update-abi-baseline.sh [BUILD_DIR]      (default: build)
# Run it only for a deliberate, reviewed change of the ABI: after adding
# functions or growing option structs (to record them), or when the ABI
# major changes. Commit abi/libbrisk.abi in the same change, and say why.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
lib=$build/capi/libbrisk.so
cmake --build "$build" --target brisk
[ -f "$lib" ] || { echo "no $lib (a static build has no ABI to record)" >&2; exit 1; }
abidw --headers-dir "$root/include/brisk" --drop-private-types --exported-interfaces-only --no-corpus-path --no-comp-dir-path \
  --short-locs --type-id-style hash --out-file "$root/abi/libbrisk.abi" "$lib"
echo "wrote abi/libbrisk.abi from $lib; check the diff before committing"
