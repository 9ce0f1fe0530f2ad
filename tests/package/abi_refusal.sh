#!/bin/sh
# SPDX-License-Identifier: MIT
# abi_refusal.sh PROGRAM CURRENT_LIBDIR PREVIOUS_LIBDIR NEWEST_NODE
# PROGRAM uses a function of the newest ABI minor. It must record that it
# needs symbol version NEWEST_NODE, run with this build's libbrisk, and be
# refused at load time, with the loader naming the missing version, by a
# libbrisk.so.0 whose version script lacks that node (the previous minor's).
set -u
prog=$1
current=$2
previous=$3
node=$4
status=0
if readelf -V -W "$prog" | grep -q "Name: $node "; then
  echo "ok: $(basename "$prog") needs $node"
else
  echo "FAIL: $(basename "$prog") does not record that it needs $node:"
  readelf -V -W "$prog" | sed -n '/Version needs/,$p'
  status=1
fi
if LD_LIBRARY_PATH=$current "$prog"; then
  echo "ok: runs with this build's libbrisk"
else
  echo "FAIL: does not run with this build's libbrisk"
  status=1
fi
err=$(LD_LIBRARY_PATH=$previous "$prog" 2>&1)
rc=$?
echo "with the previous ABI's libbrisk: exit $rc: $err"
case "$err" in
  *"version \`$node' not found"*) [ "$rc" -ne 0 ] && echo "ok: refused at load, naming $node" ;;
  *) echo "FAIL: expected the loader to refuse it for lack of $node"; status=1 ;;
esac
[ "$rc" -ne 0 ] || status=1
exit "$status"
