#!/bin/sh
# SPDX-License-Identifier: MIT
# global_state_check.sh LIBBRISK_SO ALLOWLIST
# brisk.h promises no process-global mutable state. Lists the named objects
# in libbrisk.so's writable .data and .bss sections (not .data.rel.ro, not
# thread-locals) and fails on any the allowlist does not name as computed
# once and then only read.
set -u
lib=$1
allow=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
grep -v '^#' "$allow" | grep -v '^$' | sed 's/^/^/; s/$/$/' > "$tmp/patterns"
objdump -t -C -w "$lib" | awk -F'\t' '$1 ~ / (\.data|\.bss)$/ { sub(/^[0-9a-f]+ +/, "", $2); print $2 }' |
  grep -v -e '^guard variable for ' -e '^DW\.ref\.' -e '^completed\.[0-9]*$' -e '^__dso_handle$' \
          -e '^__TMC_END__$' -e '^_DYNAMIC$' -e '^_GLOBAL_OFFSET_TABLE_$' | sort -u > "$tmp/found"
[ -s "$tmp/found" ] || { echo "FAIL: no symbols read from $lib (stripped?)"; exit 1; }
if grep -v -E -f "$tmp/patterns" "$tmp/found" > "$tmp/unexpected"; then
  echo "FAIL: writable global objects in libbrisk.so that are not known to be set once and then only read:"
  cat "$tmp/unexpected"
  echo "Keep mutable state in a handle; if one of these is immutable after initialisation, add it to $allow."
  exit 1
fi
echo "ok: $(wc -l < "$tmp/found") writable global objects, all computed once then read-only"
