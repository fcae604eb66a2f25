"""Writes a model whose runtime input is large relative to its weights, and
its input, for the sharded-input tests:

    make_big_input.py OUTDIR ROWS

OUTDIR/model.onnx computes y = x + b for x of ROWS x 64 f32 and a weight b
of 64 f32 (one op: the planner's memory count and the program's buffers
are then the same, with no fusion or data tiling in between); OUTDIR/raw/input_0.pb holds x raw-encoded
(raw_data), OUTDIR/typed/input_0.pb the same values in float_data.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    out, rows = sys.argv[1], int(sys.argv[2])
    rng = np.random.default_rng(0)
    b = rng.standard_normal(64).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "b"], ["y"])],
        "big_input",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, 64])],
        [numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    os.makedirs(out, exist_ok=True)
    onnx.save(model, os.path.join(out, "model.onnx"))
    x = rng.standard_normal((rows, 64)).astype(np.float32)
    for kind in ("raw", "typed"):
        os.makedirs(os.path.join(out, kind), exist_ok=True)
        tensor = (numpy_helper.from_array(x, "x") if kind == "raw" else
                  helper.make_tensor("x", TensorProto.FLOAT, x.shape,
                                     x.flatten().tolist()))
        assert tensor.HasField("raw_data") == (kind == "raw")
        with open(os.path.join(out, kind, "input_0.pb"), "wb") as f:
            f.write(tensor.SerializeToString())
    expected = (x + b).astype(np.float32)
    with open(os.path.join(out, "raw", "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(expected, "y").SerializeToString())


if __name__ == "__main__":
    main()
