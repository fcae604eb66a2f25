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
  registry.add("GlobalMaxPool", 1, &OnnxImporter::importGlobalMaxPool);
  registry.add("ConvTranspose", 1, &OnnxImporter::importConvTranspose);
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
  FailureOr<Value> result =
      buildConv(ref, loc, input(ref, 0), input(ref, 1), input(ref, 2));
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

FailureOr<Value> OnnxImporter::buildConv(const NodeRef &ref, Location loc,
                                         Value x, Value w, Value bias) {
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
  if (bias)
    operands.push_back(bias);
  return createOp<ConvOp>(ref, loc, operands, props);
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

/// GlobalMaxPool: the maximum over the spatial dimensions, kept with size 1.
LogicalResult OnnxImporter::importGlobalMaxPool(const NodeRef &ref,
                                                Location loc) {
  if (failed(checkNode(ref, 1, 1, {})) ||
      failed(checkInputType(ref, 0, kFloat)))
    return failure();
  Value x = input(ref, 0);
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  if (rank < 3)
    return emitError(ref) << "input must have rank >= 3 (N, C, spatial...), "
                             "got rank "
                          << rank;
  ReduceMaxOp::Properties props;
  props.setAxes(builder.getDenseI64ArrayAttr(
      llvm::to_vector(llvm::seq<int64_t>(2, rank))));
  props.setKeepdims(builder.getBoolAttr(true));
  FailureOr<Value> result = createOp<ReduceMaxOp>(ref, loc, x, props);
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

/// ConvTranspose as the convolution it is the gradient of: the input with
/// stride - 1 zeros inserted between its elements (a reshape adding a unit
/// dimension after each spatial one, a pad of that dimension, a reshape),
/// padded by dilation * (kernel - 1) - pad (negative: cropped, the end also
/// by output_padding), convolved at stride 1 with the kernel flipped and its
/// channel dimensions swapped per group.
LogicalResult OnnxImporter::importConvTranspose(const NodeRef &ref,
                                                Location loc) {
  if (failed(
          checkNode(ref, 2, 3,
                    {"auto_pad", "dilations", "group", "kernel_shape",
                     "output_padding", "output_shape", "pads", "strides"})) ||
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
  int64_t n = xType.getRank() - 2;
  ArrayRef<int64_t> xShape = xType.getShape(), wShape = wType.getShape();
  ArrayRef<int64_t> kernel = wShape.drop_front(2);
  SmallVector<int64_t> ones(n, 1), zeros(n, 0), zeros2(2 * n, 0);
  FailureOr<SmallVector<int64_t>> kernelAttr =
      intsAttr(ref, "kernel_shape", kernel);
  FailureOr<SmallVector<int64_t>> strides = intsAttr(ref, "strides", ones);
  FailureOr<SmallVector<int64_t>> dilations = intsAttr(ref, "dilations", ones);
  FailureOr<SmallVector<int64_t>> pads = intsAttr(ref, "pads", zeros2);
  FailureOr<SmallVector<int64_t>> outputPadding =
      intsAttr(ref, "output_padding", zeros);
  FailureOr<SmallVector<int64_t>> outputShape =
      intsAttr(ref, "output_shape", {});
  FailureOr<int64_t> group = intAttr(ref, "group", 1);
  FailureOr<std::string> autoPad = stringAttr(ref, "auto_pad", "NOTSET");
  if (failed(kernelAttr) || failed(strides) || failed(dilations) ||
      failed(pads) || failed(outputPadding) || failed(outputShape) ||
      failed(group) || failed(autoPad))
    return failure();
  if (ArrayRef<int64_t>(*kernelAttr) != kernel)
    return emitError(ref) << "kernel_shape " << formatShape(*kernelAttr)
                          << " does not match the weight's "
                          << formatShape(kernel);
  if ((int64_t)strides->size() != n || (int64_t)dilations->size() != n ||
      (int64_t)pads->size() != 2 * n || (int64_t)outputPadding->size() != n)
    return emitError(ref) << "expected " << n
                          << " strides, dilations and output_padding and "
                          << 2 * n << " pads";
  int64_t channels = xShape[1], g = *group;
  if (g <= 0 || channels % g != 0 || wShape[0] != channels)
    return emitError(ref) << "weight of shape " << formatShape(wShape)
                          << " does not match " << channels
                          << " input channels in " << g << " groups";
  if (*autoPad != "NOTSET" && *autoPad != "VALID" && *autoPad != "SAME_UPPER" &&
      *autoPad != "SAME_LOWER")
    return emitError(ref) << "unsupported auto_pad '" << *autoPad << "'";
  // The pads, from the output shape when it is given (or implied by SAME).
  SmallVector<int64_t> begin(n), end(n);
  bool fromShape = !outputShape->empty() || *autoPad == "SAME_UPPER" ||
                   *autoPad == "SAME_LOWER";
  if (!outputShape->empty() && (int64_t)outputShape->size() != n &&
      (int64_t)outputShape->size() != n + 2)
    return emitError(ref) << "output_shape " << formatShape(*outputShape)
                          << " must have " << n << " spatial sizes";
  for (int64_t i = 0; i < n; ++i) {
    int64_t s = (*strides)[i], d = (*dilations)[i], k = kernel[i];
    if (s <= 0 || d <= 0)
      return emitError(ref) << "strides and dilations must be positive";
    int64_t full =
        s * (xShape[2 + i] - 1) + (*outputPadding)[i] + (k - 1) * d + 1;
    if (fromShape) {
      int64_t target = outputShape->empty()
                           ? xShape[2 + i] * s
                           : (*outputShape)[outputShape->size() - n + i];
      // ONNX halves the total with floor division: a negative total (an
      // output larger than the full one) grows the end first.
      int64_t total = full - target;
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      bool upper = *autoPad == "SAME_UPPER";
      begin[i] = upper ? half : total - half;
      end[i] = upper ? total - half : half;
    } else if (*autoPad == "VALID") {
      begin[i] = end[i] = 0;
    } else {
      begin[i] = (*pads)[i];
      end[i] = (*pads)[n + i];
    }
  }

  // Zeros between the input's elements: [N, C, D1, 1, D2, 1, ...] padded to
  // [N, C, D1, s1, D2, s2, ...], viewed as [N, C, D1 s1, D2 s2, ...].
  Value dilated = x;
  if (llvm::any_of(*strides, [](int64_t s) { return s != 1; })) {
    SmallVector<int64_t> interleaved = {xShape[0], xShape[1]};
    SmallVector<int64_t> spread = {xShape[0], xShape[1]};
    SmallVector<int64_t> flat = {xShape[0], xShape[1]};
    SmallVector<int64_t> zeroPads(2 * (2 + 2 * n), 0);
    for (int64_t i = 0; i < n; ++i) {
      interleaved.append({xShape[2 + i], 1});
      spread.append({xShape[2 + i], (*strides)[i]});
      flat.push_back(xShape[2 + i] * (*strides)[i]);
      zeroPads[(2 + 2 * n) + 2 + 2 * i + 1] = (*strides)[i] - 1;
    }
    PadOp::Properties props;
    props.setPads(builder.getDenseI64ArrayAttr(zeroPads));
    props.setMode(builder.getStringAttr("constant"));
    FailureOr<Value> padded =
        createOp<PadOp>(ref, loc, createReshape(loc, x, interleaved), props);
    if (failed(padded))
      return failure();
    dilated = createReshape(loc, *padded, flat);
  }
  // Border: dilation * (kernel - 1) - pad, less the stride - 1 zeros after
  // the last element, plus output_padding at the end.
  SmallVector<int64_t> border(2 * (2 + n), 0);
  bool anyBorder = false;
  for (int64_t i = 0; i < n; ++i) {
    int64_t reach = (*dilations)[i] * (kernel[i] - 1);
    border[2 + i] = reach - begin[i];
    border[(2 + n) + 2 + i] =
        reach - end[i] + (*outputPadding)[i] - ((*strides)[i] - 1);
    anyBorder |= border[2 + i] != 0 || border[(2 + n) + 2 + i] != 0;
  }
  if (anyBorder) {
    PadOp::Properties props;
    props.setPads(builder.getDenseI64ArrayAttr(border));
    props.setMode(builder.getStringAttr("constant"));
    FailureOr<Value> padded = createOp<PadOp>(ref, loc, dilated, props);
    if (failed(padded))
      return failure();
    dilated = *padded;
  }
  // Kernel [C, M/g, K...] -> [g, C/g, M/g, K...] -> [g, M/g, C/g, K...] ->
  // [M, C/g, K...], flipped along every spatial dimension.
  int64_t cPerGroup = channels / g, mPerGroup = wShape[1];
  SmallVector<int64_t> grouped = {g, cPerGroup, mPerGroup};
  llvm::append_range(grouped, kernel);
  SmallVector<int64_t> perm = {0, 2, 1};
  for (int64_t i = 0; i < n; ++i)
    perm.push_back(3 + i);
  TransposeOp::Properties transpose;
  transpose.setPerm(builder.getDenseI64ArrayAttr(perm));
  FailureOr<Value> swapped = createOp<TransposeOp>(
      ref, loc, createReshape(loc, w, grouped), transpose);
  if (failed(swapped))
    return failure();
  SmallVector<int64_t> convShape = {g * mPerGroup, cPerGroup};
  llvm::append_range(convShape, kernel);
  Value kernelValue = createReshape(loc, *swapped, convShape);
  SmallVector<int64_t> starts = {0, 0}, steps = {1, 1};
  for (int64_t k : kernel) {
    starts.push_back(k - 1);
    steps.push_back(-1);
  }
  Value flipped = SliceOp::create(
      builder, loc, cast<RankedTensorType>(kernelValue.getType()), kernelValue,
      builder.getDenseI64ArrayAttr(starts),
      builder.getDenseI64ArrayAttr(steps));

  ConvOp::Properties props;
  props.setStrides(builder.getDenseI64ArrayAttr(ones));
  props.setPads(builder.getDenseI64ArrayAttr(zeros2));
  props.setDilations(builder.getDenseI64ArrayAttr(*dilations));
  props.setGroup(builder.getI64IntegerAttr(g));
  SmallVector<Value> operands = {dilated, flipped};
  if (hasInput(ref, 2))
    operands.push_back(input(ref, 2));
  FailureOr<Value> result = createOp<ConvOp>(ref, loc, operands, props);
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}
