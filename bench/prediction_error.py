#!/usr/bin/env python3
# ===- prediction_error.py - predicted versus measured step time ----------=== #
#
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===---------------------------------------------------------------------=== #
"""Measures the cost model's prediction error on this machine.

For every model of the model set (python/autopar/models/model_zoo.py, exported
into the cache when missing) and every grid, compiles the model with the
planner (`autopar compile --plan auto --cluster C`), runs it with
`autopar run --profile` (median of 3 runs, file I/O excluded) and reads the
predicted and measured step time and peak memory it prints. Prints one row
per run and the mean absolute percentage error (MAPE) of each.

Every model is compiled first, then run in `--rounds` rounds (default 5),
each round one `autopar run` of every model in turn, and a model's measured
step is its fastest round: a shared VM runs in modes minutes apart (the same
program 1.4x slower in one), and `autopar calibrate` keeps each micro model's
fastest round the same way, so prediction and measurement describe the same
mode. Each row also prints the slowest round, and the MAPE against each
model's median round is printed too.

    /usr/bin/python3 bench/prediction_error.py --calibrate   # calibrate first
    /usr/bin/python3 bench/prediction_error.py --cluster cluster.json
    /usr/bin/python3 bench/prediction_error.py --calibrate --set bench --grids 1

With `--calibrate` (or no `--cluster`), each grid's runs are predicted with
a description of this machine as that many devices (`autopar calibrate
--grid G`, one per grid, into the work directory), and run with the threads
one device of it has (cores / G): a device's rates depend on what the other
ranks do meanwhile (a rank alone on the machine has its memory bandwidth
and shared cache to itself), so each run is predicted from measurements
taken in its own conditions. With `--cluster`, every grid is predicted from
that one description. The description should be this machine's; a reported
figure, not a test.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The model sets: `small`, the test-sized models (steps of microseconds to a
# few milliseconds, where fixed costs per op and per step dominate), and
# `bench`, the published-size models of bench/kernels.py's model table
# (steps of 5 to 300 ms; the MLP of that table is not a zoo model).
MODEL_SETS = {
    "small": ("mlp", "gpt2_block", "tiny_gpt", "resnet18", "mobilenet_v2",
              "vit"),
    "bench": ("gpt2_124m", "resnet18_224", "mobilenet_v2_224", "vit_s16_224"),
}
PYTHON = "/usr/bin/python3"

STEP = re.compile(r"profile: step time\s+predicted (\S+) s\s+measured (\S+) s")
PEAK = re.compile(r"profile: peak memory predicted (\d+) bytes\s+measured "
                  r"(-?\d+) bytes")


def run(cmd, env=None):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr}{proc.stdout}")
    return proc.stdout + proc.stderr


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--autopar", default=os.path.join(ROOT, "build", "bin",
                                                          "autopar"))
    parser.add_argument("--cluster", help="one cluster description of this "
                        "machine for every grid (default: calibrate each grid "
                        "into the work directory)")
    parser.add_argument("--calibrate", action="store_true",
                        help="run `autopar calibrate --grid G` for each grid "
                        "first (overrides --cluster)")
    parser.add_argument("--set", choices=sorted(MODEL_SETS), default="small",
                        help="the model set (default: small)")
    parser.add_argument("--models", help="comma-separated zoo models "
                        "(replaces --set)")
    parser.add_argument("--grids", default="1,2")
    parser.add_argument("--cache", default=os.path.join(ROOT, "build", "models"))
    parser.add_argument("--work", help="keep compiled models here")
    parser.add_argument("--rounds", type=int, default=5,
                        help="runs of every model, in turn; the fastest "
                        "counts (default 5)")
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args()

    work = args.work or tempfile.mkdtemp(prefix="autopar-prediction-")
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    grids = args.grids.split(",")
    clusters = {}
    for grid in grids:
        if args.cluster and not args.calibrate:
            clusters[grid] = args.cluster
            continue
        clusters[grid] = os.path.join(work, f"cluster-{grid}.json")
        print(f"calibrating grid {grid} into {clusters[grid]} ...", flush=True)
        run([args.autopar, "calibrate", "--grid", grid, "-o", clusters[grid]],
            env)

    if args.rounds < 1:
        print(f"--rounds must be at least 1, got {args.rounds}",
              file=sys.stderr)
        return 1
    # A run that fails or measures nothing is an error of the benchmark (exit
    # 1), never a skipped row or a perfect prediction.
    failures = []
    models = args.models.split(",") if args.models else MODEL_SETS[args.set]
    jobs = []
    for model in models:
        onnx = os.path.join(args.cache, model, "model.onnx")
        if not os.path.exists(onnx):
            run([PYTHON, os.path.join(ROOT, "python", "autopar", "models",
                                      "model_zoo.py"), "--cache", args.cache,
                 "--models", model])
        inputs = os.path.join(args.cache, model, "test_data_set_0")
        for grid in grids:
            out = os.path.join(work, f"{model}-{grid}")
            try:
                run([args.autopar, "compile", onnx, "--grid", grid, "--plan",
                     "auto", "--cluster", clusters[grid], "-o", out], env)
            except RuntimeError as error:
                failures.append(f"{model} grid {grid}: {error}")
                print(failures[-1], file=sys.stderr)
                continue
            jobs.append(dict(model=model, grid=grid, out=out, inputs=inputs,
                             threads=device_threads(clusters[grid]),
                             runs=[]))
    for round_index in range(args.rounds):
        print(f"round {round_index + 1} of {args.rounds} ...", flush=True)
        for job in list(jobs):
            try:
                text = run([args.autopar, "run", job["out"], "--inputs",
                            job["inputs"], "--outputs",
                            os.path.join(job["out"], "outputs"), "--profile"]
                           + job["threads"], env)
            except RuntimeError as error:
                failures.append(f"{job['model']} grid {job['grid']}: {error}")
                print(failures[-1], file=sys.stderr)
                jobs.remove(job)
                continue
            step, peak = STEP.search(text), PEAK.search(text)
            if not step or not peak:
                failures.append(f"{job['model']} grid {job['grid']}: no "
                                f"profile lines in:\n{text}")
                print(failures[-1], file=sys.stderr)
                jobs.remove(job)
                continue
            measured = (float(step.group(2)), int(peak.group(2)))
            if measured[0] <= 0 or measured[1] <= 0:
                failures.append(f"{job['model']} grid {job['grid']}: "
                                f"non-positive measurement {measured}")
                print(failures[-1], file=sys.stderr)
                jobs.remove(job)
                continue
            job["runs"].append(dict(step_predicted=float(step.group(1)),
                                    step_measured=measured[0],
                                    peak_predicted=int(peak.group(1)),
                                    peak_measured=measured[1]))
    rows = []
    for job in jobs:
        runs = job["runs"]
        steps = sorted(r["step_measured"] for r in runs)
        fastest = min(runs, key=lambda r: r["step_measured"])
        row = dict(model=job["model"], grid=job["grid"],
                   step_predicted=fastest["step_predicted"],
                   step_measured=fastest["step_measured"],
                   step_measured_median=steps[len(steps) // 2],
                   step_measured_rounds=[r["step_measured"] for r in runs],
                   peak_predicted=fastest["peak_predicted"],
                   peak_measured=max(r["peak_measured"] for r in runs))
        rows.append(row)
        print(f"{row['model']:16} grid {row['grid']:4} step predicted "
              f"{row['step_predicted']:.3e} s measured "
              f"{row['step_measured']:.3e} s ({ape(row, 'step'):+.1f}%; "
              f"slowest round {steps[-1]:.3e} s)  "
              f"peak predicted {row['peak_predicted']} B measured "
              f"{row['peak_measured']} B ({ape(row, 'peak'):+.1f}%)",
              flush=True)
    if not rows:
        print("no run succeeded", file=sys.stderr)
        return 1
    if failures:
        print(f"{len(failures)} of {len(failures) + len(rows)} runs failed: "
              "no error figure is printed for an incomplete set",
              file=sys.stderr)
        return 1
    step_mape = sum(abs(ape(r, "step")) for r in rows) / len(rows)
    median_mape = sum(abs(ape(r, "step", "step_measured_median"))
                      for r in rows) / len(rows)
    peak_mape = sum(abs(ape(r, "peak")) for r in rows) / len(rows)
    print(f"\n{len(rows)} runs, {args.rounds} rounds: step time MAPE "
          f"{step_mape:.1f}% (fastest round; {median_mape:.1f}% against the "
          f"median round), peak memory MAPE {peak_mape:.1f}%")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(clusters=clusters, rounds=args.rounds, rows=rows,
                           step_mape=step_mape,
                           step_mape_median_round=median_mape,
                           peak_mape=peak_mape), f, indent=2)
    return 0


def device_threads(cluster):
    """`--threads N` for `autopar run`: the cores of one device of the
    calibrated grid (cores / devices, as `autopar calibrate` measured them),
    so that a run on fewer devices than the grid does not give each device
    more cores than its rates were measured with. Empty for a description
    without a `calibration` record."""
    with open(cluster) as f:
        record = json.load(f).get("calibration")
    if not record:
        return []
    devices = 1
    for size in str(record["grid"]).split("x"):
        devices *= int(size)
    return ["--threads", str(max(1, int(record["cores"]) // devices))]


def ape(row, what, measured_key=None):
    """Signed error of the prediction in percent of the (positive)
    measurement (`measured_key`, default `<what>_measured`); main() rejects
    rows with a non-positive measurement."""
    predicted = row[f"{what}_predicted"]
    measured = row[measured_key or f"{what}_measured"]
    assert measured > 0, row
    return (predicted - measured) / measured * 100


if __name__ == "__main__":
    sys.exit(main())
