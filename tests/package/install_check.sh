#!/bin/sh
# SPDX-License-Identifier: MIT
# install_check.sh BUILD_DIR SOURCE_DIR LIBDIR VERSION SOVERSION [static]
# Installs the build into a temporary prefix, MOVES that prefix (the
# package must be relocatable), and uses it as a downstream user would:
#  - checks the installed files and the library's names (ldconfig-friendly);
#  - builds tests/package/consumer, copied outside the source tree, with
#    find_package(brisk) and with pkg-config, and runs both;
#  - runs the installed CLI (it finds libbrisk relative to itself);
#  - builds the Go and Rust examples against the prefix (when go/cargo are
#    found: BRISK_GO / BRISK_CARGO) and runs them on the test model when it
#    is there.
# With "static" (a BRISK_STATIC build): libbrisk.a instead of the shared
# library's names, pkg-config --static, and no Go/Rust builds.
# Environment: CC (default cc), BRISK_GO, BRISK_CARGO, RUSTC, RUSTDOC,
# BRISK_TEST_DATA / BRISK_DEFAULT_TEST_DATA, CI.
set -eu
build=$1
src=$2
libdir=$3
version=$4
soversion=$5
kind=${6:-shared}
# A fixed scratch directory under the build tree (emptied first): Go's build
# cache remembers the cgo flags, so the prefix must not change between runs.
tmp=$build/package-check
rm -rf "$tmp"
mkdir -p "$tmp"
step() { echo "== $*"; }
die() { echo "FAIL: $*" >&2; exit 1; }

step "install into a temporary prefix, then move it"
cmake --install "$build" --prefix "$tmp/first" > "$tmp/install.log" || { cat "$tmp/install.log"; die "cmake --install"; }
mv "$tmp/first" "$tmp/prefix"
p=$tmp/prefix
lib=$p/$libdir
# Nothing installed may name the prefix it was installed to.
if grep -rl "$tmp/first" "$p" > "$tmp/stale" 2>/dev/null; then
  cat "$tmp/stale"; die "installed files refer to the install prefix"
fi

step "installed files"
if [ "$kind" = static ]; then
  [ -f "$lib/libbrisk.a" ] || die "no $lib/libbrisk.a"
  ls "$lib"/libbrisk.so* > /dev/null 2>&1 && die "a static build installed a shared libbrisk"
  abi_file=libbrisk.a
else
abi_file=$(cd "$lib" && ls libbrisk.so.$soversion.* 2>/dev/null | head -1)
[ -n "$abi_file" ] && [ -f "$lib/$abi_file" ] || die "no $lib/libbrisk.so.$soversion.*"
[ "$(readlink "$lib/libbrisk.so.$soversion")" = "$abi_file" ] || die "libbrisk.so.$soversion does not point to $abi_file"
[ "$(readlink "$lib/libbrisk.so")" = "libbrisk.so.$soversion" ] || die "libbrisk.so does not point to libbrisk.so.$soversion"
readelf -d "$lib/$abi_file" | grep -q "SONAME.*\[libbrisk.so.$soversion\]" || die "SONAME is not libbrisk.so.$soversion"
fi
for f in bin/brisk include/brisk/brisk.h include/brisk/brisk_experimental.h \
         "$libdir/pkgconfig/brisk.pc" "$libdir/cmake/brisk/brisk-config.cmake" \
         "$libdir/cmake/brisk/brisk-config-version.cmake" "$libdir/cmake/brisk/brisk-targets.cmake" \
         share/doc/brisk/LICENSE; do
  [ -f "$p/$f" ] || die "not installed: $f"
done
echo "ok: $abi_file (and its links), headers, CMake package, brisk.pc, CLI, LICENSE"

step "the installed CLI runs without LD_LIBRARY_PATH"
out=$(env -u LD_LIBRARY_PATH "$p/bin/brisk" --version) || die "brisk --version"
echo "$out"
case "$out" in *"brisk $version "*) ;; *) die "brisk --version does not say $version" ;; esac

mkdir "$tmp/consumer"
cp "$src/tests/package/consumer/consumer.c" "$src/tests/package/consumer/CMakeLists.txt" "$tmp/consumer/"

step "C program with find_package(brisk)"
want=$(echo "$version" | cut -d. -f1,2)
cmake -S "$tmp/consumer" -B "$tmp/consumer/build" -DCMAKE_PREFIX_PATH="$p" -DBRISK_WANT_VERSION="$want" \
  > "$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log"; die "configure with find_package(brisk)"; }
cmake --build "$tmp/consumer/build" > "$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; die "build with find_package(brisk)"; }
env -u LD_LIBRARY_PATH "$tmp/consumer/build/consumer" || die "the find_package(brisk) program failed"
# SameMajorVersion: a newer minor than installed, or another major, is refused.
next_minor=$(echo "$version" | awk -F. '{ print $1 "." $2 + 1 }')
if cmake -S "$tmp/consumer" -B "$tmp/consumer/build-newer" -DCMAKE_PREFIX_PATH="$p" \
     -DBRISK_WANT_VERSION="$next_minor" > /dev/null 2>&1; then
  die "find_package(brisk $next_minor) accepted version $version"
fi

step "C program with pkg-config"
export PKG_CONFIG_PATH="$lib/pkgconfig"
unset PKG_CONFIG_LIBDIR 2>/dev/null || true
[ "$(pkg-config --modversion brisk)" = "$version" ] || die "brisk.pc version is not $version"
[ "$(pkg-config --variable=prefix brisk)" -ef "$p" ] || die "brisk.pc prefix is not the moved prefix"
# shellcheck disable=SC2046
pc_static=
[ "$kind" = static ] && pc_static=--static
${CC:-cc} -std=c99 -Wall -Werror -o "$tmp/consumer/pc" "$tmp/consumer/consumer.c" $(pkg-config $pc_static --cflags --libs brisk) \
  || die "build with pkg-config"
LD_LIBRARY_PATH="$lib" "$tmp/consumer/pc" || die "the pkg-config program failed"

model="${BRISK_TEST_DATA:-${BRISK_DEFAULT_TEST_DATA:-}}/models/stories260K.gguf"
lily="Once upon a time, there was a little girl named Lily"
run_example() { # NAME PROGRAM...
  name=$1
  shift
  if [ ! -f "$model" ]; then
    [ "${CI:-}" = true ] && die "missing test data under CI: $model"
    echo "built; not run: no $model"
    return 0
  fi
  out=$(LD_LIBRARY_PATH="$lib" "$@" "$model") || { echo "$out"; die "$name failed"; }
  case "$out" in *"[0] $lily"*) echo "ok: $name generated the expected text" ;; *) echo "$out"; die "$name: unexpected output" ;; esac
}

[ "$kind" = static ] && { echo "install check passed (static)"; exit 0; }

if [ -n "${BRISK_GO:-}" ]; then
  step "Go examples against the prefix"
  for dir in "$src"/examples/go/*/; do
    [ -f "$dir/main.go" ] || continue
    name=$(basename "$dir")
    # cgo takes the flags from brisk.pc; Go's build cache does not key on
    # them, so they are also given as CGO_* (which it does key on).
    (cd "$dir" && GOCACHE="$build/go/cache" GOPATH="$build/go/path" GOPROXY=off GOFLAGS=-mod=readonly GOENV=off \
       GOTOOLCHAIN=local CGO_ENABLED=1 CGO_CFLAGS="$(pkg-config --cflags brisk)" CGO_LDFLAGS="$(pkg-config --libs brisk)" \
       "$BRISK_GO" build -o "$tmp/go-$name" .) || die "go build examples/go/$name"
    [ "$name" = parallel ] && run_example "examples/go/$name" "$tmp/go-$name"
  done
else
  echo "== Go not found: Go examples not built"
fi

if [ -n "${BRISK_CARGO:-}" ]; then
  step "Rust examples against the prefix"
  for dir in "$src"/examples/rust/*/; do
    [ -f "$dir/Cargo.toml" ] || continue
    name=$(basename "$dir")
    (cd "$dir" && CARGO_TARGET_DIR="$build/package-cargo" CARGO_TERM_COLOR=never \
       "$BRISK_CARGO" build --offline --locked --quiet) || die "cargo build examples/rust/$name"
    bin=$(grep -m1 '^name' "$dir/Cargo.toml" | sed 's/.*"\(.*\)".*/\1/')
    [ "$name" = parallel ] && run_example "examples/rust/$name" "$build/package-cargo/debug/$bin"
  done
else
  echo "== cargo not found: Rust examples not built"
fi
echo "install check passed"
