#!/bin/sh
# SPDX-License-Identifier: MIT
# ctest wrapper for examples that need the shared test data:
#   run_with_data.sh EXPECTED DATAFILE... -- COMMAND ARG...
# Every DATAFILE (a path under the test data root) must exist, else the test
# is skipped (exit 77), except under CI=true, where it fails. A leading
# @DATA@ in COMMAND's arguments stands for the data root. Fails unless
# COMMAND exits 0 and prints EXPECTED.
set -u
expected=$1
shift
root="${BRISK_TEST_DATA:-${BRISK_DEFAULT_TEST_DATA:-}}"
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  if [ ! -e "$root/$1" ]; then
    if [ "${CI:-}" = true ]; then
      echo "missing test data under CI: $root/$1" >&2
      exit 1
    fi
    echo "skipped: test data not found: $root/$1 (set BRISK_TEST_DATA)"
    exit 77
  fi
  shift
done
[ $# -gt 0 ] && shift # the --
n=$#
while [ "$n" -gt 0 ]; do
  arg=$1
  shift
  case $arg in
    @DATA@*) arg="$root${arg#@DATA@}" ;;
  esac
  set -- "$@" "$arg"
  n=$((n - 1))
done
out=$("$@")
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
