#!/usr/bin/env python3
# ===- export_mlp.py - export the bundled example MLP to ONNX -------------=== #
#
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===---------------------------------------------------------------------=== #
"""Exports the example MLP that autopar's README compiles.

The model is Linear(16, 32) - ReLU - Linear(32, 32) - ReLU - Linear(32, 8)
with a static batch of 8, initialized from seed 0 and exported with
torch.onnx.export at opset 17 (each Linear becomes a Gemm with transB = 1).
Next to the model it writes one test case in the ONNX test-data layout:
test_data_set_0/input_0.pb and output_0.pb, the output computed by PyTorch.

The generated files are checked in under examples/mlp/, so CI needs no
PyTorch. To regenerate them (Debian's python3-torch; call /usr/bin/python3,
which sees the Debian packages):

    /usr/bin/python3 python/autopar/models/export_mlp.py examples/mlp
"""

import argparse
import os

import onnx
import onnx.numpy_helper
import torch


BATCH = 8
IN_FEATURES = 16
HIDDEN = 32
OUT_FEATURES = 8


def build_model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(IN_FEATURES, HIDDEN),
        torch.nn.ReLU(),
        torch.nn.Linear(HIDDEN, HIDDEN),
        torch.nn.ReLU(),
        torch.nn.Linear(HIDDEN, OUT_FEATURES),
    ).eval()


def write_tensor(path: str, array, name: str) -> None:
    tensor = onnx.numpy_helper.from_array(array, name)
    with open(path, "wb") as f:
        f.write(tensor.SerializeToString())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output_dir", nargs="?", default="examples/mlp",
                        help="directory that receives model.onnx and "
                             "test_data_set_0/ (default: examples/mlp)")
    args = parser.parse_args()

    model = build_model()
    x = torch.randn(BATCH, IN_FEATURES)
    with torch.no_grad():
        y = model(x)

    os.makedirs(os.path.join(args.output_dir, "test_data_set_0"),
                exist_ok=True)
    model_path = os.path.join(args.output_dir, "model.onnx")
    torch.onnx.export(model, (x,), model_path, opset_version=17,
                      input_names=["input"], output_names=["output"],
                      do_constant_folding=True)
    onnx.checker.check_model(onnx.load(model_path))

    data_dir = os.path.join(args.output_dir, "test_data_set_0")
    write_tensor(os.path.join(data_dir, "input_0.pb"), x.numpy(), "input")
    write_tensor(os.path.join(data_dir, "output_0.pb"), y.numpy(), "output")
    print(f"wrote {model_path} and {data_dir}/{{input_0,output_0}}.pb")


if __name__ == "__main__":
    main()
