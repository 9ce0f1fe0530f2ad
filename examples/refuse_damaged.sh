#!/bin/sh
# SPDX-License-Identifier: MIT
# ctest: refuse_damaged.sh BUNDLE COMMAND...
# Runs COMMAND on a copy of BUNDLE with one byte flipped; passes only if it
# fails and reports a checksum (or format) error. Without BUNDLE (no test
# data to make it from) the test is skipped (exit 77).
set -u
bundle=$1
shift
if [ ! -f "$bundle" ]; then
  echo "skipped: no bundle at $bundle (the Go example makes it from the test data)"
  exit 77
fi
damaged="${bundle%.brisk}-damaged.brisk"
cp "$bundle" "$damaged" || exit 1
offset=$(($(wc -c <"$damaged") / 2))
byte=$(dd if="$damaged" bs=1 skip="$offset" count=1 2>/dev/null | od -An -tu1 | tr -d ' ')
# shellcheck disable=SC2059 # the format is the octal escape of the new byte
printf "\\$(printf %03o $((byte ^ 1)))" | dd of="$damaged" bs=1 seek="$offset" conv=notrunc 2>/dev/null
out=$("$@" "$damaged" 2>&1)
rc=$?
rm -f "$damaged"
printf '%s\n' "$out"
if [ $rc -eq 0 ]; then
  echo "a damaged bundle was accepted" >&2
  exit 1
fi
case "$out" in
  *BRISK_ERR_CHECKSUM* | *BRISK_ERR_BAD_FORMAT*) exit 0 ;;
esac
echo "no checksum error in the output" >&2
exit 1
