"""Writes input and reference-output directories for Inputs/divide.onnxtxt
(z = x / y) whose quotients hold +inf, -inf and NaN:

    make_infinity_refs.py OUTDIR

OUTDIR/exact holds the true quotients; each other directory holds the same
inputs and a reference output with one element changed: `flipped` has -inf
where the quotient is +inf, `finite` has 7 where it is +inf, `infinite` has
+inf where it is 1, `nan` has NaN where it is 1 and `number` has 1 where it
is NaN.
"""
import os
import sys

import numpy as np
from onnx import numpy_helper


def write(directory, x, y, z):
    os.makedirs(directory, exist_ok=True)
    for name, array in (("input_0", x), ("input_1", y), ("output_0", z)):
        tensor = numpy_helper.from_array(array, name)
        with open(os.path.join(directory, name + ".pb"), "wb") as f:
            f.write(tensor.SerializeToString())


def main():
    out = sys.argv[1]
    x = np.array([[1, -1, 0, 2], [3, 4, 5, 6]], dtype=np.float32)
    y = np.array([[0, 0, 0, 2], [1, 2, 4, 8]], dtype=np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = x / y
    write(os.path.join(out, "exact"), x, y, z)
    changes = {"flipped": ((0, 0), -np.inf), "finite": ((0, 0), 7.0),
               "infinite": ((0, 3), np.inf), "nan": ((0, 3), np.nan),
               "number": ((0, 2), 1.0)}
    for name, (index, value) in changes.items():
        changed = z.copy()
        changed[index] = value
        write(os.path.join(out, name), x, y, changed)


if __name__ == "__main__":
    main()
