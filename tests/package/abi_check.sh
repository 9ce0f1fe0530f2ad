#!/bin/sh
# SPDX-License-Identifier: MIT
# abi_check.sh BASELINE.abi LIBBRISK_SO HEADERS_DIR SUPPRESSIONS
# Compares libbrisk against the committed ABI baseline (abidw XML) with
# abidiff, over the public headers' types only, and fails on anything but
# additions. Passes: added functions, enumerators added to an enum (abidiff
# counts them as harmless), an option struct (brisk_*_options) grown at the
# end (brisk.h's rules: callers pass struct_size). Fails: a removed function,
# a changed signature, a member moved, resized or removed, a member added
# anywhere but after the old end, a renumbered enumerator, any other change.
# SUPPRESSIONS (abi/suppressions.txt) lists what is not held fixed at all:
# brisk_experimental.h. To update the baseline on purpose, see README.md
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
report=$(abidiff --leaf-changes-only --no-added-syms --fail-no-debug-info --exported-interfaces-only \
  --drop-private-types --headers-dir2 "$headers" --suppressions "$suppr" "$baseline" "$lib")
rc=$?
printf '%s\n' "$report"
fail() {
  echo "ABI check FAILED: $*" >&2
  echo "If the change is deliberate, update the baseline as README.md says (scripts/update-abi-baseline.sh)." >&2
  exit 1
}
# abidiff's status bits: 1 error, 2 usage, 4 an ABI change, 8 an incompatible one.
[ "$rc" -eq 0 ] && { echo "ok: libbrisk is compatible with $baseline"; exit 0; }
[ $((rc & 3)) -ne 0 ] && fail "abidiff could not compare (status $rc)"
[ $((rc & 8)) -ne 0 ] && fail "an incompatible change (abidiff status $rc)"
# Status 4: accept it only if every change is an option struct grown at its end.
verdict=$(printf '%s\n' "$report" | awk '
  function bad(why) { if (!reason) reason = why " (line: " $0 ")" }
  /^Leaf changes summary:/ || /^Changed leaf types summary:/ || /^$/ { next }
  /^Removed\/Changed\/Added (functions|variables) summary:/ {
    if ($0 !~ /: 0 Removed, 0 Changed/) bad("functions or variables removed or changed")
    next
  }
  /^\x27struct brisk_[a-z_]*options at .*\x27 changed:$/ { in_struct = 1; old = -1; next }
  /^\x27/ { in_struct = 0; bad("a change to a type other than an option struct"); next }
  in_struct && /^  type size changed from [0-9]+ to [0-9]+ \(in bits\)$/ {
    old = $5 + 0; if ($7 + 0 <= old) bad("an option struct shrank"); next
  }
  in_struct && /^  [0-9]+ data member insertions?:$/ { next }
  in_struct && /^    \x27.*\x27, at offset [0-9]+ \(in bits\)/ {
    off = $0; sub(/.*\x27, at offset /, "", off); sub(/ .*/, "", off)
    if (old < 0 || off + 0 < old) bad("a member inserted before the old end of an option struct")
    next
  }
  { bad("a change other than growth at the end of an option struct") }
  END { print reason ? reason : "ok" }')
[ "$verdict" = ok ] || fail "$verdict"
echo "ok: libbrisk is compatible with $baseline (option structs grown at the end)"
