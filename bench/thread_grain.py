#!/usr/bin/env python3
# ===- thread_grain.py - step time with and without the thread grain ------=== #
#
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===---------------------------------------------------------------------=== #
"""Step time of small and large models at 1 and 2 threads, with every
parallel loop threaded (`compile --min-flops-per-thread 0`, autopar before
autopar-size-thread-teams) and with the default grain.

Each model is compiled twice at `--grid 1`; then, round after round, every
(program, threads) pair runs once (`autopar run --profile`: the median of 7
warm steps), so that a change in the machine's load falls on all of them
alike. Prints the CPU model, the load average before and after, and per model
and configuration the median (and min) over the rounds, in microseconds.

    /usr/bin/python3 bench/thread_grain.py [--autopar build/bin/autopar]
        [--models gpt2_block,resnet18,mlp,mlp_large] [--rounds 7]

Models: those of the model zoo (python/autopar/models/model_zoo.py, exported
into --cache when missing) and `mlp_large`, bench/kernels.py's MLP 4 x (1024
-> 4096 -> 1024) at batch 64. A reported figure, not a test: it needs a
quiet machine.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
STEP = re.compile(r"step_time_s=([0-9.eE+-]+)")
VARIANTS = (("all loops threaded", "0"), ("grain (default)", None))


def run(cmd):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr}"
                           f"{proc.stdout}")
    return proc.stdout + proc.stderr


def model_inputs(name, cache, work):
    """The ONNX model and its input folder."""
    if name == "mlp_large":
        sys.path.insert(0, HERE)
        import kernels  # pylint: disable=import-outside-toplevel
        _, model, inputs, _, _ = kernels.mlp_case(work, quick=False)
        return model, inputs
    folder = os.path.join(cache, name)
    if not os.path.exists(os.path.join(folder, "model.onnx")):
        run([sys.executable, os.path.join(ROOT, "python", "autopar", "models",
                                          "model_zoo.py"),
             "--cache", cache, "--models", name])
    return (os.path.join(folder, "model.onnx"),
            os.path.join(folder, "test_data_set_0"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--autopar", default=os.path.join(ROOT, "build", "bin",
                                                          "autopar"))
    parser.add_argument("--models",
                        default="gpt2_block,resnet18,mlp,mlp_large")
    parser.add_argument("--cache", default=os.path.join(ROOT, "build",
                                                        "models"))
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--work", help="keep compiled models here")
    args = parser.parse_args()

    work = args.work or tempfile.mkdtemp(prefix="autopar-grain-")
    with open("/proc/cpuinfo") as f:
        cpu = next((line.split(":", 1)[1].strip() for line in f
                    if line.startswith("model name")), "unknown")
    print(f"CPU: {cpu}, {os.cpu_count()} cores")
    print(f"load average before: {os.getloadavg()}", flush=True)

    programs = []  # (model, variant label, program dir, inputs)
    for name in args.models.split(","):
        model, inputs = model_inputs(name, args.cache, work)
        for label, grain in VARIANTS:
            out = os.path.join(work, f"{name}-{grain or 'default'}")
            cmd = [args.autopar, "compile", model, "--grid", "1", "-o", out]
            if grain is not None:
                cmd += ["--min-flops-per-thread", grain]
            run(cmd)
            programs.append((name, label, out, inputs))

    samples = {}
    for _ in range(args.rounds):
        for name, label, out, inputs in programs:
            for threads in (1, 2):
                text = run([args.autopar, "run", out, "--inputs", inputs,
                            "--outputs", out + "-out", "--profile",
                            "--threads", str(threads)])
                match = STEP.search(text)
                if not match or float(match.group(1)) <= 0:
                    raise RuntimeError(f"no step time for {name}:\n{text}")
                samples.setdefault((name, label, threads), []).append(
                    float(match.group(1)))
    print(f"load average after: {os.getloadavg()}\n")

    print("| model | program | 1 thread (us) | 2 threads (us) | "
          "2 threads / 1 thread |")
    print("|---|---|---|---|---|")
    for name, label, _, _ in programs:
        one = samples[(name, label, 1)]
        two = samples[(name, label, 2)]
        print(f"| {name} | {label} | {statistics.median(one) * 1e6:.0f} "
              f"(min {min(one) * 1e6:.0f}) | "
              f"{statistics.median(two) * 1e6:.0f} "
              f"(min {min(two) * 1e6:.0f}) | "
              f"{statistics.median(two) / statistics.median(one):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
