#!/usr/bin/env python3
"""autopar from Python, end to end, on the bundled MLP (examples/mlp).

Plans the MLP for a 2x2 grid of a cluster given as a dict, writes the plan
(plan.json, plan.txt, plan.html), compiles it, runs it on 4 MPI ranks with
the stored test input, checks the output against the reference PyTorch
stored with the model, and verifies the tensor-parallel plan against the
single-device program.

Run from the checkout after building (README: "Python"):

    PYTHONPATH=build/python_packages /usr/bin/python3 \\
        examples/python/plan_and_run.py --out /tmp/mlp-plan
"""

import argparse
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

import autopar

HERE = os.path.dirname(os.path.abspath(__file__))
MLP = os.path.join(HERE, "..", "mlp", "model.onnx")
DATA = os.path.join(HERE, "..", "mlp", "test_data_set_0")

# Two nodes of two cores: a slow link between nodes, a fast one inside.
CLUSTER = {
    "device": {"flops": 1e11, "memory_bytes": 16e9,
               "memory_bandwidth": 1e11},
    "axes": [
        {"name": "node", "bandwidth": 3.125e9, "latency": 5e-6},
        {"name": "core", "bandwidth": 2.5e10, "latency": 5e-7},
    ],
}


def read_tensor(path):
    tensor = onnx.TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    return numpy_helper.to_array(tensor)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="mlp-plan",
                        help="directory for plan.json, plan.txt, plan.html")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)

    model = autopar.load(MLP)
    print("inputs:", model.inputs)
    plan = autopar.plan(model, (2, 2), cluster=CLUSTER)
    pred = plan.predicted
    print(f"plan: step {pred['step_time_s']:.3e} s (compute "
          f"{pred['compute_s']:.3e} s, communication {pred['comm_s']:.3e} s), "
          f"peak {pred['peak_memory_bytes']} bytes per device")
    for name, baseline in sorted(plan.baselines.items()):
        if baseline["valid"]:
            print(f"  baseline {name}: step {baseline['step_time_s']:.3e} s")
    for node, strategy in plan.strategies.items():
        print(f"  {node}: {strategy}")
    plan.save(os.path.join(args.out, "plan.json"),
              html=os.path.join(args.out, "plan.html"))
    print(f"wrote {args.out}/plan.json, plan.txt and plan.html")

    program = autopar.compile(model, (2, 2), plan=plan)
    x = read_tensor(os.path.join(DATA, "input_0.pb"))
    y = program.run({"input": x})["output"]
    reference = read_tensor(os.path.join(DATA, "output_0.pb"))
    err = float(np.max(np.abs(y - reference)))
    print(f"4 ranks: output {y.shape}, max |error| against PyTorch {err:.2e}")

    result = autopar.verify(model, "2x2", plan="tensor")
    print(result)
    return 0 if result.ok and np.allclose(y, reference, rtol=1e-4,
                                          atol=1e-5) else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except autopar.AutoparError as e:
        print(f"plan_and_run.py: error: {e}", file=sys.stderr)
        sys.exit(1)
