#!/bin/bash
# SPDX-License-Identifier: MIT
# The benchmark matrix of issues 3 and 5 on TinyLlama-1.1B-shaped random
# models (made with `brisk synth` / `brisk quantize`, kept in $MODELS):
#   single-stream prompt speed (pp512) and decode speed (after the 512-token
#   prompt, and from an empty context as llama-bench's tg128) per weight
#   type, and the aggregate
#   decode curve over 1..16 parallel sequences for Q4_0 and Q8_0 weights with
#   F16 and Q8_0 KV caches, all in one run per weight type (128-token prompt
#   per sequence, 128 generated,
#   the parallel counts stepped in turns, 8 engine steps each, each timed on
#   its own clock (--interleave),
#   speed over the last 64). Medians of $REPS runs; JSON lines go to $OUT.
# Run it alone: the figures mean nothing on a loaded machine (check `uptime`).
# Usage: scripts/bench_matrix.sh [single|curve|all]
set -euo pipefail
B=${BRISK_BIN:-build/tools/brisk}
MODELS=${MODELS:-/tmp/models}
REPS=${REPS:-5}
OUT=${OUT:-/tmp/brisk-bench-matrix.jsonl}
what=${1:-all}
mkdir -p "$MODELS"

model() {  # model TYPE -> path, made on first use
  local t=$1 f="$MODELS/tl-$1.gguf"
  if [ ! -f "$f" ]; then
    case $t in
      q4_k_m) model f16 >/dev/null; "$B" quantize --model "$MODELS/tl-f16.gguf" --output "$f" --type q4_k_m >/dev/null ;;
      *) "$B" synth --shape tinyllama-1.1b --type "$t" -o "$f" >/dev/null ;;
    esac
  fi
  echo "$f"
}

echo "load: $(uptime)" >&2
if [ "$what" = single ] || [ "$what" = all ]; then
  for t in q4_0 q8_0 q4_k_m f16; do
    # As llama-bench's pp512 and tg128: prompt speed over 512 tokens (and
    # decode over the last 64 of 128 tokens after it), then decode of 128
    # tokens from an empty context (a one-token prompt), as tg128 runs.
    "$B" bench -m "$(model $t)" --prompt-tokens 512 -n 128 --window 64 -r "$REPS" --json --no-history | tee -a "$OUT"
    "$B" bench -m "$(model $t)" --prompt-tokens 1 -n 129 --window 128 -r "$REPS" --json --no-history | tee -a "$OUT"
  done
fi
if [ "$what" = curve ] || [ "$what" = all ]; then
  for t in q4_0 q8_0; do
    # Both cache types in one run, so their difference is not host drift.
    "$B" bench -m "$(model $t)" --prompt-tokens 128 -n 128 --window 64 -r "$REPS" --parallel 1,2,4,8,16 --interleave \
      --cache-type-k f16,q8_0 --cache-type-v f16,q8_0 --json --no-history | tee -a "$OUT"
  done
fi
echo "load: $(uptime)" >&2
