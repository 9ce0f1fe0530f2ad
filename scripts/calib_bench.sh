#!/bin/bash
# SPDX-License-Identifier: MIT
# Quality benchmarks of calibrated quantization on the logstories test model
# (docs/calibration.md). Usage: scripts/calib_bench.sh [CHUNK_OPTS]
#   default CHUNK_OPTS "--chunks 200 --spread" (an evenly spaced 20 % sample of
#   logs-heldout); pass "" for the full files (about 2.5x slower per model).
# Long: one model evaluation of 200 chunks takes ~2.5 CPU-minutes; run it alone.
set -euo pipefail
B=${BRISK_BIN:-build/tools/brisk}
S=${BRISK_TEST_DATA:-../shared}
M=$S/models/logstories
H=$S/data/splits/logs-heldout.txt
SH=$S/data/splits/stories-heldout.txt
F32=$M/logstories-f32.gguf
W=${WORK:-/tmp/brisk-calib-bench}
CH=${1---chunks 200 --spread}
mkdir -p "$W"
ppl() { echo "== $1 on $(basename "$2")"; "$B" ppl -m "$1" -f "$2" -c 256 $CH "${@:3}" 2>/dev/null; }

"$B" calibrate -m "$F32" --data "$S/data/splits/logs-calib.txt" -o "$W/logs.calib" --tokens 40960 -c 256
"$B" calibrate -m "$F32" --data "$S/data/splits/stories-calib.txt" -o "$W/stories.calib" -c 256
q() { "$B" quantize -m "$F32" -o "$W/$1.gguf" -q "${@:2}" > "$W/$1.log" 2>&1; ls -l "$W/$1.gguf"; }
q cal-km --type q4_k_m --calibration "$W/logs.calib" --target-size 3558880
q cal-q40size --type q4_k_m --calibration "$W/logs.calib" --target-size 3440608
q cal-km-stories --type q4_k_m --calibration "$W/stories.calib" --target-size 3558880
q cal-mixed --type mixed-4-8 --calibration "$W/logs.calib" --no-report
q cal-auto-mixedsize --type q4_k_m --calibration "$W/logs.calib" --target-size "$(stat -c %s "$W/cal-mixed.gguf")"

ppl "$M/logstories-q4_k_m.gguf" "$H" --base "$F32" --base-cache "$W/logs.base"
for m in logstories-q4_0 ; do ppl "$M/$m.gguf" "$H" --base-cache "$W/logs.base"; done
for m in cal-km cal-q40size cal-km-stories cal-mixed cal-auto-mixedsize; do ppl "$W/$m.gguf" "$H" --base-cache "$W/logs.base"; done
ppl "$M/logstories-q4_k_m.gguf" "$SH" --base "$F32" --base-cache "$W/stories.base"
for m in cal-km cal-km-stories; do ppl "$W/$m.gguf" "$SH" --base-cache "$W/stories.base"; done
