#!/usr/bin/env bash
# Installs everything brisk needs to build and test, from Debian 12 packages only.
# Idempotent: packages already present are skipped by apt; safe to run again.
set -euo pipefail

PKGS=(
  build-essential cmake pkg-config ninja-build
  libzstd-dev libxxhash-dev catch2 libcxxopts-dev nlohmann-json3-dev
  libhwloc-dev libpcre2-dev
  clang libclang-rt-14-dev
  golang-go cargo rustc
  abigail-tools
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
