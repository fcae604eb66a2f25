#!/usr/bin/python3
"""Writes a binary ONNX model of one node whose input list has empty names.

ONNX's text syntax cannot write an empty name before the first comma, so the
empty-input tests build these models here.

Usage: empty-input-model.py OUT.onnx OPSET OP INPUT [INPUT ...]
  An INPUT of '-' is an empty name; the others become float[2,3] graph inputs.
  The node's single output 'y' is declared float[2,3].
"""
import sys

import onnx
from onnx import TensorProto, helper


def main():
    out, opset, op = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    names = ["" if name == "-" else name for name in sys.argv[4:]]
    inputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, [2, 3])
              for name in dict.fromkeys(names) if name]
    output = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    node = helper.make_node(op, names, ["y"])
    graph = helper.make_graph([node], "empty_input", inputs, [output])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, out)


if __name__ == "__main__":
    main()
