#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs every fuzz target (or the ones named) for SECONDS each under
# ASan+UBSan with libFuzzer. Findings and the grown corpora go to OUT_DIR,
# outside the repository; the committed corpus fuzz/corpus/<target> is read
# as seeds and never written.
#   fuzz/run.sh [-p PARALLEL] [-o OUT_DIR] SECONDS [target...]
# -p: how many targets run at the same time (default 1; each is one process).
# -o: default $BRISK_FUZZ_OUT or /tmp/brisk-fuzz.
# FUZZ_ARGS adds libFuzzer options (later ones win), e.g.
#   FUZZ_ARGS="-max_len=1000000" fuzz/run.sh 60 tokenize
# fuzz_tokenize reads vocabularies from ../shared (BRISK_TEST_DATA, or a list
# in BRISK_FUZZ_VOCABS). fuzz/README.md says what to do with findings.
set -euo pipefail
cd "$(dirname "$0")/.."
parallel=1
out="${BRISK_FUZZ_OUT:-/tmp/brisk-fuzz}"
while getopts "p:o:" opt; do
  case "$opt" in
    p) parallel="$OPTARG" ;;
    o) out="$OPTARG" ;;
    *) echo "usage: fuzz/run.sh [-p PARALLEL] [-o OUT_DIR] SECONDS [target...]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
secs="${1:-180}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=($(ls fuzz/corpus))
fi
build="${BRISK_FUZZ_BUILD:-build-fuzz}"
if [ ! -f "$build/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DBRISK_FUZZ=ON -DBRISK_BUILD_TESTS=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
ninja -C "$build" $(printf 'fuzz_%s ' "${targets[@]}")
export BRISK_TEST_DATA="${BRISK_TEST_DATA:-$(cd .. && pwd)/shared}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

run_one() {
  local t="$1"
  mkdir -p "$out/corpus/$t" "$out/artifacts/$t"
  "$build/fuzz/fuzz_$t" "$out/corpus/$t" "fuzz/corpus/$t" -max_total_time="$secs" -rss_limit_mb=2048 \
    -timeout=10 -max_len=65536 -artifact_prefix="$out/artifacts/$t/" -print_final_stats=1 ${FUZZ_ARGS:-} \
    >"$out/$t.log" 2>&1 || true
  local found
  found=$(ls "$out/artifacts/$t" | wc -l)
  echo "== fuzz_$t: $(grep -E '^stat::number_of_executed_units' "$out/$t.log" | awk '{print $2}') runs," \
    "$(ls "$out/corpus/$t" | wc -l) corpus files, $found findings (log: $out/$t.log)"
}
export -f run_one
export build out secs
printf '%s\n' "${targets[@]}" | xargs -P "$parallel" -I{} bash -c 'run_one {}'
echo "findings (crash-*, leak-*, timeout-*, oom-*):"
find "$out/artifacts" -type f | sort || true
