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

    rows = []
    # A run that fails or measures nothing is an error of the benchmark (exit
    # 1), never a skipped row or a perfect prediction.
    failures = []
    models = args.models.split(",") if args.models else MODEL_SETS[args.set]
    for model in models:
        onnx = os.path.join(args.cache, model, "model.onnx")
        if not os.path.exists(onnx):
            run([PYTHON, os.path.join(ROOT, "python", "autopar", "models",
                                      "model_zoo.py"), "--cache", args.cache,
                 "--models", model])
        inputs = os.path.join(args.cache, model, "test_data_set_0")
        for grid in grids:
            out = os.path.join(work, f"{model}-{grid}")
            cluster = clusters[grid]
            threads = device_threads(cluster)
            try:
                run([args.autopar, "compile", onnx, "--grid", grid, "--plan",
                     "auto", "--cluster", cluster, "-o", out], env)
                text = run([args.autopar, "run", out, "--inputs", inputs,
                            "--outputs", os.path.join(out, "outputs"),
                            "--profile"] + threads, env)
            except RuntimeError as error:
                failures.append(f"{model} grid {grid}: {error}")
                print(failures[-1], file=sys.stderr)
                continue
            step, peak = STEP.search(text), PEAK.search(text)
            if not step or not peak:
                failures.append(f"{model} grid {grid}: no profile lines in:\n"
                                f"{text}")
                print(failures[-1], file=sys.stderr)
                continue
            row = dict(model=model, grid=grid,
                       step_predicted=float(step.group(1)),
                       step_measured=float(step.group(2)),
                       peak_predicted=int(peak.group(1)),
                       peak_measured=int(peak.group(2)))
            if row["step_measured"] <= 0 or row["peak_measured"] <= 0:
                failures.append(f"{model} grid {grid}: non-positive "
                                f"measurement {row}")
                print(failures[-1], file=sys.stderr)
                continue
            rows.append(row)
            print(f"{model:14} grid {grid:4} step predicted "
                  f"{row['step_predicted']:.3e} s measured "
                  f"{row['step_measured']:.3e} s ({ape(row, 'step'):+.1f}%)  "
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
    peak_mape = sum(abs(ape(r, "peak")) for r in rows) / len(rows)
    print(f"\n{len(rows)} runs: step time MAPE {step_mape:.1f}%, "
          f"peak memory MAPE {peak_mape:.1f}%")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(clusters=clusters, rows=rows, step_mape=step_mape,
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


def ape(row, what):
    """Signed error of the prediction in percent of the (positive)
    measurement; main() rejects rows with a non-positive measurement."""
    predicted, measured = row[f"{what}_predicted"], row[f"{what}_measured"]
    assert measured > 0, row
    return (predicted - measured) / measured * 100


if __name__ == "__main__":
    sys.exit(main())
