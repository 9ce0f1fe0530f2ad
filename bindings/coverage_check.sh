#!/bin/sh
# SPDX-License-Identifier: MIT
# coverage_check.sh BINDINGS_DIR HEADER...
# Every function a header declares (BRISK_API), and every field of its
# brisk_*_options structs (see below), has a binding in both languages, in
# the bindings' own code (tests do not count):
#  - Go:   called as C.<name>( in BINDINGS_DIR/go/brisk/*.go (not *_test.go);
#  - Rust: declared as `pub fn <name>(` in BINDINGS_DIR/rust/brisk-sys/src/,
#          and called as sys::<name>( in BINDINGS_DIR/rust/brisk/src/.
# An option struct's brisk_X_options_init_sized is bound the way each
# binding does it: Go calls C.brisk_go_X_options_init (bridge.h wraps the
# header's brisk_X_options_init macro around it), Rust calls
# sys::brisk_X_options_init (brisk-sys's helper that passes the size,
# written out or made by its options_init! macro).
set -eu
dir=$1
shift
go=$dir/go/brisk
sys=$dir/rust/brisk-sys/src
safe=$dir/rust/brisk/src
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The declared names, one per line.
awk '/BRISK_API[^(]*brisk_[a-z0-9_]+\(/ {
  line = $0; sub(/\(.*/, "", line); n = split(line, w, /[ *]+/); print w[n]
}' "$@" | sort -u > "$tmp/declared"
[ -s "$tmp/declared" ] || { echo "no BRISK_API declarations found in $*"; exit 1; }

# The bindings' code as one text per language part (tests left out).
find "$go" -maxdepth 1 -name '*.go' ! -name '*_test.go' -exec cat {} + > "$tmp/go"
cat "$go/bridge.h" > "$tmp/bridge"
find "$sys" -name '*.rs' -exec cat {} + > "$tmp/sys"
find "$safe" -name '*.rs' -exec cat {} + > "$tmp/safe"

has() { grep -Fq -- "$1" "$2"; }

status=0
n=0
while read -r f; do
  n=$((n + 1))
  case $f in
  *_options_init_sized)
    init=${f%_sized}          # brisk_X_options_init
    stem=${init#brisk_}       # X_options_init
    if ! has "C.brisk_go_$stem(" "$tmp/go" || ! has "$init(o)" "$tmp/bridge"; then
      echo "$f: no Go binding (C.brisk_go_$stem( in $go/*.go, wrapping $init in bridge.h)"
      status=1
    fi
    # The helper is written out or made by brisk-sys's options_init! macro.
    if ! has "pub fn $f(" "$tmp/sys" ||
      { ! has "pub unsafe fn $init(" "$tmp/sys" && ! grep -Eq "$init\([a-z0-9_]+\) => $f;" "$tmp/sys"; }; then
      echo "$f: no brisk-sys declaration (pub fn $f( and its helper $init in $sys)"
      status=1
    fi
    if ! has "sys::$init(" "$tmp/safe" && ! has "sys::$init)" "$tmp/safe"; then
      echo "$f: not used by the safe Rust crate (sys::$init in $safe)"
      status=1
    fi
    ;;
  *)
    if ! has "C.$f(" "$tmp/go"; then
      echo "$f: no Go binding (C.$f( in $go/*.go)"
      status=1
    fi
    if ! has "pub fn $f(" "$tmp/sys"; then
      echo "$f: no brisk-sys declaration (pub fn $f( in $sys)"
      status=1
    fi
    if ! has "sys::$f(" "$tmp/safe"; then
      echo "$f: no safe Rust binding (sys::$f( in $safe)"
      status=1
    fi
    ;;
  esac
done < "$tmp/declared"

# Every field of every brisk_*_options struct is mapped by both bindings
# (struct_size is set by the init functions; the callback pairs, *_fn and
# *_user_data, are the hooks', bound with the functions above):
#  - brisk-sys: `pub <field>:` inside that struct's `pub struct` block;
#  - Go:   `.<field>` in a function that calls C.brisk_go_X_options_init
#          (the defaults and the mapping to C);
#  - Rust: `.<field>` in a safe-crate function that calls
#          sys::brisk_X_options_init (directly or through c_defaults!).
# A C field named `type` is `_type` in Go and `type_` in Rust.
awk '
  {  # comments out, also those spanning lines
    if (incomment) { if (!(j = index($0, "*/"))) next; $0 = substr($0, j + 2); incomment = 0 }
    while ((i = index($0, "/*")) > 0) {
      if (!(j = index(substr($0, i + 2), "*/"))) { $0 = substr($0, 1, i - 1); incomment = 1; break }
      $0 = substr($0, 1, i - 1) " " substr($0, i + j + 3)
    }
  }
  /^typedef struct brisk_[a-z0-9_]*_options[ ]*\{/ { name = $3; next }
  name != "" && /^\}/ { name = ""; next }
  name != "" && /;/ && !/\(/ {
    line = $0; sub(/;.*/, "", line); k = split(line, w, /[ *]+/); print name, w[k]
  }
' "$@" | sort -u > "$tmp/fields"
[ -s "$tmp/fields" ] || { echo "no option struct fields found in $*"; exit 1; }

# region FILE... INIT: the text of every function (Go: `func` to its closing
# `}`; Rust: from one `fn` to the next) that mentions INIT.
region() {
  init=$1
  shift
  awk -v init="$init" '
    function flush() { if (body ~ init) printf "%s", body; body = "" }
    /^func / || /^[ ]*(pub(\([a-z]+\))? )?(unsafe )?fn / { flush() }
    { body = body $0 "\n" }
    END { flush() }
  ' "$@"
}
m=0
while read -r st field; do
  case $field in struct_size | *_fn | *_user_data) continue ;; esac
  m=$((m + 1))
  gof=$field rsf=$field
  [ "$field" = type ] && gof=_type rsf=type_
  if ! awk -v st="$st" -v f="$rsf" '
      $0 ~ "pub struct " st " [{]" { inside = 1; next }
      inside && /^}/ { inside = 0 }
      inside && $0 ~ "pub " f ":" { found = 1 }
      END { exit !found }' "$tmp/sys"; then
    echo "$st.$field: not declared in brisk-sys (pub $rsf: in pub struct $st, $sys)"
    status=1
  fi
  stem=${st#brisk_}
  if ! find "$go" -maxdepth 1 -name '*.go' ! -name '*_test.go' -exec cat {} + |
    region "C[.]brisk_go_${stem}_init[(]" | grep -Eq "[.]$gof([^A-Za-z0-9_]|\$)"; then
    echo "$st.$field: not mapped by the Go binding (.$gof next to C.brisk_go_${stem}_init in $go/*.go)"
    status=1
  fi
  if ! find "$safe" -name '*.rs' -exec cat {} + |
    region "sys::${st}_init[^a-z_]" | grep -Eq "[.]$rsf([^A-Za-z0-9_]|\$)"; then
    echo "$st.$field: not mapped by the safe Rust crate (.$rsf next to sys::${st}_init in $safe)"
    status=1
  fi
done < "$tmp/fields"

[ "$status" -eq 0 ] &&
  echo "ok: all $n functions and $m option fields of $* are bound in Go and in Rust (brisk-sys and the safe crate)"
exit "$status"
