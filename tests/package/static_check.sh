#!/bin/sh
# SPDX-License-Identifier: MIT
# static_check.sh [SOURCE_DIR [BUILD_DIR]]
# Configures and builds brisk with BRISK_STATIC=ON in a temporary directory
# (libbrisk and the CLI only; ccache makes the engine's objects cheap when
# the main build has them), then runs install_check.sh in static mode: the
# C programs link libbrisk.a through find_package(brisk) (find_dependency of
# its private dependencies) and through pkg-config --static.
# Not run by ctest: it configures and builds the library a second time.
set -eu
src=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
# BUILD_DIR (kept) makes a second run incremental; by default a temporary one.
if [ -n "${2:-}" ]; then
  bld=$2
else
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/brisk-static-XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  bld=$tmp/build
fi
launcher=
command -v ccache > /dev/null && launcher="-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
# shellcheck disable=SC2086
cmake -S "$src" -B "$bld" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBRISK_STATIC=ON -DBRISK_BUILD_TESTS=OFF \
  $launcher > "$bld.configure.log" 2>&1 || { cat "$bld.configure.log"; exit 1; }
cmake --build "$bld" --target brisk brisk_cli -j2 > "$bld.build.log" 2>&1 || { tail -50 "$bld.build.log"; exit 1; }
version=$(sed -n 's/^Version: //p' "$bld/capi/brisk.pc")
sh "$src/tests/package/install_check.sh" "$bld" "$src" lib "$version" "${version%%.*}" static
