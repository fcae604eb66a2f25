#!/usr/bin/env python3
# ===- plan_gpt.py - autopar plan on GPT-shaped models ---------------------=== #
#
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===---------------------------------------------------------------------=== #
"""Benchmarks `autopar plan` on GPT decoders and an A100-like cluster.

Generates shape-only GPT models (python/autopar/models/gpt_decoder.py: every
weight is external data in a file that does not exist, so the models are
small and need no weight data) and runs, for each case and mode,

    autopar plan MODEL --grid G --cluster C --mode M -o plan.json

then prints, from plan.json: the search time, the chosen plan's predicted
step time, compute and communication time and peak memory, each baseline's
(replicated, data, tensor) step time and whether it fits in device memory,
and the ratio of the chosen plan's step time to the best baseline that fits.

Cases:
    small  4 layers, H=1024, 16 heads, S=1024, B=8, grid 2x4, a100-2x4.json
    gpt3   GPT-3 175B: 96 layers, H=12288, 96 heads, S=2048, B=1536,
           last-token logits, grid 128x8, a100.json
    gpt3-b64  the same at B=64

    /usr/bin/python3 bench/plan_gpt.py                       # every case
    /usr/bin/python3 bench/plan_gpt.py --cases small --modes inference
    /usr/bin/python3 bench/plan_gpt.py --json results.json --work /tmp/bench

Exit code: 0 when every run succeeded, 1 when one failed, 2 when autopar (or
its `plan` subcommand) is missing.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python", "autopar", "models"))

import gpt_decoder  # noqa: E402

CASES = {
    "small": dict(layers=4, hidden=1024, heads=16, seq=1024, batch=8,
                  grid="2x4", cluster="a100-2x4.json"),
    # Next-token inference: the model returns the last position's logits
    # (a [B, S, H] output replicated on every device alone would be 155 GB).
    "gpt3": dict(layers=96, hidden=12288, heads=96, seq=2048, batch=1536,
                 grid="128x8", cluster="a100.json", vocab=50257,
                 last_token=True),
    # The largest power-of-two batch whose training step fits in 80 GB
    # without recomputation.
    "gpt3-b64": dict(layers=96, hidden=12288, heads=96, seq=2048, batch=64,
                     grid="128x8", cluster="a100.json", vocab=50257,
                     last_token=True),
}
MODES = ("inference", "training")
NO_FIT = re.compile(r"no plan fits in \d+ bytes per device[^\n]*")
BASELINES = ("replicated", "data", "tensor")


class BenchError(Exception):
    """A failure that ends the benchmark with a message."""


def find_autopar(path):
    candidates = [path] if path else [
        os.environ.get("AUTOPAR"),
        os.path.join(ROOT, "build", "bin", "autopar"),
        shutil.which("autopar"),
    ]
    for candidate in candidates:
        if candidate and os.path.isfile(candidate) and os.access(
                candidate, os.X_OK):
            return candidate
    raise BenchError(
        "autopar not found" + (f" at '{path}'" if path else
                               " (build it with scripts/setup.sh, or pass "
                               "--autopar PATH or set AUTOPAR)"))


def check_plan_command(autopar):
    """Fails with a clear message when `autopar plan` does not exist."""
    result = subprocess.run([autopar, "plan", "--help"], capture_output=True,
                            text=True)
    output = result.stdout + result.stderr
    if result.returncode != 0 or "unknown subcommand" in output:
        raise BenchError(
            f"'{autopar}' has no 'plan' subcommand (autopar plan comes with "
            f"automatic planning, issue 5; rebuild autopar once it is "
            f"merged): {output.strip().splitlines()[0] if output.strip() else 'no output'}")


def generate(case, directory):
    spec = CASES[case]
    cfg = gpt_decoder.GptConfig(spec["layers"], spec["hidden"], spec["heads"],
                                spec["seq"], spec["batch"],
                                vocab=spec.get("vocab"),
                                last_token=spec.get("last_token", False))
    path = os.path.join(directory, f"{case}.onnx")
    start = time.perf_counter()
    model, _ = gpt_decoder.build_model(cfg, shape_only=True)
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    return path, cfg, time.perf_counter() - start


def run_plan(autopar, model, grid, cluster, mode, out, timeout):
    command = [autopar, "plan", model, "--grid", grid, "--cluster", cluster,
               "--mode", mode, "-o", out]
    start = time.perf_counter()
    try:
        result = subprocess.run(command, capture_output=True, text=True,
                                timeout=timeout)
    except subprocess.TimeoutExpired:
        raise BenchError(f"timed out after {timeout} s: {' '.join(command)}")
    wall = time.perf_counter() - start
    if result.returncode != 0:
        raise BenchError(f"failed (exit {result.returncode}): "
                         f"{' '.join(command)}\n{result.stderr.strip()}")
    try:
        with open(out) as f:
            plan = json.load(f)
    except (OSError, ValueError) as e:
        raise BenchError(f"cannot read '{out}': {e}")
    return plan, wall


def require(plan, *keys):
    value = plan
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            raise BenchError("plan.json has no '" + ".".join(keys) + "'")
        value = value[key]
    return value


def summarize(plan):
    """The numbers of one plan.json (see docs/plan-format.md)."""
    predicted = require(plan, "predicted")
    summary = {
        "search_time_s": require(plan, "search_time_s"),
        "step_time_s": require(predicted, "step_time_s"),
        "compute_s": require(predicted, "compute_s"),
        "comm_s": require(predicted, "comm_s"),
        "peak_memory_bytes": require(predicted, "peak_memory_bytes"),
        "baselines": {},
    }
    for name, baseline in require(plan, "baselines").items():
        if not baseline.get("valid", True):
            summary["baselines"][name] = {"valid": False, "fits": False,
                                          "reason": baseline.get("reason")}
            continue
        summary["baselines"][name] = {
            key: require(baseline, key)
            for key in ("step_time_s", "compute_s", "comm_s",
                        "peak_memory_bytes", "fits")}
    fitting = {name: b["step_time_s"]
               for name, b in summary["baselines"].items() if b["fits"]}
    if fitting:
        best = min(fitting, key=fitting.get)
        summary["best_baseline"] = best
        summary["ratio"] = (summary["step_time_s"] / fitting[best]
                            if fitting[best] > 0 else None)
    else:
        summary["best_baseline"] = None
        summary["ratio"] = None
    return summary


def gib(n):
    return f"{n / 2**30:.2f} GiB"


def report(case, mode, cfg, grid, wall, summary):
    print(f"== {case}: {cfg.layers} layers, H={cfg.hidden}, {cfg.heads} "
          f"heads, S={cfg.seq}, B={cfg.batch}, grid {grid}, mode {mode}")
    print(f"  search_time_s      {summary['search_time_s']:.3f} "
          f"(autopar plan wall time {wall:.2f} s)")
    print(f"  chosen             step_time_s={summary['step_time_s']:.4g} "
          f"compute_s={summary['compute_s']:.4g} "
          f"comm_s={summary['comm_s']:.4g} "
          f"peak_memory_bytes={summary['peak_memory_bytes']:.4g} "
          f"({gib(summary['peak_memory_bytes'])})")
    for name in list(BASELINES) + sorted(
            set(summary["baselines"]) - set(BASELINES)):
        b = summary["baselines"].get(name)
        if b is None:
            continue
        if not b.get("valid", True):
            print(f"  baseline {name:<10} cannot run here: {b['reason']}")
            continue
        print(f"  baseline {name:<10} step_time_s={b['step_time_s']:.4g} "
              f"compute_s={b['compute_s']:.4g} comm_s={b['comm_s']:.4g} "
              f"peak_memory_bytes={b['peak_memory_bytes']:.4g} "
              f"({gib(b['peak_memory_bytes'])}) "
              f"fits={'yes' if b['fits'] else 'no'}")
    if summary["best_baseline"] is None:
        print("  chosen/best-fitting-baseline: n/a (no baseline fits)")
    elif summary["ratio"] is None:
        print(f"  chosen/best-fitting-baseline: n/a ("
              f"{summary['best_baseline']} has step time 0)")
    else:
        print(f"  chosen/best-fitting-baseline ({summary['best_baseline']}): "
              f"{summary['ratio']:.3f}")
    sys.stdout.flush()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--autopar", help="the autopar binary (default: "
                        "$AUTOPAR, build/bin/autopar, or autopar on PATH)")
    parser.add_argument("--cases", default="small,gpt3,gpt3-b64",
                        help="comma-separated: " + ", ".join(CASES))
    parser.add_argument("--modes", default=",".join(MODES),
                        help="comma-separated: " + ", ".join(MODES))
    parser.add_argument("--work", help="directory for models and plans "
                        "(default: a temporary directory, removed)")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--timeout", type=float, default=1800,
                        help="seconds per autopar plan run (default 1800)")
    args = parser.parse_args(argv)
    cases = [c for c in args.cases.split(",") if c]
    modes = [m for m in args.modes.split(",") if m]
    for case in cases:
        if case not in CASES:
            parser.error(f"unknown case '{case}' (expected "
                         f"{', '.join(CASES)})")
    for mode in modes:
        if mode not in MODES:
            parser.error(f"unknown mode '{mode}' (expected "
                         f"{', '.join(MODES)})")

    try:
        autopar = find_autopar(args.autopar)
        check_plan_command(autopar)
    except BenchError as e:
        print(f"plan_gpt.py: error: {e}", file=sys.stderr)
        return 2

    work = args.work or tempfile.mkdtemp(prefix="autopar-bench-")
    os.makedirs(work, exist_ok=True)
    results, failed = [], False
    try:
        for case in cases:
            model, cfg, gen_time = generate(case, work)
            grid = CASES[case]["grid"]
            cluster = os.path.join(ROOT, "bench", "clusters",
                                   CASES[case]["cluster"])
            print(f"generated {model} in {gen_time:.2f} s "
                  f"({cfg.num_parameters() / 1e9:.2f}e9 parameters, "
                  f"{os.path.getsize(model)} bytes)")
            for mode in modes:
                out = os.path.join(work, f"{case}-{mode}.plan.json")
                try:
                    plan, wall = run_plan(autopar, model, grid, cluster, mode,
                                          out, args.timeout)
                    summary = summarize(plan)
                except BenchError as e:
                    # "No plan fits" is an answer (with the smallest peak any
                    # plan reaches), not a failure of the benchmark.
                    match = NO_FIT.search(str(e))
                    if match:
                        print(f"== {case}: {cfg.layers} layers, "
                              f"H={cfg.hidden}, grid {grid}, mode {mode}\n"
                              f"  no plan fits: {match.group(0)}")
                        results.append(dict(case=case, mode=mode, grid=grid,
                                            cluster=CASES[case]["cluster"],
                                            fits=False,
                                            message=match.group(0)))
                        continue
                    print(f"== {case} ({mode}): error: {e}", file=sys.stderr)
                    failed = True
                    continue
                report(case, mode, cfg, grid, wall, summary)
                results.append(dict(case=case, mode=mode, grid=grid,
                                    cluster=CASES[case]["cluster"],
                                    wall_s=wall, **summary))
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
