#!/usr/bin/env bash
# Builds the fuzz targets (clang, ASan+UBSan+libFuzzer), makes seed corpora
# and runs each target for SECONDS (default 180), one at a time.
#   fuzz/run.sh [SECONDS] [target...]
# FUZZ_ARGS adds libFuzzer options (later ones win), e.g.
#   FUZZ_ARGS="-max_len=1000000" fuzz/run.sh 60 tokenize
# fuzz_tokenize reads vocabularies from ../shared (BRISK_TEST_DATA, or a list
# in BRISK_FUZZ_VOCABS); its seeds are made in a temporary directory.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-180}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(gguf safetensors hf_config tokenizer_json bundle tokenize)
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
if [[ " ${targets[*]} " != " tokenize " ]]; then
  [ -x "$cli" ] || { echo "fuzz/run.sh: build brisk first (scripts/build.sh) or set BRISK_BIN" >&2; exit 1; }
  [ -d "$build/seeds" ] || python3 fuzz/make_seeds.py "$build/seeds" "$cli" "$shared"
fi
tmp_seeds=$(mktemp -d)
trap 'rm -rf "$tmp_seeds"' EXIT
# fuzz_tokenize: byte 0 picks the vocabulary and flags, the rest is text:
# the llama.cpp vocab test strings and some wikitext lines.
python3 - "$tmp_seeds" "$shared" <<'EOF'
import glob, os, sys
out, shared = sys.argv[1], sys.argv[2]
texts = set()
for inp in glob.glob(os.path.join(shared, "models", "*vocab-tests", "*.inp")):
    texts.update(open(inp, "rb").read().split(b"\n__ggml_vocab_test__\n")[:-1])
wiki = os.path.join(shared, "data", "wikitext-2-raw-test.txt")
if os.path.exists(wiki):
    texts.update([l for l in open(wiki, "rb").read().split(b"\n") if l.strip()][:40])
for i, t in enumerate(sorted(texts)):
    for v in range(8):
        with open(os.path.join(out, "seed-%d-%d" % (i, v)), "wb") as f:
            f.write(bytes([v | (i % 4) << 4]) + t)
EOF
for t in "${targets[@]}"; do
  corpus="$build/corpus/$t"
  seeds="$build/seeds/$t"
  [ "$t" = tokenize ] && seeds="$tmp_seeds"
  mkdir -p "$corpus" "$build/artifacts/$t"
  echo "== fuzz_$t for ${secs}s"
  "$build/fuzz/fuzz_$t" "$corpus" "$seeds" -max_total_time="$secs" -max_len=65536 -rss_limit_mb=2048 \
    -timeout=10 -artifact_prefix="$build/artifacts/$t/" -print_final_stats=1 ${FUZZ_ARGS:-} 2>&1 | tail -n 12
done
