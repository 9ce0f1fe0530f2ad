#!/usr/bin/env bash
# Builds the fuzz targets (clang, ASan+UBSan+libFuzzer), makes seed corpora
# and runs each target for SECONDS (default 180), one at a time.
#   fuzz/run.sh [SECONDS] [target...]
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-180}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(gguf safetensors hf_config tokenizer_json bundle)
build=build-fuzz
if [ ! -f "$build/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DBRISK_FUZZ=ON -DBRISK_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
# Only the fuzz targets: with clang, libbrisk.so does not link under ASan
# (-Wl,--no-undefined and no sanitizer runtime in shared libraries), so the
# seeds are made with the regular build's brisk.
ninja -C "$build" -j2 $(printf 'fuzz_%s ' "${targets[@]}")
shared="${BRISK_TEST_DATA:-$(cd .. && pwd)/shared}"
cli="${BRISK_BIN:-build/tools/brisk}"
[ -x "$cli" ] || { echo "fuzz/run.sh: build brisk first (scripts/build.sh) or set BRISK_BIN" >&2; exit 1; }
[ -d "$build/seeds" ] || python3 fuzz/make_seeds.py "$build/seeds" "$cli" "$shared"
for t in "${targets[@]}"; do
  corpus="$build/corpus/$t"
  mkdir -p "$corpus" "$build/artifacts/$t"
  echo "== fuzz_$t for ${secs}s"
  "$build/fuzz/fuzz_$t" "$corpus" "$build/seeds/$t" -max_total_time="$secs" -max_len=65536 -rss_limit_mb=2048 \
    -timeout=10 -artifact_prefix="$build/artifacts/$t/" -print_final_stats=1 2>&1 | tail -n 12
done
