"""Writes a small convolutional network on odd spatial sizes as ONNX, with an
input and the output numpy computes for it (float64, then float32), in the
ONNX test-data layout:

    OUT/model.onnx, OUT/test_data_set_0/{input_0,output_0}.pb

Conv 3x3 stride 2 (3 -> 32 channels) on 2 x 3 x 63 x 63: 31 x 31 outputs,
whose flat im2col rows and epilogue index positions by p floordiv 31 and
p mod 31; Relu; MaxPool 2x2 stride 2 in ceil mode (16 x 16 outputs, the
last window reaching past the input); Conv 3x3 pad 1 (32 -> 64 channels) on
15 x 15 after a Slice (the Winograd form with an odd number of outputs, read
through oh floordiv 2 and ow floordiv 2); Relu. Seeded.

    make_odd_conv.py OUT
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def conv(x, w, b, stride, pad):
    """NCHW convolution, float64."""
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, h, wd = x.shape
    m, _, kh, kw = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    y = np.zeros((n, m, oh, ow))
    for i in range(kh):
        for j in range(kw):
            window = x[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride]
            y += np.einsum("nchw,mc->nmhw", window, w[:, :, i, j])
    return y + b[None, :, None, None]


def max_pool_ceil(x, kernel, stride):
    """Max pooling in ceil mode without pads: windows past the end see
    only the positions inside."""
    n, c, h, w = x.shape
    oh = -(-(h - kernel) // stride) + 1
    ow = -(-(w - kernel) // stride) + 1
    padded = np.full((n, c, (oh - 1) * stride + kernel,
                      (ow - 1) * stride + kernel), -np.inf)
    padded[:, :, :h, :w] = x
    y = np.full((n, c, oh, ow), -np.inf)
    for i in range(kernel):
        for j in range(kernel):
            y = np.maximum(y, padded[:, :, i:i + stride * oh:stride,
                                     j:j + stride * ow:stride])
    return y


def main():
    out = sys.argv[1]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 63, 63)).astype(np.float32)
    w1 = (rng.standard_normal((32, 3, 3, 3)) / np.sqrt(27)).astype(np.float32)
    b1 = (0.1 * rng.standard_normal(32)).astype(np.float32)
    w2 = (rng.standard_normal((64, 32, 3, 3)) / np.sqrt(288)).astype(
        np.float32)
    b2 = (0.1 * rng.standard_normal(64)).astype(np.float32)

    y = np.maximum(conv(x.astype(np.float64), w1, b1, 2, 0), 0)
    y = max_pool_ceil(y, 2, 2)[:, :, :15, :15]
    y = np.maximum(conv(y, w2, b2, 1, 1), 0).astype(np.float32)

    starts = numpy_helper.from_array(np.array([0, 0], np.int64), "starts")
    ends = numpy_helper.from_array(np.array([15, 15], np.int64), "ends")
    axes = numpy_helper.from_array(np.array([2, 3], np.int64), "axes")
    nodes = [
        helper.make_node("Conv", ["input", "w1", "b1"], ["c1"],
                         kernel_shape=[3, 3], strides=[2, 2]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2],
                         strides=[2, 2], ceil_mode=1),
        helper.make_node("Slice", ["p1", "starts", "ends", "axes"], ["s1"]),
        helper.make_node("Conv", ["s1", "w2", "b2"], ["c2"],
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["output"]),
    ]
    inits = [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"),
             numpy_helper.from_array(w2, "w2"), numpy_helper.from_array(b2, "b2"),
             starts, ends, axes]
    graph = helper.make_graph(
        nodes, "odd_conv",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                       list(x.shape))],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT,
                                       list(y.shape))],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    data = os.path.join(out, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    onnx.save(model, os.path.join(out, "model.onnx"))
    for name, array in (("input_0", (x, "input")), ("output_0", (y, "output"))):
        with open(os.path.join(data, name + ".pb"), "wb") as f:
            f.write(numpy_helper.from_array(*array).SerializeToString())


if __name__ == "__main__":
    main()
