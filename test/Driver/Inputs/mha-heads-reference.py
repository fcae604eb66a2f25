"""Writes an input and the reference output of mha-heads.onnxtxt, computed
with NumPy in float64 from the model's own initializers, per head (so
independently of how autopar lays out the batch and the heads):

    mha-heads-reference.py MODEL.onnxtxt OUT_DIR
"""
import os
import sys

import numpy as np
import onnx.parser
from onnx import numpy_helper

BATCH, TOKENS, DIM, HEADS = 4, 5, 6, 2


def main():
    model_path, out = sys.argv[1], sys.argv[2]
    with open(model_path) as f:
        model = onnx.parser.parse_model(f.read())
    init = {t.name: numpy_helper.to_array(t).astype(np.float64)
            for t in model.graph.initializer}
    x = np.random.default_rng(13).standard_normal(
        (BATCH, TOKENS, DIM)).astype(np.float32)
    head = DIM // HEADS
    s = x.astype(np.float64) @ init["in_w"].T + init["in_b"]
    y = np.empty((BATCH, TOKENS, DIM))
    for b in range(BATCH):
        heads = []
        for h in range(HEADS):
            q, k, v = (s[b, :, p * DIM + h * head:p * DIM + (h + 1) * head]
                       for p in range(3))
            a = q @ k.T / np.sqrt(head)
            a = np.exp(a - a.max(axis=-1, keepdims=True))
            a /= a.sum(axis=-1, keepdims=True)
            heads.append(a @ v)
        y[b] = np.concatenate(heads, axis=1) @ init["out_w"].T + init["out_b"]
    os.makedirs(out, exist_ok=True)
    for name, value in (
            ("input_0.pb", numpy_helper.from_array(x, "x")),
            ("output_0.pb", numpy_helper.from_array(y.astype(np.float32),
                                                    "y"))):
        with open(os.path.join(out, name), "wb") as f:
            f.write(value.SerializeToString())
    return 0


if __name__ == "__main__":
    sys.exit(main())
