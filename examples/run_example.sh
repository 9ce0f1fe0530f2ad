#!/bin/sh
# SPDX-License-Identifier: MIT
# ctest wrapper for the examples: run_example.sh EXPECTED COMMAND...
# Runs COMMAND with the shared test model appended as its last argument and
# fails unless it exits 0 and prints EXPECTED. Without the model the test is
# skipped (exit 77), except under CI=true, where it fails.
set -u
expected=$1
shift
model="${BRISK_TEST_DATA:-${BRISK_DEFAULT_TEST_DATA:-}}/models/stories260K.gguf"
if [ ! -f "$model" ]; then
  if [ "${CI:-}" = true ]; then
    echo "missing test data under CI: $model" >&2
    exit 1
  fi
  echo "skipped: test data not found: $model (set BRISK_TEST_DATA)"
  exit 77
fi
out=$("$@" "$model")
rc=$?
printf '%s\n' "$out"
if [ $rc -ne 0 ]; then
  echo "exit status $rc" >&2
  exit 1
fi
case "$out" in
  *"$expected"*) exit 0 ;;
esac
echo "expected in the output: $expected" >&2
exit 1
