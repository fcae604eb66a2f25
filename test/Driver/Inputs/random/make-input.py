"""Writes input_0.pb: a float32 [256, 400] tensor of values in [1, 2)."""
import sys

import numpy
from onnx import numpy_helper

x = 1.0 + numpy.random.default_rng(0).random((256, 400), dtype=numpy.float32)
with open(sys.argv[1], "wb") as f:
    f.write(numpy_helper.from_array(x, "x").SerializeToString())
