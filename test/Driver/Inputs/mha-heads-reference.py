"""Writes an input and the reference output of mha-heads.onnxtxt, computed
with NumPy in float64 from the model's own initializers, per head (so
independently of how autopar lays out the batch and the heads):

    mha-heads-reference.py MODEL.onnxtxt OUT_DIR
"""
import sys

import numpy as np

from attention_reference import load_initializers, softmax, write_case

BATCH, TOKENS, DIM, HEADS = 4, 5, 6, 2


def main():
    model_path, out = sys.argv[1], sys.argv[2]
    init = load_initializers(model_path)
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
            heads.append(softmax(q @ k.T / np.sqrt(head)) @ v)
        y[b] = np.concatenate(heads, axis=1) @ init["out_w"].T + init["out_b"]
    write_case(out, x, y)
    return 0


if __name__ == "__main__":
    sys.exit(main())
