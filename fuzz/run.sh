#!/usr/bin/env bash
#===- fuzz/run.sh - build and run the importer fuzzer ---------------------===#
#
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
#===------------------------------------------------------------------------===#
#
# Builds the libFuzzer target of the ONNX importer (fuzz/CMakeLists.txt, clang
# 14 + AddressSanitizer) into build-fuzz/ (configured once, rebuilt only when
# a source changed), replays the seed corpus fuzz/corpus/, then fuzzes for
# SECONDS (default 60). Inputs that add coverage are kept in
# build-fuzz/corpus/ and fuzzing resumes from them; a crashing, leaking,
# hanging (>10 s) or memory-hungry (>2 GB) input is written to
# build-fuzz/crashes/, and every later run replays it first. Ends with one line `fuzz: N runs, N crashes` and exits
# non-zero when an input crashed (or the build failed).
#
# Usage: fuzz/run.sh [SECONDS]
# Environment: AUTOPAR_FUZZ_BUILD_DIR (default build-fuzz), AUTOPAR_JOBS
# (build parallelism, default 1), AUTOPAR_FUZZ_SEED (default 1),
# AUTOPAR_FUZZ_RUNS (a fixed number of inputs, from the seed corpus only).
#
#===------------------------------------------------------------------------===#
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${AUTOPAR_FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"
JOBS="${AUTOPAR_JOBS:-1}"
TIME="${1:-60}"
if [[ ! "$TIME" =~ ^[0-9]+$ ]] || (($# > 1)); then
  echo "usage: fuzz/run.sh [SECONDS]" >&2
  exit 2
fi

mkdir -p "$BUILD"
# One build at a time (a lit run and a manual run may overlap).
exec 9>"$BUILD/.lock"
flock 9
if [[ ! -f "$BUILD/build.ninja" ]]; then
  CC=clang-14 CXX=clang++-14 cmake -G Ninja -S "$ROOT/fuzz" -B "$BUILD" \
    >"$BUILD/configure.log" 2>&1 || {
    cat "$BUILD/configure.log" >&2
    echo "fuzz: configure failed" >&2
    exit 1
  }
fi
ninja -C "$BUILD" -j "$JOBS" autopar-import-fuzzer >"$BUILD/build.log" 2>&1 || {
  cat "$BUILD/build.log" >&2
  echo "fuzz: build failed" >&2
  exit 1
}
flock -u 9

FUZZER="$BUILD/autopar-import-fuzzer"
mkdir -p "$BUILD/corpus" "$BUILD/crashes" "$BUILD/work"
# Relative external-data locations of fuzzed models resolve in a scratch dir.
cd "$BUILD/work"
# A fixed seed keeps the CI run reproducible (AUTOPAR_FUZZ_SEED overrides;
# check-all passes a fresh one).
common=(-rss_limit_mb=2048 -timeout=10 -max_len=16384
  "-seed=${AUTOPAR_FUZZ_SEED:-1}"
  "-artifact_prefix=$BUILD/crashes/")
log="$BUILD/fuzz.log"
: >"$log"

crashes_before="$(find "$BUILD/crashes" -type f | wc -l)"
status=0
# Inputs that crashed an earlier run are replayed first: a failing run leaves
# its reproducer in build-fuzz/crashes/, and every later run fails on it until
# the importer is fixed (then move it to fuzz/known-crashes/ as a commented
# .onnxtxt and rerun fuzz/make_corpus.py: the seed corpus replays those).
mapfile -t earlier < <(find "$BUILD/crashes" -type f | sort)
if ((${#earlier[@]})); then
  echo "fuzz: replaying ${#earlier[@]} earlier crash(es) from $BUILD/crashes/" >&2
  "$FUZZER" "${common[@]}" "${earlier[@]}" >>"$log" 2>&1 || status=$?
fi
# Replay the seed corpus, then fuzz (new inputs go to build-fuzz/corpus).
if ((status == 0)); then
  "$FUZZER" "${common[@]}" -runs=0 "$ROOT/fuzz/corpus" >>"$log" 2>&1 ||
    status=$?
fi
# With AUTOPAR_FUZZ_RUNS the run is reproducible: that many inputs from the
# seed corpus alone (a fresh working corpus) with the fixed seed, whatever the
# machine's speed; CI uses it.
corpus="$BUILD/corpus"
limit=()
if [[ -n "${AUTOPAR_FUZZ_RUNS:-}" ]]; then
  corpus="$(mktemp -d "$BUILD/corpus-run.XXXXXX")"
  trap 'rm -rf "$corpus"' EXIT
  limit=(-runs="$AUTOPAR_FUZZ_RUNS")
fi
if ((status == 0 && TIME > 0)); then
  "$FUZZER" "${common[@]}" "${limit[@]}" -max_total_time="$TIME" \
    -print_final_stats=1 "$corpus" "$ROOT/fuzz/corpus" >>"$log" 2>&1 ||
    status=$?
fi

runs="$(sed -nE 's/^#([0-9]+)[[:space:]].*/\1/p' "$log" | sort -n | tail -n 1)"
runs=$((${runs:-0}))
executed="$(sed -nE 's/^stat::number_of_executed_units: ([0-9]+)/\1/p' "$log" |
  tail -n 1)"
if [[ -n "$executed" ]] && ((executed > runs)); then runs=$executed; fi
crashes=$(($(find "$BUILD/crashes" -type f | wc -l) - crashes_before))
if ((status != 0)); then
  ((crashes > 0)) || crashes=1
  grep -E -A40 '^==[0-9]+==|ERROR: libFuzzer|Test unit written' "$log" |
    head -n 80 >&2 || true
  echo "fuzz: input(s) in $BUILD/crashes/, full log $log" >&2
fi
echo "fuzz: $runs runs, $crashes crashes"
((status == 0))
