#!/usr/bin/env python3
"""Depthwise 3x3 convolutions of mobilenet_v2: autopar against ONNX Runtime.

Per shape (batch 1, pad 1, C x H x W input, stride 1 or 2), the time of one
depthwise Conv followed by Clip(0, 6) (mobilenet_v2's ReLU6), at one thread,
taken as a chain difference: a model of 2K layers minus one of K layers,
divided by K, so that the program's fixed costs (the call, the output copy)
cancel. Stride 1: the layers are chained (x -> conv -> clip -> conv -> ...),
so each convolution's input is the previous layer's result, as in the model
(autopar writes it into the next padded input). Stride 2: K independent
branches from the same input, each an output.

    /usr/bin/python3 bench/depthwise.py [--autopar build/bin/autopar]
        [--baseline OTHER/autopar] [--ort-modules DIR] [--rounds 5]
        [--layers 8] [--shapes 960x7x7,576x14x14s2,...]

--baseline: a second autopar binary (for example the main branch's) whose
programs are run side by side with --autopar's, round after round.
--ort-modules: a folder whose node_modules holds onnxruntime-node@1.30.0
(bench/ort_step.js); without it the ONNX Runtime column is skipped.
Each round runs every program once (autopar-runner --profile --threads 1
--repeats 51 on the compiled program: the median of 51 warm steps; ONNX
Runtime: ort_step.js, the median of 50),
timing the process CPU time of a step (`--metric cpu`, the default: a busy
shared machine inflates it less than the wall clock) or its wall-clock time;
the table gives the median over the rounds of the per-layer time, and
GFLOP/s = 2 x 9 x C x Ho x Wo / time. Prints the CPU and the load average
before and after. Exit code 1 when a measurement fails.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# mobilenet_v2's depthwise layers: (channels, height, width, stride).
SHAPES = [
    (32, 112, 112, 1), (96, 112, 112, 2), (144, 56, 56, 1), (144, 56, 56, 2),
    (192, 28, 28, 1), (192, 28, 28, 2), (384, 14, 14, 1), (576, 14, 14, 1),
    (576, 14, 14, 2), (960, 7, 7, 1),
]


def parse_shape(text):
    match = re.fullmatch(r"(\d+)x(\d+)x(\d+)(?:s(\d+))?", text)
    if not match:
        raise argparse.ArgumentTypeError("shape %r is not CxHxW[sS]" % text)
    c, h, w, s = match.groups()
    return int(c), int(h), int(w), int(s or 1)


def shape_name(shape):
    c, h, w, s = shape
    return "%dx%dx%d%s" % (c, h, w, "s%d" % s if s != 1 else "")


def out_size(size, stride):
    return (size + 2 - 3) // stride + 1


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def run(cmd, env=None, timeout=1800):
    full_env = dict(os.environ)
    full_env.update(env or {})
    proc = subprocess.run(cmd, capture_output=True, text=True, env=full_env,
                          timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError("%s failed (exit %d): %s" % (
            " ".join(cmd[:3]), proc.returncode, (proc.stderr or proc.stdout)[-800:]))
    return proc.stdout


def depthwise_model(path, shape, layers):
    """`layers` depthwise Conv + Clip(0, 6) layers of `shape` (chained at
    stride 1, independent branches otherwise), random weights and biases."""
    c, h, w, s = shape
    rng = np.random.default_rng(0)
    nodes, inits, outputs = [], [], []
    inits += [numpy_helper.from_array(np.float32(0), "lo"),
              numpy_helper.from_array(np.float32(6), "hi")]
    ho, wo = out_size(h, s), out_size(w, s)
    current = "x"
    for i in range(layers):
        weight = (rng.standard_normal((c, 1, 3, 3)) / 3).astype(np.float32)
        bias = rng.standard_normal(c).astype(np.float32) * 0.1
        inits += [numpy_helper.from_array(weight, "w%d" % i),
                  numpy_helper.from_array(bias, "b%d" % i)]
        source = current if s == 1 else "x"
        nodes.append(helper.make_node(
            "Conv", [source, "w%d" % i, "b%d" % i], ["conv%d" % i], group=c,
            kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[s, s]))
        nodes.append(helper.make_node("Clip", ["conv%d" % i, "lo", "hi"],
                                      ["y%d" % i]))
        current = "y%d" % i
        if s != 1 or i == layers - 1:
            outputs.append(helper.make_tensor_value_info(
                current, TensorProto.FLOAT, [1, c, ho, wo]))
    graph = helper.make_graph(
        nodes, "depthwise",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, h, w])],
        outputs, inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
              path)


def write_input(folder, shape):
    c, h, w, _ = shape
    tensor = numpy_helper.from_array(
        np.random.default_rng(1).uniform(-1, 1, (1, c, h, w)).astype(np.float32), "x")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "input_0.pb"), "wb") as f:
        f.write(tensor.SerializeToString())


def autopar_step(autopar, program, inputs, outputs, metric, repeats):
    """The runner next to `autopar`, on the compiled `program`, with the
    input's raw bytes read in place from its TensorProto file (raw_data is
    its last field) and --repeats warm steps: the median step's time."""
    runner = os.path.join(os.path.dirname(autopar), "autopar-runner")
    with open(os.path.join(program, "manifest.json")) as f:
        manifest = json.load(f)
    path = os.path.join(inputs, "input_0.pb")
    in_shape = manifest["inputs"][0]["shape"]
    offset = os.path.getsize(path) - 4 * int(np.prod(in_shape))
    cmd = [runner, "--program", os.path.join(program, "program.so"), "--grid", "1",
           "--weights", os.path.join(program, "weights"),
           "--input", "%d:%s" % (offset, path)]
    os.makedirs(outputs, exist_ok=True)
    for i, output in enumerate(manifest["outputs"]):
        out = os.path.join(outputs, "out%d.raw" % i)
        with open(out, "wb") as f:
            f.truncate(4 * int(np.prod(output["shape"])))
        cmd += ["--output", "0:" + out]
    text = run(cmd + ["--profile", "--repeats", str(repeats), "--threads", "1"])
    key = "cpu_time_s" if metric == "cpu" else "step_time_s"
    match = re.search(key + r"=([0-9.eE+-]+)", text)
    if not match or float(match.group(1)) <= 0:
        raise RuntimeError("no %s for %s" % (key, program))
    return float(match.group(1))


def ort_step(ort_modules, model, metric):
    text = run(["node", os.path.join(HERE, "ort_step.js"), model, "1", "50"],
               env={"NODE_PATH": os.path.join(ort_modules, "node_modules")})
    key = "ort_cpu_s" if metric == "cpu" else "ort_step_s"
    match = re.search(key + r"=([0-9.eE+-]+)", text)
    if not match or float(match.group(1)) <= 0:
        raise RuntimeError("no ONNX Runtime step time for " + model)
    return float(match.group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--autopar", default=os.path.join(ROOT, "build", "bin", "autopar"))
    parser.add_argument("--baseline", default="",
                        help="a second autopar binary, run side by side")
    parser.add_argument("--ort-modules", default="")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--layers", type=int, default=8,
                        help="K: the models have K and 2K layers")
    parser.add_argument("--shapes", default="",
                        help="comma-separated CxHxW[sS] (default: mobilenet_v2's)")
    parser.add_argument("--repeats", type=int, default=51,
                        help="warm steps per autopar-runner run (median)")
    parser.add_argument("--metric", choices=["cpu", "wall"], default="cpu",
                        help="process CPU time of a step (default; a busy machine "
                        "inflates it less) or its wall-clock time")
    parser.add_argument("--work", default="",
                        help="keep the models and programs here")
    args = parser.parse_args()
    shapes = ([parse_shape(s) for s in args.shapes.split(",")] if args.shapes
              else SHAPES)
    tools = [("autopar", args.autopar)]
    if args.baseline:
        tools.insert(0, ("baseline", args.baseline))
    work = args.work or tempfile.mkdtemp(prefix="depthwise-")
    print("CPU: %s; load before: %s" % (cpu_model(), load()))
    print("work: %s" % work)

    # Compile everything first, so that the rounds only run programs.
    cases = []
    for shape in shapes:
        name = shape_name(shape)
        inputs = os.path.join(work, name + "-in")
        write_input(inputs, shape)
        case = {"shape": shape, "name": name, "inputs": inputs, "models": {}}
        for layers in (args.layers, 2 * args.layers):
            model = os.path.join(work, "%s-%d.onnx" % (name, layers))
            depthwise_model(model, shape, layers)
            case["models"][layers] = model
            for label, binary in tools:
                program = os.path.join(work, "%s-%d-%s" % (name, layers, label))
                run([binary, "compile", model, "--grid", "1", "-o", program])
        cases.append(case)

    columns = [label for label, _ in tools] + (["ort"] if args.ort_modules else [])
    samples = {(case["name"], col): [] for case in cases for col in columns}
    failed = False
    for round_index in range(args.rounds):
        for case in cases:
            for col in columns:
                try:
                    times = {}
                    for layers in (args.layers, 2 * args.layers):
                        if col == "ort":
                            times[layers] = ort_step(args.ort_modules,
                                                     case["models"][layers],
                                                     args.metric)
                        else:
                            binary = dict(tools)[col]
                            program = os.path.join(
                                work, "%s-%d-%s" % (case["name"], layers, col))
                            times[layers] = autopar_step(
                                binary, program, case["inputs"],
                                os.path.join(work, "out"), args.metric,
                                args.repeats)
                    samples[(case["name"], col)].append(
                        (times[2 * args.layers] - times[args.layers]) / args.layers)
                except (RuntimeError, subprocess.TimeoutExpired) as error:
                    print("%s %s: %s" % (case["name"], col, error), file=sys.stderr)
                    failed = True
        print("round %d done, load %s" % (round_index + 1, load()), flush=True)

    print()
    print("Per-layer %s time in us (median over %d rounds of (t(%d layers) - t(%d)) / %d),"
          " GFLOP/s in brackets, 1 thread" % (args.metric, args.rounds, 2 * args.layers,
                                              args.layers, args.layers))
    header = "| shape | " + " | ".join(columns) + " |"
    if "ort" in columns:
        header += " ort time / autopar time |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for case in cases:
        c, h, w, s = case["shape"]
        flops = 2 * 9 * c * out_size(h, s) * out_size(w, s)
        cells, medians = [], {}
        for col in columns:
            values = samples[(case["name"], col)]
            if not values:
                cells.append("failed")
                continue
            medians[col] = statistics.median(values)
            cells.append("%.1f (%.0f)" % (medians[col] * 1e6,
                                         flops / medians[col] / 1e9
                                         if medians[col] > 0 else float("nan")))
        row = "| %s | %s |" % (case["name"], " | ".join(cells))
        if "ort" in columns:
            ratio = (medians["ort"] / medians["autopar"]
                     if medians.get("autopar", 0) > 0 and "ort" in medians else float("nan"))
            row += " %.2f |" % ratio
        print(row)
    print("load after: %s" % load())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
