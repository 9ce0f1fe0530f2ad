#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds brisk for 64-bit ARM with Debian's cross compiler and runs the
# Catch2 suite and the C API programs under qemu user emulation: the check
# that the library builds and passes its tests off x86, where only the
# scalar kernels exist.
#
# Not part of CI, and it changes the machine: it adds arm64 to dpkg's
# architectures and installs the cross compiler, qemu-user and the arm64
# -dev packages of brisk's dependencies. Under emulation the suite runs
# several times slower than natively.
#
# Usage: scripts/check-aarch64.sh [BUILD_DIR] [Catch2 test spec...]
# BUILD_DIR defaults to build-aarch64 (beside build/, ignored by git).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
BUILD="${1:-build-aarch64}"
shift || true
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  $SUDO dpkg --add-architecture arm64
fi
PKGS=(g++-aarch64-linux-gnu qemu-user
  libzstd-dev:arm64 libxxhash-dev:arm64 libhwloc-dev:arm64 libpcre2-dev:arm64 libcpp-httplib-dev:arm64)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -ne 0 ]; then
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Programs run with the arm64 C library the -dev packages installed under
# /lib/aarch64-linux-gnu (qemu -L /). The cross compiler's own copy under
# /usr/aarch64-linux-gnu is a different build: a program that loads the
# dynamic loader of one and the libc of the other hangs in pthread_create.
QEMU=(qemu-aarch64 -L /)
mkdir -p "$BUILD"
cat >"$BUILD/aarch64-linux-gnu.cmake" <<'EOF'
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64;-L;/)
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
EOF
GEN=()
if command -v ninja >/dev/null 2>&1; then GEN=(-G Ninja); fi
cmake -S "$ROOT" -B "$BUILD" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE="$BUILD/aarch64-linux-gnu.cmake"
cmake --build "$BUILD" -j "$(nproc)" --target brisk_cli brisk_tests brisk_c99_check brisk_c_lifetimes

# The CLI tests run $BRISK_BIN through the shell: a wrapper runs it under qemu.
cat >"$BUILD/brisk-qemu" <<EOF
#!/bin/sh
LD_LIBRARY_PATH="$BUILD/capi" exec ${QEMU[*]} "$BUILD/tools/brisk" "\$@"
EOF
chmod +x "$BUILD/brisk-qemu"

export CI=true
export BRISK_TEST_DATA="${BRISK_TEST_DATA:-$(cd "$ROOT/.." && pwd)/shared}"
export BRISK_BIN="$BUILD/brisk-qemu"
export LD_LIBRARY_PATH="$BUILD/capi"
"${QEMU[@]}" "$BUILD/tests/brisk_c99_check"
"${QEMU[@]}" "$BUILD/tests/brisk_c_lifetimes"
"${QEMU[@]}" "$BUILD/tests/brisk_tests" "$@"
echo "check-aarch64: the suite passed on aarch64 (scalar kernels, under qemu)"
