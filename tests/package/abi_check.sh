#!/bin/sh
# abi_check.sh BASELINE.abi LIBBRISK_SO HEADERS_DIR SUPPRESSIONS
# Compares libbrisk against the committed ABI baseline (abidw XML) with
# abidiff, over the public headers' types only. Fails on anything but
# additions: a removed or changed function, a struct changed other than by
# growing at the end (abi/suppressions.txt), a renumbered enumerator.
# Added functions and added enumerators pass (abidiff counts enumerator
# insertions as harmless). To update the baseline on purpose, see README
# ("ABI baseline") and scripts/update-abi-baseline.sh.
set -u
baseline=$1
lib=$2
headers=$3
suppr=$4
if ! command -v abidiff > /dev/null; then
  [ "${CI:-}" = true ] && { echo "abidiff missing under CI (scripts/install-deps.sh installs abigail-tools)" >&2; exit 1; }
  echo "skipped: abidiff not found (scripts/install-deps.sh installs abigail-tools)"
  exit 77
fi
abidiff --no-added-syms --fail-no-debug-info --exported-interfaces-only --drop-private-types \
  --headers-dir2 "$headers" --suppressions "$suppr" "$baseline" "$lib"
rc=$?
# abidiff's status bits: 1 error, 2 usage, 4 an ABI change, 8 an incompatible one.
if [ "$rc" -ne 0 ]; then
  echo "ABI check FAILED (abidiff status $rc): libbrisk differs from $baseline in more than additions." >&2
  echo "If the change is deliberate, update the baseline as README.md says (scripts/update-abi-baseline.sh)." >&2
  exit 1
fi
echo "ok: libbrisk is compatible with $baseline"
