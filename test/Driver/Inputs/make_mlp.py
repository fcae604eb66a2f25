"""Writes an MLP as ONNX: LAYERS x (HIDDEN -> FFN, Relu, FFN -> HIDDEN), each a
MatMul with a weight and an Add of a bias, on a BATCH x HIDDEN input; seeded.

    make_mlp.py OUT.onnx BATCH HIDDEN FFN LAYERS
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    out, batch, hidden, ffn, layers = sys.argv[1], *map(int, sys.argv[2:6])
    rng = np.random.default_rng(0)
    nodes, inits, x = [], [], "input"
    for layer in range(layers):
        for rows, cols, name in ((hidden, ffn, "up"), (ffn, hidden, "down")):
            prefix = f"{name}{layer}"
            w = (rng.standard_normal((rows, cols)) / np.sqrt(rows)).astype(np.float32)
            b = (0.01 * rng.standard_normal(cols)).astype(np.float32)
            inits += [numpy_helper.from_array(w, prefix + ".weight"),
                      numpy_helper.from_array(b, prefix + ".bias")]
            nodes.append(helper.make_node("MatMul", [x, prefix + ".weight"],
                                          [prefix + ".mm"]))
            nodes.append(helper.make_node("Add", [prefix + ".mm", prefix + ".bias"],
                                          [prefix + ".out"]))
            x = prefix + ".out"
            if name == "up":
                nodes.append(helper.make_node("Relu", [x], [prefix + ".relu"]))
                x = prefix + ".relu"
    nodes.append(helper.make_node("Identity", [x], ["output"]))
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, hidden])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [batch, hidden])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, out)


if __name__ == "__main__":
    main()
