"""Writes one convolution as ONNX, with its weight and bias as initializers,
on a 1 x C x H x W input; seeded. The peak of such a program is the
convolution's: its operands, its result and its per-call buffers.

    make_conv.py OUT.onnx C M H W KERNEL STRIDE PAD

An input directory OUT_DIR/test_data_set_0 (input_0.pb) is written beside.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    out = sys.argv[1]
    c, m, h, w, kernel, stride, pad = map(int, sys.argv[2:9])
    rng = np.random.default_rng(0)
    weight = (rng.standard_normal((m, c, kernel, kernel)) /
              np.sqrt(c * kernel * kernel)).astype(np.float32)
    bias = (0.01 * rng.standard_normal(m)).astype(np.float32)
    oh = (h + 2 * pad - kernel) // stride + 1
    ow = (w + 2 * pad - kernel) // stride + 1
    node = helper.make_node("Conv", ["input", "conv.weight", "conv.bias"],
                            ["output"], kernel_shape=[kernel, kernel],
                            strides=[stride, stride], pads=[pad] * 4)
    graph = helper.make_graph(
        [node], "conv",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, c, h, w])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT,
                                       [1, m, oh, ow])],
        [numpy_helper.from_array(weight, "conv.weight"),
         numpy_helper.from_array(bias, "conv.bias")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, out)
    data = os.path.join(os.path.dirname(out) or ".", "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    x = rng.standard_normal((1, c, h, w)).astype(np.float32)
    with open(os.path.join(data, "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(x, "input").SerializeToString())


if __name__ == "__main__":
    main()
