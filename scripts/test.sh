#!/usr/bin/env bash
#===- test.sh - build autopar and run every test tier ----------------------===#
#
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
#===------------------------------------------------------------------------===#
#
# Builds autopar (scripts/setup.sh) and runs every test tier:
#   regression  lit tests of the dialect, importer, passes, runtime (test/)
#   unit        Catch2 unit tests and MPI tests, through ctest
#   end-to-end  lit tests of the `autopar` tool (test/Driver): verify on 1, 2,
#               4 and 2x2 grids for every plan, reference outputs, errors, the
#               model zoo's CI representatives (with --all: the whole zoo,
#               real-models-zoo-all.test, hours on 2 cores)
#   python      pytest tests of the `autopar` Python package (test/Python),
#               imported from the build tree; a skipped test is a failure
#   sweep       (--all only) `autopar verify` of the bundled MLP on more grids
#               and seeds, every float32 ONNX backend node test, and the
#               randomized differential test of the partitioner for 5 minutes
#               (seed AUTOPAR_RANDOM_SEED, default 0): the check-all tier
# and ends with one line `N passed, N failed` that totals every tier. Exits
# non-zero when a test failed or when no test ran.
#
# Usage: scripts/test.sh [--all]
#
#===------------------------------------------------------------------------===#
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${AUTOPAR_BUILD_DIR:-$ROOT/build}"
JOBS="${AUTOPAR_JOBS:-2}"
LIT=/usr/lib/llvm-22/bin/lit
PYTHON=/usr/bin/python3

all=0
for arg in "$@"; do
  case "$arg" in
    --all) all=1 ;;
    -h|--help) sed -n '/^# Builds/,/^# Usage/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test.sh: error: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done

"$ROOT/scripts/setup.sh"

total_passed=0
total_failed=0
RESULTS="$(mktemp -d)"
trap 'rm -rf "$RESULTS"' EXIT

# tally NAME PASSED FAILED [SKIPPED]
tally() {
  total_passed=$((total_passed + $2))
  total_failed=$((total_failed + $3))
  echo "tier $1: passed=$2 failed=$3 skipped=${4:-0}"
}

# run_lit NAME LIT-ARGS...: runs lit on the build's test suite and counts the
# results from its JSON report.
run_lit() {
  local name="$1"
  shift
  local report="$RESULTS/$name.json"
  echo "== lit ($name)"
  "$LIT" -sv -j "$JOBS" -o "$report" "$@" "$BUILD_DIR/test" || true
  if [[ ! -s "$report" ]]; then
    echo "test.sh: lit ($name) wrote no report" >&2
    tally "$name" 0 1
    return
  fi
  local counts
  counts="$("$PYTHON" - "$report" "$ROOT/test" "$all" <<'PY'
import json, os, re, sys
report, test_root, check_all = sys.argv[1], sys.argv[2], sys.argv[3] == "1"

# Features of the host CPU, which no package installs: a test that needs
# one (REQUIRES) or runs only without it (UNSUPPORTED) is skipped, not failed,
# on the other kind of machine.
HOST_FEATURES = {"amx"}

def requirements(name, keyword="REQUIRES"):
    """The features a test names in its `keyword:` lines."""
    path = os.path.join(test_root, name.split(" :: ", 1)[-1])
    features = set()
    try:
        for line in open(path, errors="replace"):
            m = re.search(keyword + r":(.*)", line)
            if m:
                features.update(f.strip() for f in m.group(1).split(","))
    except OSError:
        pass
    return features

passed = failed = skipped = 0
for test in json.load(open(report)).get("tests", []):
    code = test.get("code")
    if code in ("PASS", "FLAKYPASS", "XFAIL"):
        passed += 1
    elif code == "UNSUPPORTED":
        # Only the check-all tests may be left out (outside --all); any other
        # unsupported test lacks a dependency setup.sh installs: a failure.
        features = requirements(test["name"])
        host = (features | requirements(test["name"], "UNSUPPORTED")) \
            & HOST_FEATURES
        if not check_all and "check-all" in features:
            skipped += 1
        elif host:
            skipped += 1
            print("test.sh: skipped on this CPU (%s): %s"
                  % (" ".join(sorted(host)), test["name"]), file=sys.stderr)
        else:
            failed += 1
            print("test.sh: unsupported (missing dependency: %s): %s"
                  % (" ".join(sorted(features)) or "?", test["name"]),
                  file=sys.stderr)
    elif code in ("SKIPPED", "EXCLUDED"):
        skipped += 1
    else:
        failed += 1
if passed + failed == 0:
    print("test.sh: the tier ran no test", file=sys.stderr)
    failed = 1
print(passed, failed, skipped)
PY
)"
  # shellcheck disable=SC2086
  tally "$name" $counts
}

# Regression tests: every lit test outside test/Driver.
run_lit regression --filter-out '(^|/| )Driver/'

# Unit and MPI tests through ctest.
echo "== ctest (unit)"
ctest_log="$RESULTS/ctest.log"
(cd "$BUILD_DIR" && ctest --output-on-failure -j "$JOBS") 2>&1 |
  tee "$ctest_log" || true
summary="$(grep -E '[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' \
  "$ctest_log" | tail -n 1 || true)"
if [[ -n "$summary" ]]; then
  ctest_failed="$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' \
    <<<"$summary")"
  ctest_total="$(sed -E 's/.* failed out of ([0-9]+).*/\1/' <<<"$summary")"
  tally unit $((ctest_total - ctest_failed)) "$ctest_failed"
elif grep -q "No tests were found" "$ctest_log"; then
  echo "test.sh: ctest found no unit tests" >&2
  tally unit 0 1
else
  echo "test.sh: ctest printed no summary" >&2
  tally unit 0 1
fi

# End-to-end tests of the autopar tool (with --all, also the check-all lit
# tests: the real-model matrix).
lit_params=()
if ((all)); then
  lit_params=(--param check_all=1)
fi
run_lit end-to-end --filter '(^|/| )Driver/' "${lit_params[@]}"

# The Python package from the build tree (build/python_packages), under
# Debian's interpreter. A skipped test lacks a dependency setup.sh installs.
echo "== pytest (python)"
pytest_report="$RESULTS/pytest.xml"
PYTHONPATH="$BUILD_DIR/python_packages${PYTHONPATH:+:$PYTHONPATH}" \
  "$PYTHON" -m pytest -v -rs -p no:cacheprovider --junitxml="$pytest_report" \
  "$ROOT/test/Python" || true
if [[ -s "$pytest_report" ]]; then
  # shellcheck disable=SC2046
  tally python $("$PYTHON" - "$pytest_report" <<'PY'
import sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
suites = [root] if root.tag == "testsuite" else list(root)
total = sum(int(s.get("tests", 0)) for s in suites)
bad = sum(int(s.get(k, 0)) for s in suites
          for k in ("failures", "errors", "skipped"))
if total == 0:
    print("test.sh: pytest ran no test", file=sys.stderr)
    bad = 1
print(total - bad if total else 0, bad)
PY
)
else
  echo "test.sh: pytest wrote no report" >&2
  tally python 0 1
fi

# The check-all tier: more grids, plans and seeds.
if ((all)); then
  echo "== sweep (check-all)"
  sweep_passed=0
  sweep_failed=0
  for grid in 1 2 4 8 2x2 2x4 4x2; do
    for plan in replicated data tensor; do
      for seed in 0 1; do
        log="$RESULTS/verify-$grid-$plan-$seed.log"
        if "$BUILD_DIR/bin/autopar" verify "$ROOT/examples/mlp/model.onnx" \
            --grid "$grid" --plan "$plan" --seed "$seed" >"$log" 2>&1; then
          sweep_passed=$((sweep_passed + 1))
          echo "PASS: verify --grid $grid --plan $plan --seed $seed: $(tail -n 1 "$log")"
        else
          sweep_failed=$((sweep_failed + 1))
          echo "FAIL: verify --grid $grid --plan $plan --seed $seed"
          sed 's/^/  /' "$log"
        fi
      done
    done
  done
  tally sweep "$sweep_passed" "$sweep_failed"

  # The randomized differential test of the partitioner for 5 minutes; failing
  # cases are kept in $BUILD_DIR/random-partition-failures.
  echo "== random partition (check-all)"
  random_log="$RESULTS/random-partition.log"
  "$PYTHON" "$ROOT/python/autopar/testing/random_partition.py" \
    --autopar "$BUILD_DIR/bin/autopar" --seed "${AUTOPAR_RANDOM_SEED:-0}" \
    --time-budget 300 --out "$BUILD_DIR/random-partition-failures" |
    tee "$random_log" || true
  summary="$(grep -E '^random-partition: [0-9]+ cases' "$random_log" || true)"
  if [[ -n "$summary" ]]; then
    tally random-partition \
      "$(sed -E 's/.* ([0-9]+) passed.*/\1/' <<<"$summary")" \
      "$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$summary")"
  else
    echo "test.sh: random_partition.py printed no summary" >&2
    tally random-partition 0 1
  fi

  # Every float32 ONNX backend node test (docs/onnx-node-tests.md).
  echo "== onnx node tests (check-all)"
  if "$PYTHON" "$ROOT/python/autopar/testing/onnx_node_tests.py" --quiet \
      --autopar "$BUILD_DIR/bin/autopar" --jobs "$JOBS" --expected-failures \
      "$ROOT/test/Driver/Inputs/onnx-node-expected-failures.txt"; then
    tally onnx-node 1 0
  else
    tally onnx-node 0 1
  fi

  # The importer fuzzer (fuzz/run.sh, needs clang-14 and libclang-rt-14-dev)
  # for 10 minutes; crashing inputs are kept in build-fuzz/crashes/.
  fuzz_seed="${AUTOPAR_FUZZ_SEED:-$RANDOM}"
  echo "== import fuzzer (check-all, seed $fuzz_seed)"
  if AUTOPAR_FUZZ_SEED="$fuzz_seed" "$ROOT/fuzz/run.sh" 600; then
    tally import-fuzz 1 0
  else
    tally import-fuzz 0 1
  fi
fi

echo "$total_passed passed, $total_failed failed"
if ((total_failed > 0 || total_passed == 0)); then
  exit 1
fi
