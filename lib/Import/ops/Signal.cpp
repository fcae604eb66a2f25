//===- Signal.cpp - window functions --------------------------------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Importers of the ONNX window functions (HannWindow, HammingWindow,
// BlackmanWindow). The size defines the result's shape, so it must be known
// at compile time, and then so is the whole window: it becomes a constant.
//
//===----------------------------------------------------------------------===//

#include "../Importer.h"

#include <cmath>

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::importer;

using NodeRef = OnnxImporter::NodeRef;

void OnnxImporter::registerSignalImporters(OpImporterRegistry &registry) {
  registry.add("HannWindow", 17, &OnnxImporter::importWindow);
  registry.add("HammingWindow", 17, &OnnxImporter::importWindow);
  registry.add("BlackmanWindow", 17, &OnnxImporter::importWindow);
}

/// w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), N = size (periodic)
/// or size - 1 (symmetric), computed in double and stored in the
/// `output_datatype` type (float32 by default).
LogicalResult OnnxImporter::importWindow(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 1, 1, {"output_datatype", "periodic"})) ||
      failed(checkInputType(ref, 0, kIndices)))
    return failure();
  FailureOr<const ConstTensor *> sizeValue = requireKnown(ref, 0, "size");
  if (failed(sizeValue))
    return failure();
  if ((*sizeValue)->getNumElements() != 1)
    return emitError(ref) << "input 0 ('size') must be a scalar, got shape "
                          << formatShape((*sizeValue)->shape);
  int64_t size = (*sizeValue)->getInt(0);
  if (size < 0)
    return emitError(ref) << "input 0 ('size') must be non-negative, got "
                          << size;
  FailureOr<int64_t> periodic = intAttr(ref, "periodic", 1);
  FailureOr<int64_t> outputType =
      intAttr(ref, "output_datatype", onnx::TensorProto::FLOAT);
  if (failed(periodic) || failed(outputType))
    return failure();
  std::optional<DType> dtype = getDTypeFromOnnx(*outputType);
  if (!dtype || !isSupportedNodeType(*dtype))
    return emitError(ref) << "unsupported element type "
                          << getOnnxDataTypeName(*outputType)
                          << " of attribute 'output_datatype'; supported: "
                             "float32, int64, int32, bool";
  StringRef op = ref.node->op_type();
  double a0 = 0.5, a1 = 0.5, a2 = 0.0;
  if (op == "HammingWindow") {
    a0 = 25.0 / 46.0;
    a1 = 1.0 - a0;
  } else if (op == "BlackmanWindow") {
    a0 = 0.42;
    a1 = 0.5;
    a2 = 0.08;
  }
  double n = static_cast<double>(*periodic ? size : size - 1);
  ConstTensor window;
  window.dtype = DType::F32;
  window.shape = {size};
  for (int64_t i = 0; i < size; ++i) {
    double phase = n > 0 ? 2.0 * M_PI * static_cast<double>(i) / n : 0.0;
    // float32 arithmetic as ONNX's reference computes it.
    window.floats.push_back(static_cast<float>(a0 - a1 * std::cos(phase) +
                                               a2 * std::cos(2.0 * phase)));
  }
  return setKnownOutput(ref, 0, foldCast(window, *dtype), loc);
}
