"""Writes an input and the reference output of fused-qkv.onnxtxt, computed
with NumPy from the model's own initializers (the fused weight and bias, so
independently of how autopar cuts them):

    fused-qkv-reference.py MODEL.onnxtxt OUT_DIR
"""
import os
import sys

import numpy as np
import onnx.parser
from onnx import numpy_helper


def main():
    model_path, out = sys.argv[1], sys.argv[2]
    with open(model_path) as f:
        model = onnx.parser.parse_model(f.read())
    init = {t.name: numpy_helper.to_array(t).astype(np.float64)
            for t in model.graph.initializer}
    x = np.random.default_rng(12).standard_normal((2, 4, 8)).astype(np.float32)
    s = x.astype(np.float64) @ init["qkv_w"] + init["qkv_b"]
    q, k, v = (s[..., i * 8:(i + 1) * 8].reshape(2, 4, 2, 4).transpose(0, 2, 1, 3)
               for i in range(3))
    a = q @ k.transpose(0, 1, 3, 2)
    a = np.exp(a - a.max(axis=-1, keepdims=True))
    a /= a.sum(axis=-1, keepdims=True)
    o = (a @ v).transpose(0, 2, 1, 3).reshape(2, 4, 8)
    y = (o @ init["proj_w"]).astype(np.float32)
    os.makedirs(out, exist_ok=True)
    for name, value in (("input_0.pb", numpy_helper.from_array(x, "x")),
                        ("output_0.pb", numpy_helper.from_array(y, "y"))):
        with open(os.path.join(out, name), "wb") as f:
            f.write(value.SerializeToString())
    return 0


if __name__ == "__main__":
    sys.exit(main())
