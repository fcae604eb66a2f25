"""What the NumPy references of the attention tests share (mha-heads- and
fused-qkv-reference.py): the model's initializers in float64, the softmax
over the last axis, and the input/output pair written as a test data set."""
import os

import numpy as np
import onnx.parser
from onnx import numpy_helper


def load_initializers(model_path):
    """The initializers of the textual ONNX model at `model_path`, by name,
    as float64 arrays."""
    with open(model_path) as f:
        model = onnx.parser.parse_model(f.read())
    return {t.name: numpy_helper.to_array(t).astype(np.float64)
            for t in model.graph.initializer}


def softmax(a):
    """Softmax over the last axis."""
    a = np.exp(a - a.max(axis=-1, keepdims=True))
    return a / a.sum(axis=-1, keepdims=True)


def write_case(out, x, y):
    """Writes `x` as input_0.pb (named x) and `y` in float32 as output_0.pb
    (named y) into the folder `out`."""
    os.makedirs(out, exist_ok=True)
    for name, value in (
            ("input_0.pb", numpy_helper.from_array(x, "x")),
            ("output_0.pb", numpy_helper.from_array(y.astype(np.float32), "y"))):
        with open(os.path.join(out, name), "wb") as f:
            f.write(value.SerializeToString())
