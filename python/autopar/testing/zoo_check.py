#!/usr/bin/env python3
# ===- zoo_check.py - the model zoo against PyTorch, partitioned ----------=== #
#
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===---------------------------------------------------------------------=== #
"""Checks the model zoo: PyTorch's outputs at grid 1, partitioned runs.

For every model of the zoo (python/autopar/models/model_zoo.py, ZOO) it
exports the model (cached in --cache), then runs

    autopar verify MODEL --grid 1 --inputs DATA --atol 1e-4 --rtol 1e-3

which compares the single-device run with PyTorch's own outputs, and the
partitioned configurations (default: the data and auto plans on 2 and 2x2
devices), each compared with the single-device run and, again, with
PyTorch's outputs (verify's `partitioned_reference` lines; both of its
programs are held to the tolerance against PyTorch). It prints one row per
model (parameters, ONNX ops, the largest error of any program against
PyTorch, the result of every configuration) and exits with 1 when any run
fails (2 on bad usage).

    /usr/bin/python3 python/autopar/testing/zoo_check.py \\
        --autopar build/bin/autopar --cache build/models --ci
    /usr/bin/python3 python/autopar/testing/zoo_check.py \\
        --autopar build/bin/autopar --models tv_resnet50,unet --configs 1

The single-device program is compiled and run once per model: the first
partitioned verify of a model keeps its outputs in a reference directory
(`autopar verify --reference-dir`, DIR/MODEL with --reference-dir DIR, else
a temporary directory removed at the end), the model's other partitioned
verifies read them; autopar checks that they were made for the same
model, weights, inputs, options and autopar build. --no-reuse compiles and
runs it in every verify. The grid-1 configuration imports the model
without splitting merged batch and heads (only grids of several devices
do), so its single-device program is its own.

--json keeps every run's errors (ref_err: the single-device program against
PyTorch; part_ref_err: the partitioned one against PyTorch; part_err: the
partitioned one against the single-device one), wall and CPU seconds, its
phases' wall seconds (import, compile_single, compile_partitioned,
reference, run_single, run_partitioned, from verify's progress lines;
`reference`: checking the reference directory), whether the single-device
outputs were `read` from the reference directory or `written` there, and
the plan's strategy and communication per device (from the plan verify
prints), rewritten after every run; stderr has them too, after each model.

The tolerances are the zoo's (atol 1e-4, rtol 1e-3, --atol/--rtol); the auto
plans search with the compute-bound cluster descriptions of the tests
(slow compute, fast links: the planner splits what it can).

With --onnx-dir DIR it checks models nobody on the project wrote instead:
every subdirectory of DIR in the ONNX test-data layout (model.onnx and
test_data_set_0 with the producer's reference outputs), e.g. the PyTorch
exports that Debian's libonnx-testdata ships:

    /usr/bin/python3 python/autopar/testing/zoo_check.py \
        --onnx-dir /usr/share/libonnx-testdata/data/pytorch-converted \
        --atol 1e-7 --rtol 1e-3
"""

import argparse
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "models"))

import model_zoo  # noqa: E402
import zoo_args  # noqa: E402

# One representative per family, cheap enough for CI on 2 cores (about 250
# CPU seconds with CI_CONFIGS). The recurrent family's CI run is
# real-models.test's LSTM on 2 devices (an LSTM verify costs 30-45 CPU s).
CI_ZOO = [
    "tv_resnet18",            # residual CNN
    "tv_mobilenet_v3_small",  # depthwise, HardSwish, squeeze-excitation
    "tv_squeezenet1_1",       # concat of branches, ceil-mode pooling
    "unet",                   # ConvTranspose, Resize, skip Concat
    "bert",                   # nn.TransformerEncoder
    "detection",              # FPN, two outputs
]

DEFAULT_CONFIGS = "1,data:2,data:2x2,auto:2,auto:2x2"
# CI's configurations: PyTorch at grid 1 and both plans on the 2-D grid.
CI_CONFIGS = "1,data:2x2,auto:2x2"

# verify --reference-dir's line: where the single-device outputs came from.
REFERENCE_RE = re.compile(r"^single-device outputs: (read from|written to) ",
                          re.M)
ERROR_RE = re.compile(r"max_abs_err=([0-9.eE+-]+|nan|inf)", re.IGNORECASE)
# `autopar verify`'s progress lines: "autopar: verify: WHAT (SECONDS s)",
# each printed when its step starts (SECONDS counts from after the import).
STEP_RE = re.compile(r"^autopar: verify: (.*) \(([0-9.]+) s\)$")
# The phase each progress line starts (its first words).
PHASES = [("compiling the single-device program", "compile_single"),
          ("compiling the program for grid", "compile_partitioned"),
          ("checking the reference directory", "reference"),
          ("running the single-device program", "run_single"),
          ("running on", "run_partitioned")]


def phase_seconds(stamped, total: float):
    """Wall seconds of each phase of one `autopar verify` from its output
    lines, each with the second it arrived (`stamped`: (seconds since the
    start, line)): `import` up to the first compile (starting the process
    and importing the model), then each phase up to the next progress line,
    the last one up to `total`, the end of the process. Phases that did not
    start are left out."""
    starts = []
    for arrived, line in stamped:
        m = STEP_RE.match(line.strip())
        if not m:
            continue
        for prefix, phase in PHASES:
            if m.group(1).startswith(prefix):
                starts.append((phase, arrived))
                break
    phases = {}
    if starts:
        phases["import"] = round(starts[0][1], 1)
    for i, (phase, start) in enumerate(starts):
        end = starts[i + 1][1] if i + 1 < len(starts) else total
        phases[phase] = round(max(0.0, end - start), 1)
    return phases


def run_command(cmd, timeout: float):
    """Runs `cmd` with stdout and stderr merged; returns (exit code, output
    lines each with the second it arrived). A command still running after
    `timeout` seconds is killed with its children (exit code 124, 'timed
    out' appended); so is one running when an exception (KeyboardInterrupt,
    stop_on_signals()'s SystemExit) interrupts the wait, which goes on."""
    start = time.time()
    # The progress lines (phase_seconds) are printed to a terminal only,
    # unless AUTOPAR_PROGRESS asks for them.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            env=dict(os.environ, AUTOPAR_PROGRESS="1"),
                            start_new_session=True)
    stamped = []

    def read():
        for line in proc.stdout:
            stamped.append((time.time() - start, line))

    # A daemon: an exception below must not wait for the pipe's end.
    reader = threading.Thread(target=read, daemon=True)
    try:
        reader.start()
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        # Its whole process group: mpirun and the ranks hold the pipe too.
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        rc = 124
    except BaseException:
        # zoo_check itself is being stopped (stop_on_signals(), Ctrl-C): its
        # own session, which the signal did not reach, goes with it.
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    reader.join()
    if rc == 124:
        stamped.append((time.time() - start, "zoo_check: error: timed out\n"))
    return rc, stamped


def stop_on_signals() -> None:
    """Makes SIGTERM and SIGHUP raise SystemExit(128 + the signal), so that
    a zoo_check stopped from outside (an outer `timeout`, a closed terminal)
    stops the command it is running too (run_command()): each command runs
    in a session of its own, which the signal does not reach."""
    def stop(signum, _frame):
        raise SystemExit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)


def parse_configs(text: str):
    """'1,data:2,auto:2x2' -> [(None, '1'), ('data', '2'), ('auto', '2x2')]."""
    configs = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        if ":" in item:
            plan, grid = item.split(":", 1)
        else:
            plan, grid = None, item
        if not re.fullmatch(r"[0-9]+(x[0-9]+)*", grid) or (
                plan is not None and not plan):
            raise ValueError(f"bad configuration '{item}' (want GRID or "
                             "PLAN:GRID, e.g. 1 or data:2x2)")
        configs.append((plan, grid))
    return configs


def model_stats(path: str):
    """(parameters, ONNX nodes, sorted op types) of the model at `path`."""
    import onnx
    model = onnx.load(path)
    params = 0
    for init in model.graph.initializer:
        n = 1
        for d in init.dims:
            n *= d
        params += n
    ops = sorted({node.op_type for node in model.graph.node})
    return params, len(model.graph.node), ops


def first_error(text: str) -> str:
    """The first line of autopar's output that looks like a diagnostic."""
    for line in text.splitlines():
        if "error" in line.lower() or "mismatch" in line.lower():
            return line.strip()[:300]
    lines = [l for l in text.splitlines() if l.strip()]
    return lines[-1].strip()[:300] if lines else "(no output)"


def plan_summary(text: str):
    """(strategy, communication per device) of the plan that `autopar
    verify` printed (None, None when it printed none)."""
    strategy = re.search(r"^  strategy: *(.*)$", text, re.M)
    comm = re.search(r"^  communication per device: *(.*)$", text, re.M)
    return (strategy.group(1).strip() if strategy else None,
            comm.group(1).strip() if comm else None)


def verify_errors(text: str):
    """(single-device vs reference, partitioned vs reference, partitioned vs
    single-device) largest absolute errors from `autopar verify`'s output:
    its `reference`, `partitioned_reference` and last `max_abs_err=` lines
    (None where it printed none)."""
    ref_err, part_ref_err, part_err = None, None, None
    for line in text.splitlines():
        m = ERROR_RE.search(line)
        if not m:
            continue
        value = float(m.group(1))
        if line.startswith("reference "):
            ref_err = value if ref_err is None else max(ref_err, value)
        elif line.startswith("partitioned_reference "):
            part_ref_err = value if part_ref_err is None else max(
                part_ref_err, value)
        elif line.startswith("max_abs_err="):
            part_err = value
    return ref_err, part_ref_err, part_err


def grid_devices(grid: str) -> int:
    """'2x2' -> 4."""
    devices = 1
    for size in grid.split("x"):
        devices *= int(size)
    return devices


def reference_source(text: str):
    """'read' or 'written': where verify --reference-dir says the
    single-device outputs came from (None without that line)."""
    m = REFERENCE_RE.search(text)
    if not m:
        return None
    return "read" if m.group(1) == "read from" else "written"


def run_verify(args, model_dir: str, plan, grid: str, reference_dir=None):
    """Runs one `autopar verify` (with `--reference-dir reference_dir` when
    given); returns a result dict."""
    cmd = [args.autopar, "verify", os.path.join(model_dir, "model.onnx"),
           "--grid", grid, "--inputs",
           os.path.join(model_dir, "test_data_set_0"),
           "--atol", str(args.atol), "--rtol", str(args.rtol),
           "--timeout", str(args.timeout)]
    if plan is not None:
        cmd += ["--plan", plan]
        if plan == "auto":
            cmd += ["--cluster", zoo_args.cluster_for(args, grid)]
    if reference_dir is not None:
        cmd += ["--reference-dir", reference_dir]
    start = time.time()
    cpu_start = resource.getrusage(resource.RUSAGE_CHILDREN)
    rc, stamped = run_command(cmd, timeout=args.timeout * 2)
    out = "".join(line for _, line in stamped)
    seconds = time.time() - start
    cpu_end = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu_end.ru_utime - cpu_start.ru_utime) + (
        cpu_end.ru_stime - cpu_start.ru_stime)
    ref_err, part_ref_err, part_err = verify_errors(out)
    strategy, communication = plan_summary(out)
    result = {"ok": rc == 0, "rc": rc, "seconds": round(seconds, 1),
              "strategy": strategy, "communication": communication,
              "cpu_seconds": round(cpu, 1),
              "phases": phase_seconds(stamped, seconds),
              "ref_err": ref_err, "part_ref_err": part_ref_err,
              "part_err": part_err, "reference": reference_source(out)}
    if rc != 0:
        result["error"] = first_error(out)
        if args.log_dir:
            os.makedirs(args.log_dir, exist_ok=True)
            name = os.path.basename(model_dir)
            tag = f"{plan or 'grid'}-{grid}"
            with open(os.path.join(args.log_dir, f"{name}-{tag}.log"),
                      "w") as f:
                f.write(" ".join(cmd) + "\n" + out)
    return result


def fmt(value) -> str:
    return "-" if value is None else f"{value:.1e}"


def cell(result) -> str:
    if result is None:
        return "-"
    if not result["ok"]:
        return "FAIL"
    err = result["part_err"] if result["part_err"] is not None else \
        result["ref_err"]
    return f"ok {fmt(err)}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    zoo_args.add_arguments(parser, "comma-separated zoo models, or 'zoo' "
                           "(default: the whole zoo)", models_required=False,
                           clusters=True)
    parser.add_argument("--ci", action="store_true",
                        help="only the CI representatives (one per family)")
    parser.add_argument("--configs",
                        help="comma-separated GRID or PLAN:GRID (default: "
                             f"{DEFAULT_CONFIGS}; with --ci: {CI_CONFIGS}); "
                             "grid 1 is the PyTorch comparison")
    parser.add_argument("--timeout", type=int, default=600,
                        help="seconds per job of one verify; a whole verify is "
                        "stopped after twice this (default 600)")
    parser.add_argument("--json", help="write the results to this file")
    parser.add_argument("--log-dir", help="keep the output of failing runs "
                        "here")
    parser.add_argument("--onnx-dir", help="check every model directory "
                        "(model.onnx, test_data_set_0) under this directory "
                        "instead of the zoo; --models filters by name")
    parser.add_argument("--reference-dir",
                        help="keep each model's single-device outputs in "
                        "DIR/MODEL (autopar verify --reference-dir; default: "
                        "a temporary directory removed at the end)")
    parser.add_argument("--no-reuse", action="store_true",
                        help="compile and run the single-device program in "
                        "every verify")
    parser.add_argument("--list", action="store_true",
                        help="print the zoo (CI models marked) and exit")
    args = parser.parse_args()
    stop_on_signals()

    if args.list:
        for name in model_zoo.ZOO:
            print(name + (" (ci)" if name in CI_ZOO else ""))
        return 0
    try:
        configs = parse_configs(args.configs or (
            CI_CONFIGS if args.ci else DEFAULT_CONFIGS))
    except ValueError as e:
        print(f"zoo_check: error: {e}", file=sys.stderr)
        return 2
    if args.onnx_dir:
        known = sorted(
            n for n in os.listdir(args.onnx_dir)
            if os.path.isfile(os.path.join(args.onnx_dir, n, "model.onnx"))
            and os.path.isdir(os.path.join(args.onnx_dir, n,
                                           "test_data_set_0")))
    else:
        known = list(model_zoo.ZOO)
    where = f"'{args.onnx_dir}'" if args.onnx_dir else "the zoo"
    try:
        names = zoo_args.model_names(
            args.models, known, where=where,
            default=CI_ZOO if args.ci and not args.onnx_dir else None)
    except ValueError as e:
        print(f"zoo_check: error: {e} (see --list)", file=sys.stderr)
        return 2
    if not os.access(args.autopar, os.X_OK):
        print(f"zoo_check: error: no autopar tool at '{args.autopar}'",
              file=sys.stderr)
        return 2

    if args.reference_dir and args.no_reuse:
        print("zoo_check: error: --reference-dir keeps what --no-reuse "
              "does not: give one", file=sys.stderr)
        return 2
    scratch = None
    reference_root = args.reference_dir
    if reference_root is None and not args.no_reuse:
        scratch = tempfile.TemporaryDirectory(prefix="zoo-check-reference-")
        reference_root = scratch.name
    try:
        return check_models(args, names, configs, reference_root)
    finally:
        if scratch is not None:
            scratch.cleanup()


def check_models(args, names, configs, reference_root) -> int:
    """Checks the models `names` in the configurations `configs`, keeping
    single-device outputs under `reference_root` (None: not kept); prints
    the table and returns the exit code."""
    titles = [("grid " + g) if p is None else f"{p} {g}" for p, g in configs]
    header = ["model", "params", "ops", "err vs torch"] + titles
    print(" | ".join(header), flush=True)
    results = {}
    failures = 0
    for name in names:
        row = {"configs": {}}
        results[name] = row
        try:
            model_dir = os.path.join(args.onnx_dir, name) if args.onnx_dir \
                else model_zoo.export(name, args.cache)
        except Exception as e:  # pylint: disable=broad-except
            row["export_error"] = f"{type(e).__name__}: {e}"[:300]
            failures += 1
            print(f"{name} | export failed: {row['export_error']}",
                  flush=True)
            if args.json:
                with open(args.json, "w") as f:
                    json.dump(results, f, indent=1)
            continue
        params, nodes, ops = model_stats(os.path.join(model_dir,
                                                      "model.onnx"))
        row.update({"params": params, "nodes": nodes, "op_types": ops})
        worst = None
        for (plan, grid), title in zip(configs, titles):
            # Grids of several devices share one single-device program (the
            # grid-1 import keeps merged batch and heads: its own).
            reference_dir = None
            if reference_root is not None and grid_devices(grid) > 1:
                reference_dir = os.path.join(reference_root, name)
            result = run_verify(args, model_dir, plan, grid, reference_dir)
            row["configs"][title] = result
            if args.json:
                # After every run, so that the runs of a model stopped by an
                # outer timeout survive it.
                with open(args.json, "w") as f:
                    json.dump(results, f, indent=1)
            if not result["ok"]:
                failures += 1
            for key in ("ref_err", "part_ref_err"):
                if result[key] is not None:
                    worst = result[key] if worst is None else max(
                        worst, result[key])
        row["ref_err"] = worst
        cells = [name, f"{params / 1e6:.1f}M", str(nodes), fmt(worst)]
        cells += [cell(row["configs"][t]) for t in titles]
        print(" | ".join(cells), flush=True)
        for title in titles:
            r = row["configs"][title]
            if not r["ok"]:
                print(f"  {title}: {r['error']}", flush=True)
        for title in titles:
            r = row["configs"][title]
            plan = f" ({r['strategy']}, {r['communication']} per " \
                "device)" if r["strategy"] else ""
            kept = f", single-device outputs {r['reference']}" \
                if r.get("reference") else ""
            print(f"zoo_check: {name} {title}{plan}: {r['seconds']} s wall, "
                  f"{r['cpu_seconds']} s CPU{kept}; " + ", ".join(
                      f"{k} {v} s" for k, v in r["phases"].items()),
                  file=sys.stderr, flush=True)
        if args.json:
            # With the model's largest error against PyTorch.
            with open(args.json, "w") as f:
                json.dump(results, f, indent=1)
    runs = sum(len(r["configs"]) for r in results.values())
    print(f"zoo_check: {len(names)} models, {runs} runs, {failures} "
          "failed", flush=True)
    cpu = sum(c.get("cpu_seconds", 0) for r in results.values()
              for c in r["configs"].values())
    print(f"zoo_check: {cpu:.0f} s of CPU time in autopar verify",
          file=sys.stderr, flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
