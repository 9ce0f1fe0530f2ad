#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# README command (B): install dependencies, build, and run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
export BRISK_TEST_DATA="${BRISK_TEST_DATA:-$(cd .. && pwd)/shared}"
cd build
ctest --output-on-failure -j "$(nproc)" --timeout 600
