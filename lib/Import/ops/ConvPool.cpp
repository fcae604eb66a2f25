//===- ConvPool.cpp - convolution and pooling ----------------------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Importers of Conv, MaxPool, AveragePool and GlobalAveragePool, and their
// registration by opset.
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

void OnnxImporter::registerConvPoolImporters(OpImporterRegistry &registry) {
  registry.add("Conv", 1, &OnnxImporter::importConv);
  registry.add("MaxPool", 1, &OnnxImporter::importPool);
  registry.add("AveragePool", 1, &OnnxImporter::importPool);
  registry.add("GlobalAveragePool", 1, &OnnxImporter::importUnary);
}

/// Explicit pads of a sliding window over `inputShape` (spatial sizes) for
/// ONNX `autoPad`; `pads` holds the NOTSET pads (begin..., end...).
static FailureOr<SmallVector<int64_t>>
resolvePads(StringRef autoPad, ArrayRef<int64_t> inputShape,
            ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
            ArrayRef<int64_t> dilations, ArrayRef<int64_t> pads) {
  size_t n = inputShape.size();
  if (autoPad == "NOTSET")
    return SmallVector<int64_t>(pads);
  SmallVector<int64_t> result(2 * n, 0);
  if (autoPad == "VALID")
    return result;
  if (autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER")
    return failure();
  for (size_t i = 0; i < n; ++i) {
    int64_t out = (inputShape[i] + strides[i] - 1) / strides[i];
    int64_t span = (kernel[i] - 1) * dilations[i] + 1;
    int64_t total =
        std::max<int64_t>(0, (out - 1) * strides[i] + span - inputShape[i]);
    int64_t small = total / 2, large = total - small;
    result[i] = autoPad == "SAME_UPPER" ? small : large;
    result[n + i] = autoPad == "SAME_UPPER" ? large : small;
  }
  return result;
}

LogicalResult OnnxImporter::importConv(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 2, 3,
                       {"auto_pad", "dilations", "group", "kernel_shape",
                        "pads", "strides"})) ||
      failed(checkInputType(ref, 0, kFloat)))
    return failure();
  Value x = input(ref, 0), w = input(ref, 1);
  auto xType = cast<RankedTensorType>(x.getType());
  auto wType = cast<RankedTensorType>(w.getType());
  if (xType.getRank() < 3 || wType.getRank() != xType.getRank())
    return emitError(ref) << "expected input and weight of the same rank >= 3, "
                             "got "
                          << typeToString(xType) << " and "
                          << typeToString(wType);
  size_t n = xType.getRank() - 2;
  SmallVector<int64_t> ones(n, 1), zeros(2 * n, 0);
  ArrayRef<int64_t> kernel = wType.getShape().drop_front(2);
  FailureOr<SmallVector<int64_t>> kernelAttr =
      intsAttr(ref, "kernel_shape", kernel);
  FailureOr<SmallVector<int64_t>> strides = intsAttr(ref, "strides", ones);
  FailureOr<SmallVector<int64_t>> dilations = intsAttr(ref, "dilations", ones);
  FailureOr<SmallVector<int64_t>> pads = intsAttr(ref, "pads", zeros);
  FailureOr<int64_t> group = intAttr(ref, "group", 1);
  FailureOr<std::string> autoPad = stringAttr(ref, "auto_pad", "NOTSET");
  if (failed(kernelAttr) || failed(strides) || failed(dilations) ||
      failed(pads) || failed(group) || failed(autoPad))
    return failure();
  if (ArrayRef<int64_t>(*kernelAttr) != kernel)
    return emitError(ref) << "kernel_shape " << formatShape(*kernelAttr)
                          << " does not match the weight's "
                          << formatShape(kernel);
  if (strides->size() != n || dilations->size() != n || pads->size() != 2 * n)
    return emitError(ref) << "expected " << n << " strides and dilations and "
                          << 2 * n << " pads, got " << strides->size() << ", "
                          << dilations->size() << " and " << pads->size();
  FailureOr<SmallVector<int64_t>> explicitPads =
      resolvePads(*autoPad, xType.getShape().drop_front(2), kernel, *strides,
                  *dilations, *pads);
  if (failed(explicitPads))
    return emitError(ref) << "unsupported auto_pad '" << *autoPad << "'";
  ConvOp::Properties props;
  props.setStrides(builder.getDenseI64ArrayAttr(*strides));
  props.setPads(builder.getDenseI64ArrayAttr(*explicitPads));
  props.setDilations(builder.getDenseI64ArrayAttr(*dilations));
  props.setGroup(builder.getI64IntegerAttr(*group));
  SmallVector<Value> operands = {x, w};
  if (hasInput(ref, 2))
    operands.push_back(input(ref, 2));
  FailureOr<Value> result = createOp<ConvOp>(ref, loc, operands, props);
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

LogicalResult OnnxImporter::importPool(const NodeRef &ref, Location loc) {
  bool isMax = ref.node->op_type() == "MaxPool";
  SmallVector<StringRef> allowed = {"auto_pad",     "ceil_mode", "dilations",
                                    "kernel_shape", "pads",      "strides"};
  allowed.push_back(isMax ? "storage_order" : "count_include_pad");
  if (failed(checkNode(ref, 1, 1, allowed, isMax ? 2 : 1)))
    return failure();
  if (isMax && ref.node->output_size() > 1 && !ref.node->output(1).empty())
    return emitError(ref) << "the Indices output ('" << ref.node->output(1)
                          << "') is unsupported";
  if (failed(checkInputType(ref, 0, kFloat)))
    return failure();
  Value x = input(ref, 0);
  auto xType = cast<RankedTensorType>(x.getType());
  if (xType.getRank() < 3)
    return emitError(ref) << "expected an input of rank >= 3, got "
                          << typeToString(xType);
  size_t n = xType.getRank() - 2;
  SmallVector<int64_t> ones(n, 1), zeros(2 * n, 0);
  if (!findAttr(ref, "kernel_shape"))
    return emitError(ref) << "attribute 'kernel_shape' is required";
  FailureOr<SmallVector<int64_t>> kernel = intsAttr(ref, "kernel_shape", {});
  FailureOr<SmallVector<int64_t>> strides = intsAttr(ref, "strides", ones);
  FailureOr<SmallVector<int64_t>> dilations = intsAttr(ref, "dilations", ones);
  FailureOr<SmallVector<int64_t>> pads = intsAttr(ref, "pads", zeros);
  FailureOr<int64_t> ceilMode = intAttr(ref, "ceil_mode", 0);
  FailureOr<int64_t> countIncludePad = intAttr(ref, "count_include_pad", 0);
  FailureOr<std::string> autoPad = stringAttr(ref, "auto_pad", "NOTSET");
  if (failed(kernel) || failed(strides) || failed(dilations) || failed(pads) ||
      failed(ceilMode) || failed(countIncludePad) || failed(autoPad))
    return failure();
  if (kernel->size() != n || strides->size() != n || dilations->size() != n ||
      pads->size() != 2 * n)
    return emitError(ref) << "expected " << n
                          << " kernel sizes, strides and dilations and "
                          << 2 * n << " pads, got " << kernel->size() << ", "
                          << strides->size() << ", " << dilations->size()
                          << " and " << pads->size();
  FailureOr<SmallVector<int64_t>> explicitPads =
      resolvePads(*autoPad, xType.getShape().drop_front(2), *kernel, *strides,
                  *dilations, *pads);
  if (failed(explicitPads))
    return emitError(ref) << "unsupported auto_pad '" << *autoPad << "'";
  auto fill = [&](auto &props) {
    props.setKernelShape(builder.getDenseI64ArrayAttr(*kernel));
    props.setStrides(builder.getDenseI64ArrayAttr(*strides));
    props.setPads(builder.getDenseI64ArrayAttr(*explicitPads));
    props.setDilations(builder.getDenseI64ArrayAttr(*dilations));
    props.setCeilMode(builder.getBoolAttr(*ceilMode != 0));
    props.setCountIncludePad(builder.getBoolAttr(*countIncludePad != 0));
  };
  FailureOr<Value> result = failure();
  if (isMax) {
    MaxPoolOp::Properties props;
    fill(props);
    result = createOp<MaxPoolOp>(ref, loc, x, props);
  } else {
    AveragePoolOp::Properties props;
    fill(props);
    result = createOp<AveragePoolOp>(ref, loc, x, props);
  }
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}
