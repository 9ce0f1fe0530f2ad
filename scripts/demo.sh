#!/usr/bin/env bash
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
