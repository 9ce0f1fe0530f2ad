#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs everything brisk needs to build and test, from Debian 12 packages only.
# Idempotent: packages already present are skipped by apt; safe to run again.
set -euo pipefail

PKGS=(
  build-essential cmake pkg-config ninja-build
  libzstd-dev libxxhash-dev catch2 libcxxopts-dev nlohmann-json3-dev
  libhwloc-dev libpcre2-dev
  clang libclang-rt-14-dev
  golang-go cargo rustc
  libcpp-httplib-dev nginx
  abigail-tools
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# Node.js and npm run the `brisk serve` tests (tests/serve); a node already
# installed (e.g. from NodeSource, which bundles npm) is kept as it is.
if ! command -v node >/dev/null 2>&1; then missing+=(nodejs); fi
if ! command -v npm >/dev/null 2>&1; then missing+=(npm); fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
else
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The openai npm client for the serve tests, exactly as the lockfile pins it.
SERVE_TESTS="$(cd "$(dirname "$0")/.." && pwd)/tests/serve"
# A stamp (the lockfile as last installed) makes a second run a no-op.
if [ -f "$SERVE_TESTS/package-lock.json" ] && \
   ! cmp -s "$SERVE_TESTS/package-lock.json" "$SERVE_TESTS/node_modules/.brisk-installed-lock"; then
  (cd "$SERVE_TESTS" && npm ci --no-audit --no-fund && cp package-lock.json node_modules/.brisk-installed-lock)
fi
