#!/bin/sh
# SPDX-License-Identifier: MIT
# exports_check.sh LIBBRISK_SO BRISK_MAP HEADER...
# The public headers, the version script and the library agree:
#  - every brisk_* function declared (BRISK_API) in the headers is exported,
#    with the symbol version of the brisk.map node that lists it;
#  - a declaration whose comment says "Added in ABI 0.N" sits in node
#    BRISK_0.N, one without such a note in the first node (BRISK_0.1);
#  - nothing else is exported, and the map lists nothing undeclared.
set -eu
lib=$1
map=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# name version-from-comment, one per declaration.
awk '
  /Added in ABI [0-9]+\.[0-9]+/ {
    match($0, /Added in ABI [0-9]+\.[0-9]+/); pending = substr($0, RSTART + 13, RLENGTH - 13)
  }
  /BRISK_API[^(]*brisk_[a-z0-9_]+\(/ {
    line = $0; sub(/\(.*/, "", line); n = split(line, w, /[ *]+/)
    print w[n], (pending == "" ? "0.1" : pending); pending = ""; next
  }
  !/^[ \t]*(\/\*|\*|\/\/)/ && /;/ { pending = "" }
' "$@" | sort > "$tmp/declared"

# name node, from the version script (comments stripped).
sed 's|/\*.*\*/||; /\/\*/,/\*\//d' "$map" | awk '
  /^BRISK_[0-9]+\.[0-9]+[ \t]*\{/ { node = $1; sub(/^BRISK_/, "", node); next }
  /^[ \t]*brisk_[a-z0-9_]+;/ { s = $1; sub(/;$/, "", s); print s, node }
' | sort > "$tmp/mapped"

# name version, of every defined dynamic symbol (the nodes' own ABS symbols aside).
readelf --dyn-syms -W "$lib" | awk '$7 != "UND" && $8 != "" && ($5 == "GLOBAL" || $5 == "WEAK") {
  if ($7 == "ABS" && $4 == "OBJECT" && $8 ~ /^BRISK_[0-9]+\.[0-9]+$/) next
  s = $8; v = "none"
  if (index(s, "@@")) { v = substr(s, index(s, "@@") + 2); s = substr(s, 1, index(s, "@@") - 1) }
  else if (index(s, "@")) { v = substr(s, index(s, "@") + 1); s = substr(s, 1, index(s, "@") - 1) }
  sub(/^BRISK_/, "", v); print s, v
}' | sort > "$tmp/exported"

status=0
if ! cmp -s "$tmp/declared" "$tmp/mapped"; then
  echo "headers and $map disagree (< declared with the ABI its comment gives, > listed in the map):"
  diff "$tmp/declared" "$tmp/mapped" || true
  status=1
fi
if ! cmp -s "$tmp/mapped" "$tmp/exported"; then
  echo "$map and the symbols $lib exports disagree (< map, > exported name and version):"
  diff "$tmp/mapped" "$tmp/exported" || true
  status=1
fi
[ "$status" -eq 0 ] && echo "ok: $(wc -l < "$tmp/exported") functions, each exported once with its version"
exit "$status"
