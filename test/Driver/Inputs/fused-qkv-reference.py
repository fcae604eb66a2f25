"""Writes an input and the reference output of fused-qkv.onnxtxt, computed
with NumPy from the model's own initializers (the fused weight and bias, so
independently of how autopar cuts them):

    fused-qkv-reference.py MODEL.onnxtxt OUT_DIR
"""
import sys

import numpy as np

from attention_reference import load_initializers, softmax, write_case


def main():
    model_path, out = sys.argv[1], sys.argv[2]
    init = load_initializers(model_path)
    x = np.random.default_rng(12).standard_normal((2, 4, 8)).astype(np.float32)
    s = x.astype(np.float64) @ init["qkv_w"] + init["qkv_b"]
    q, k, v = (s[..., i * 8:(i + 1) * 8].reshape(2, 4, 2, 4).transpose(0, 2, 1, 3)
               for i in range(3))
    a = softmax(q @ k.transpose(0, 1, 3, 2))
    o = (a @ v).transpose(0, 2, 1, 3).reshape(2, 4, 8)
    write_case(out, x, o @ init["proj_w"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
