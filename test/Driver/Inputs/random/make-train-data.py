"""Writes input_0.pb (float32 [8, 16]) and target.pb (float32 [8, 4]) into
the directory argv[1], for Inputs/random/mlp-dropout.onnxtxt."""
import os
import sys

import numpy
from onnx import numpy_helper

rng = numpy.random.default_rng(3)
for name, shape in (("input_0", (8, 16)), ("target", (8, 4))):
    value = rng.standard_normal(shape).astype(numpy.float32)
    with open(os.path.join(sys.argv[1], name + ".pb"), "wb") as f:
        f.write(numpy_helper.from_array(value, name).SerializeToString())
