"""Writes argv[1]: an MLP of two equal blocks (MatMul 16x16, Add, Relu,
training-mode Dropout with ratio 0.25) and a 16 -> 4 head, input float32
[8, 16], for pipelines with dropout (test/Driver/train-dropout.test)."""
import sys

import numpy
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = numpy.random.default_rng(5)
inits = [
    numpy_helper.from_array(numpy.array(0.25, numpy.float32), "ratio"),
    numpy_helper.from_array(numpy.array(True), "training"),
]
nodes = []
x = "input_0"
for i in range(2):
    w = (rng.standard_normal((16, 16)) * 0.3).astype(numpy.float32)
    b = (rng.standard_normal(16) * 0.1).astype(numpy.float32)
    inits += [numpy_helper.from_array(w, f"w{i}"),
              numpy_helper.from_array(b, f"b{i}")]
    nodes += [
        helper.make_node("MatMul", [x, f"w{i}"], [f"h{i}"], name=f"mm{i}"),
        helper.make_node("Add", [f"h{i}", f"b{i}"], [f"a{i}"], name=f"add{i}"),
        helper.make_node("Relu", [f"a{i}"], [f"r{i}"], name=f"relu{i}"),
        helper.make_node("Dropout", [f"r{i}", "ratio", "training"],
                         [f"d{i}"], name=f"dropout{i}"),
    ]
    x = f"d{i}"
head = (rng.standard_normal((16, 4)) * 0.3).astype(numpy.float32)
inits.append(numpy_helper.from_array(head, "head"))
nodes.append(helper.make_node("MatMul", [x, "head"], ["output_0"], name="mm_head"))
graph = helper.make_graph(
    nodes, "mlp_dropout_blocks",
    [helper.make_tensor_value_info("input_0", TensorProto.FLOAT, [8, 16])],
    [helper.make_tensor_value_info("output_0", TensorProto.FLOAT, [8, 4])],
    inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
