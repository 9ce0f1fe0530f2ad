#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# README command (A): install dependencies, build, make a random-weight model
# in the shape of a real one (no download) and generate text with it.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
mkdir -p build/models
MODEL=build/models/synthetic-tiny-q8_0.gguf
[ -f "$MODEL" ] || ./build/tools/brisk synth --shape tiny --type q8_0 -o "$MODEL"
./build/tools/brisk run -m "$MODEL" -p "Once upon a time" -n 64 --seed 1
# brisk's main job: how fast would a 1.1B 4-bit model run on this PC, alone
# and with 4 sequences sharing each weight read? (random weights, no download)
./build/tools/brisk bench --synthetic tinyllama-1.1b --type q4_0 --parallel 1,4 -r 3 -n 64 --window 32 --no-history
