# Inputs, per-rank weights and reference outputs of the hand-written device
# programs of the execution tests; checks the outputs a run wrote.
#
#   device_data.py gen CASE DIR    writes DIR/{inputs,weights/rank<R>}
#   device_data.py check CASE DIR  compares DIR/outputs with the reference
import os
import sys

import numpy as np


def grid1():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 8), dtype=np.float32)
    v = rng.standard_normal(8, dtype=np.float32)
    w1 = rng.standard_normal((8, 16), dtype=np.float32)
    b1 = rng.standard_normal(16, dtype=np.float32)
    w2 = rng.standard_normal((16, 16), dtype=np.float32)
    bmm = rng.standard_normal((2, 8, 5), dtype=np.float32)
    h = np.maximum(x @ w1 + b1, 0)
    y = 2.0 * (h @ w2.T) + 3.0 * np.full((1, 16), 0.5, np.float32)
    return {
        "grid": 1,
        "inputs": [x, v],
        # Weight ids follow first appearance in @main.
        "weights": [[w1, b1, w2, bmm]],
        "outputs": [y, x @ v, x @ bmm],
    }


def grid2():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 8), dtype=np.float32)
    w1 = rng.standard_normal((8, 16), dtype=np.float32)
    w2 = rng.standard_normal((16, 8), dtype=np.float32)
    b = rng.standard_normal(8, dtype=np.float32)
    y = np.maximum(x @ w1, 0) @ w2 + b
    # Rank r holds columns 8r.. of w1 and rows 8r.. of w2; b is replicated.
    weights = [[w1[:, 8 * r:8 * r + 8], w2[8 * r:8 * r + 8, :], b]
               for r in range(2)]
    # Rank 0 of the last all_to_all receives the first half of each rank's
    # column block: columns 0:2 (its own) and 4:6 (from rank 1).
    mixed = np.concatenate([x[:, 0:2], x[:, 4:6]], axis=1)
    return {"grid": 2, "inputs": [x], "weights": weights,
            "outputs": [y, y, y, y, mixed]}


CASES = {"grid1": grid1, "grid2": grid2}


def main():
    mode, case, root = sys.argv[1:4]
    data = CASES[case]()
    if mode == "gen":
        os.makedirs(os.path.join(root, "inputs"), exist_ok=True)
        os.makedirs(os.path.join(root, "outputs"), exist_ok=True)
        for i, value in enumerate(data["inputs"]):
            np.ascontiguousarray(value).tofile(
                os.path.join(root, "inputs", f"input_{i}.bin"))
        for rank, weights in enumerate(data["weights"]):
            directory = os.path.join(root, "weights", f"rank{rank}")
            os.makedirs(directory, exist_ok=True)
            for i, value in enumerate(weights):
                np.ascontiguousarray(value).tofile(
                    os.path.join(directory, f"w{i}.bin"))
        return 0
    failures = 0
    for i, expected in enumerate(data["outputs"]):
        path = os.path.join(root, "outputs", f"output_{i}.bin")
        got = np.fromfile(path, dtype=expected.dtype)
        if got.size != expected.size or not np.allclose(
                got.reshape(expected.shape), expected, rtol=1e-4, atol=1e-4):
            print(f"{case}: output {i} differs:\n{got}\nexpected:\n{expected}")
            failures += 1
    if failures == 0:
        print(f"{case}: {len(data['outputs'])} outputs match")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
