#!/usr/bin/env python3
# ===- zoo_batch_split.py - a data-parallel run against per-slice runs ----=== #
#
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===---------------------------------------------------------------------=== #
"""Tells a partitioning error from the single-device program's own batch
dependence on a zoo model.

A data-parallel program on a grid of D devices gives each device batch / D
images. Where its output differs from the single-device run at the whole
batch (zoo_check.py's 2x2 cells: one image per device), either partitioning
changed the result, or the single-device program itself computes an image
differently at another batch size (its kernels tile and sum in another order
at batch 1). This tool measures which, for output 0 of each model:

1. It compiles the model (as zoo_check.py exports it, from --cache) with
   --plan on --grid, runs it on the export's inputs, and runs the
   single-device program at the whole batch.
2. It exports the same instance (model_zoo.instance()) at the per-device
   batch (the exports bake their batch into reshapes), compiles it for one
   device and runs it on each slice of the inputs.
3. It prints each run's largest error against PyTorch float64 (the same
   weights in float64) and whether the partitioned output is bit-equal to
   the per-slice runs, concatenated.

It exits 1 when a partitioned output is not bit-equal to its per-slice runs.

    OMP_NUM_THREADS=1 /usr/bin/python3 python/autopar/testing/zoo_batch_split.py \\
        --autopar build/bin/autopar --cache build/models \\
        --models tv_shufflenet_v2_x1_5 --grid 2x2 --plan data
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "models"))

import zoo_args  # noqa: E402


def grid_devices(grid: str) -> int:
    """'2x2' -> 4."""
    n = 1
    for d in grid.split("x"):
        n *= int(d)
    return n


def slices(batch: int, devices: int):
    """The [begin, end) rows of each device's slice of a batch split evenly
    over `devices`."""
    if devices <= 0 or batch % devices:
        raise ValueError(f"a batch of {batch} does not split over {devices} "
                         "devices")
    step = batch // devices
    return [(i * step, (i + 1) * step) for i in range(devices)]


def load(path: str):
    import onnx
    import onnx.numpy_helper
    tensor = onnx.TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    return onnx.numpy_helper.to_array(tensor)


def save(path: str, array, name: str) -> None:
    import onnx.numpy_helper
    with open(path, "wb") as f:
        f.write(onnx.numpy_helper.from_array(array, name).SerializeToString())


def run_program(autopar: str, model: str, out: str, grid: str, plan: str,
                inputs: str, cluster=None):
    """Compiles `model` into `out` and runs it on `inputs`; output 0."""
    cmd = [autopar, "compile", model, "--grid", grid, "--plan", plan, "-o",
           out]
    if cluster:
        cmd += ["--cluster", cluster]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    subprocess.run([autopar, "run", out, "--inputs", inputs, "--outputs",
                    os.path.join(out, "outputs")], check=True,
                   stdout=subprocess.DEVNULL)
    return load(os.path.join(out, "outputs", "output_0.pb"))


def check_model(args, name: str, work: str) -> bool:
    import model_zoo
    import torch
    torch.set_num_threads(1)
    model_dir = model_zoo.export(name, args.cache)
    data = os.path.join(model_dir, "test_data_set_0")
    model, inputs = model_zoo.instance(name)
    if not isinstance(inputs, (tuple, list)):
        inputs = (inputs,)
    if len(inputs) != 1:
        raise ValueError(f"{name}: {len(inputs)} inputs (one expected)")
    x = inputs[0]
    if not np.array_equal(load(os.path.join(data, "input_0.pb")), x.numpy()):
        raise ValueError(f"{name}: the cached export's inputs are not "
                         "model_zoo.instance()'s (stale cache?)")
    parts = slices(x.shape[0], grid_devices(args.grid))
    with torch.no_grad():
        exact = model.double()(x.double())
    exact = (exact[0] if isinstance(exact, (tuple, list)) else exact).numpy()
    model.float()

    cluster = zoo_args.cluster_for(args, args.grid) \
        if args.plan == "auto" else None
    onnx_path = os.path.join(model_dir, "model.onnx")
    partitioned = run_program(args.autopar, onnx_path,
                              os.path.join(work, "partitioned"), args.grid,
                              args.plan, data, cluster)
    single = run_program(args.autopar, onnx_path, os.path.join(work, "single"),
                         "1", "replicated", data)

    # The same instance at the per-device batch.
    sliced_path = os.path.join(work, "slice.onnx")
    begin, end = parts[0]
    with torch.enable_grad():
        torch.onnx.export(model, (x[begin:end],), sliced_path,
                          opset_version=model_zoo.OPSET,
                          input_names=["input_0"], output_names=["output_0"],
                          do_constant_folding=True)
    sliced_dir = os.path.join(work, "slice")
    subprocess.run([args.autopar, "compile", sliced_path, "--grid", "1", "-o",
                    sliced_dir], check=True, stdout=subprocess.DEVNULL)
    rows = []
    for i, (begin, end) in enumerate(parts):
        slice_data = os.path.join(work, f"slice{i}")
        os.makedirs(slice_data, exist_ok=True)
        save(os.path.join(slice_data, "input_0.pb"), x[begin:end].numpy(),
             "input_0")
        subprocess.run([args.autopar, "run", sliced_dir, "--inputs",
                        slice_data, "--outputs",
                        os.path.join(slice_data, "outputs")], check=True,
                       stdout=subprocess.DEVNULL)
        rows.append(load(os.path.join(slice_data, "outputs", "output_0.pb")))
    per_slice = np.concatenate(rows)

    def error(y):
        return float(np.abs(y.astype(np.float64) - exact).max())

    equal = bool(np.array_equal(partitioned, per_slice))
    print(f"{name}: {args.plan} {args.grid} vs float64 {error(partitioned):.2e}"
          f", single-device {error(single):.2e}, per-slice "
          f"{error(per_slice):.2e}; {args.plan} {args.grid} vs single-device "
          f"{np.abs(partitioned - single).max():.2e}, vs per-slice "
          f"{np.abs(partitioned - per_slice).max():.2e} (bit-equal: "
          f"{'yes' if equal else 'NO'})", flush=True)
    return equal


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    zoo_args.add_arguments(parser, "comma-separated zoo models",
                           tolerances=False, clusters=True)
    parser.add_argument("--grid", default="2x2")
    parser.add_argument("--plan", default="data",
                        help="data or auto (with --cluster-1d or "
                        "--cluster-2d)")
    args = parser.parse_args()
    import model_zoo
    try:
        names = zoo_args.model_names(args.models, model_zoo.ZOO)
    except ValueError as e:
        print(f"zoo_batch_split: error: {e}", file=sys.stderr)
        return 2
    failures = 0
    for name in names:
        with tempfile.TemporaryDirectory(prefix="zoo-batch-split-") as work:
            try:
                if not check_model(args, name, work):
                    failures += 1
            except (ValueError, subprocess.CalledProcessError) as e:
                print(f"zoo_batch_split: error: {name}: {e}", file=sys.stderr)
                failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
