"""Compares two serialized ONNX TensorProto files: prints the name and shape
of the first and the largest absolute difference; exits 1 above the bound."""
import sys

import numpy
import onnx
from onnx import numpy_helper


def load(path):
    tensor = onnx.TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    return tensor


actual, expected = load(sys.argv[1]), load(sys.argv[2])
bound = float(sys.argv[3])
a, b = numpy_helper.to_array(actual), numpy_helper.to_array(expected)
if a.shape != b.shape or a.dtype != b.dtype:
    print(f"output: shape/dtype {a.shape} {a.dtype} != {b.shape} {b.dtype}")
    sys.exit(1)
err = float(numpy.max(numpy.abs(a.astype(numpy.float64) - b))) if a.size else 0.0
ok = err <= bound
print(f"output: name={actual.name} shape={a.shape} max_abs_err={err:.3e} "
      f"{'ok' if ok else 'MISMATCH'}")
sys.exit(0 if ok else 1)
