//===- Contraction.cpp - matrix products and einsum ----------------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Importers of MatMul, Gemm and Einsum, and their registration by opset.
//
//===----------------------------------------------------------------------===//

#include "../Importer.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::importer;

using NodeRef = OnnxImporter::NodeRef;

void OnnxImporter::registerContractionImporters(OpImporterRegistry &registry) {
  registry.add("MatMul", 1, &OnnxImporter::importMatMul);
  registry.add("Gemm", 1, &OnnxImporter::importGemm);
  registry.add("Einsum", 1, &OnnxImporter::importEinsum);
}

LogicalResult OnnxImporter::importMatMul(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 2, 2, {})))
    return failure();
  FailureOr<Value> result =
      createOp<MatMulOp>(ref, loc, {input(ref, 0), input(ref, 1)});
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

LogicalResult OnnxImporter::importGemm(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 2, 3,
                       {"alpha", "beta", "transA", "transB", "broadcast"})))
    return failure();
  FailureOr<float> alpha = floatAttr(ref, "alpha", 1.0f);
  FailureOr<float> beta = floatAttr(ref, "beta", 1.0f);
  FailureOr<int64_t> transA = intAttr(ref, "transA", 0);
  FailureOr<int64_t> transB = intAttr(ref, "transB", 0);
  if (failed(alpha) || failed(beta) || failed(transA) || failed(transB))
    return failure();
  GemmOp::Properties props;
  props.setAlpha(builder.getF32FloatAttr(*alpha));
  props.setBeta(builder.getF32FloatAttr(*beta));
  props.setTransA(builder.getBoolAttr(*transA != 0));
  props.setTransB(builder.getBoolAttr(*transB != 0));
  SmallVector<Value> operands = {input(ref, 0), input(ref, 1)};
  if (hasInput(ref, 2))
    operands.push_back(input(ref, 2));
  FailureOr<Value> result = createOp<GemmOp>(ref, loc, operands, props);
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

LogicalResult OnnxImporter::importEinsum(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 1, kVariadic, {"equation"})) ||
      failed(checkInputType(ref, 0, kNumeric)))
    return failure();
  FailureOr<std::string> equationAttr = stringAttr(ref, "equation", "");
  if (failed(equationAttr))
    return failure();
  std::string equation;
  for (char c : *equationAttr)
    if (c != ' ')
      equation.push_back(c);
  if (StringRef(equation).contains("..."))
    return emitError(ref) << "einsum equation '" << *equationAttr
                          << "' uses an ellipsis ('...'), which is unsupported";
  for (char c : equation)
    if (!(c >= 'a' && c <= 'z') && c != ',' && c != '-' && c != '>')
      return emitError(ref) << "einsum equation '" << *equationAttr << "' has '"
                            << c << "'; only lowercase letters are supported";
  if (!StringRef(equation).contains("->")) {
    // Implicit output: the letters appearing exactly once, alphabetically.
    std::string output;
    for (char c = 'a'; c <= 'z'; ++c)
      if (llvm::count(equation, c) == 1)
        output.push_back(c);
    equation += "->" + output;
  }
  SmallVector<Value> operands;
  for (int i = 0; i < ref.node->input_size(); ++i)
    operands.push_back(input(ref, i));
  EinsumOp::Properties props;
  props.setEquation(builder.getStringAttr(equation));
  FailureOr<Value> result = createOp<EinsumOp>(ref, loc, operands, props);
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}
