#!/bin/sh
# SPDX-License-Identifier: MIT
# version_check.sh SOURCE_DIR BUILD_DIR VERSION ABI_MAJOR ABI_MINOR
# One version source (CMakeLists.txt): everything that states a version
# says the same. (brisk.h's macros are also checked at compile time in
# capi/status.cpp.)
set -u
src=$1
build=$2
version=$3
abi_major=$4
abi_minor=$5
status=0
check() { # WHAT GOT WANT
  if [ "$2" = "$3" ]; then echo "ok: $1 = $2"; else echo "MISMATCH: $1 is '$2', CMakeLists.txt says '$3'"; status=1; fi
}
macro() { sed -n "s/^#define $1 \([0-9]*\).*/\1/p" "$src/include/brisk/brisk.h"; }
rust_const() { sed -n "s/^pub const $1: u32 = \([0-9]*\);.*/\1/p" "$src/bindings/rust/brisk-sys/src/lib.rs"; }
cargo_version() { sed -n 's/^version = "\(.*\)"/\1/p' "$1" | head -1; }
lock_version() { awk -v n="$2" '$0 == "name = \"" n "\"" { getline; gsub(/version = |"/, ""); print; exit }' "$1"; }

check "brisk.h BRISK_VERSION_*" "$(macro BRISK_VERSION_MAJOR).$(macro BRISK_VERSION_MINOR).$(macro BRISK_VERSION_PATCH)" "$version"
check "brisk.h BRISK_ABI_VERSION_*" "$(macro BRISK_ABI_VERSION_MAJOR).$(macro BRISK_ABI_VERSION_MINOR)" "$abi_major.$abi_minor"
so=$build/capi/libbrisk.so
if [ -f "$so" ]; then
  check "SONAME" "$(readelf -d "$so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')" "libbrisk.so.$abi_major"
  check "file version" "$(readlink -f "$so" | sed 's/.*libbrisk\.so\.//')" "$abi_major.$abi_minor.0"
fi
newest=$(sed -n 's/^BRISK_\([0-9]*\.[0-9]*\) *{.*/\1/p' "$src/capi/brisk.map" | tail -1)
check "newest node of capi/brisk.map" "$newest" "$abi_major.$abi_minor"
check "brisk.pc Version" "$(sed -n 's/^Version: //p' "$build/capi/brisk.pc")" "$version"
check "brisk-config-version.cmake" \
  "$(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")/\1/p' "$build/capi/brisk-config-version.cmake")" "$version"
rs=$src/bindings/rust
check "Rust brisk-sys BRISK_VERSION_*" \
  "$(rust_const BRISK_VERSION_MAJOR).$(rust_const BRISK_VERSION_MINOR).$(rust_const BRISK_VERSION_PATCH)" "$version"
check "Rust brisk-sys BRISK_ABI_VERSION_*" \
  "$(rust_const BRISK_ABI_VERSION_MAJOR).$(rust_const BRISK_ABI_VERSION_MINOR)" "$abi_major.$abi_minor"
check "Rust brisk-sys crate version" "$(cargo_version "$rs/brisk-sys/Cargo.toml")" "$version"
check "Rust brisk crate version" "$(cargo_version "$rs/brisk/Cargo.toml")" "$version"
check "Cargo.lock brisk-sys" "$(lock_version "$rs/Cargo.lock" brisk-sys)" "$version"
check "Cargo.lock brisk" "$(lock_version "$rs/Cargo.lock" brisk)" "$version"
# The Go binding takes its constants from brisk.h through cgo.
for c in VERSION_MAJOR VERSION_MINOR VERSION_PATCH ABI_VERSION_MAJOR ABI_VERSION_MINOR; do
  if ! grep -q "= C.BRISK_$c\$" "$src"/bindings/go/brisk/*.go; then
    echo "MISMATCH: the Go binding does not take BRISK_$c from brisk.h"
    status=1
  fi
done
[ "$status" -eq 0 ] && echo "ok: Go constants come from brisk.h"
exit "$status"
