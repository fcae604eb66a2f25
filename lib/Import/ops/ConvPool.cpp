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
  registry.add("MaxUnpool", 9, &OnnxImporter::importMaxUnpool);
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
  if (failed(checkInputType(ref, 0,
                            isMax ? ArrayRef<DType>(kFloatOr8Bit)
                                  : ArrayRef<DType>(kFloat))))
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
  FailureOr<int64_t> storageOrder = intAttr(ref, "storage_order", 0);
  if (failed(kernel) || failed(strides) || failed(dilations) || failed(pads) ||
      failed(ceilMode) || failed(countIncludePad) || failed(autoPad) ||
      failed(storageOrder))
    return failure();
  if (*storageOrder != 0 && *storageOrder != 1)
    return emitError(ref) << "attribute 'storage_order' must be 0 or 1, got "
                          << *storageOrder;
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
    if (succeeded(result) && isOutputUsed(ref, 1)) {
      FailureOr<Value> indices =
          importMaxPoolIndices(ref, loc, x, *result, props, *storageOrder == 1);
      if (failed(indices) || failed(setOutput(ref, 1, *indices)))
        return failure();
    }
  } else {
    AveragePoolOp::Properties props;
    fill(props);
    result = createOp<AveragePoolOp>(ref, loc, x, props);
  }
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

/// MaxPool's Indices output: per window, the flat index into X (batch and
/// channel included, pads excluded; spatial dimensions row-major, or
/// column-major with storage_order 1) of its first maximum in window order.
/// Built from ops with their own rules: for each kernel offset, the strided
/// view of X padded with the lowest value is compared with Y (positions in
/// the padding never match), and from the last offset to the first a
/// `where` takes the offset's index when it matches. The index of offset k
/// is one constant of Y's shape (offset 0's) plus a scalar, so the batch
/// and channel dimensions split like Y's.
FailureOr<Value>
OnnxImporter::importMaxPoolIndices(const NodeRef &ref, Location loc, Value x,
                                   Value y, const MaxPoolOp::Properties &props,
                                   bool columnMajor) {
  auto xType = cast<RankedTensorType>(x.getType());
  ArrayRef<int64_t> xs = xType.getShape();
  ArrayRef<int64_t> ys = cast<RankedTensorType>(y.getType()).getShape();
  ArrayRef<int64_t> kernel = props.getKernelShape().asArrayRef();
  ArrayRef<int64_t> strides = props.getStrides().asArrayRef();
  ArrayRef<int64_t> dilations = props.getDilations().asArrayRef();
  ArrayRef<int64_t> pads = props.getPads().asArrayRef();
  int64_t spatial = kernel.size(), rank = xs.size();
  Type element = xType.getElementType();
  Type i64 = builder.getI64Type();

  // Flat strides of X's dimensions as Indices counts them.
  SmallVector<int64_t> flat(rank, 1);
  int64_t spatialSize = 1;
  for (int64_t i = 0; i < spatial; ++i)
    spatialSize *= xs[2 + i];
  flat[1] = spatialSize;
  flat[0] = spatialSize * xs[1];
  for (int64_t i = 0, step = 1; i < spatial; ++i) {
    int64_t d = columnMajor ? 2 + i : rank - 1 - i;
    flat[d] = step;
    step *= xs[d];
  }

  // X padded with the lowest value, far enough for every strided view.
  SmallVector<int64_t> padAll(2 * rank, 0), paddedShape(xs);
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t need =
        (ys[2 + i] - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1;
    padAll[2 + i] = pads[i];
    padAll[rank + 2 + i] = std::max<int64_t>(0, need - xs[2 + i] - pads[i]);
    paddedShape[2 + i] += padAll[2 + i] + padAll[rank + 2 + i];
  }
  double lowest = -std::numeric_limits<double>::infinity();
  if (auto intType = dyn_cast<IntegerType>(element))
    lowest =
        intType.isUnsigned() ? 0.0 : -std::ldexp(1.0, intType.getWidth() - 1);
  Value padded = PadOp::create(builder, loc, xType.clone(paddedShape), x,
                               createScalarConstant(loc, element, lowest),
                               builder.getDenseI64ArrayAttr(padAll),
                               builder.getStringAttr("constant"));

  // The index of offset 0 at every output position, and the validity of
  // each offset's positions: constants of Y's shape, and ops per kernel
  // offset, within bounds.
  int64_t count = ShapedType::getNumElements(ys);
  int64_t offsets = 1;
  for (int64_t k : kernel)
    offsets *= k;
  constexpr int64_t kMaxIndexElements = int64_t(1) << 26, kMaxOffsets = 4096;
  if (count > kMaxIndexElements || offsets > kMaxOffsets)
    return emitError(ref) << "the Indices output is supported up to "
                          << kMaxIndexElements << " elements and "
                          << kMaxOffsets << " kernel positions, got " << count
                          << " and " << offsets;
  auto indexType = RankedTensorType::get(ys, i64);
  SmallVector<int64_t> base(count);
  SmallVector<int64_t> position(rank, 0);
  for (int64_t e = 0; e < count; ++e) {
    for (int64_t d = rank - 1, rest = e; d >= 0; --d) {
      position[d] = rest % ys[d];
      rest /= ys[d];
    }
    int64_t index = position[0] * flat[0] + position[1] * flat[1];
    for (int64_t i = 0; i < spatial; ++i)
      index += (position[2 + i] * strides[i] - pads[i]) * flat[2 + i];
    base[e] = index;
  }
  Value baseIndex =
      ConstantOp::create(builder, loc, indexType,
                         cast<ElementsAttr>(DenseElementsAttr::get(
                             indexType, ArrayRef<int64_t>(base))));

  Value result;
  for (int64_t linear = offsets - 1; linear >= 0; --linear) {
    SmallVector<int64_t> offset(spatial);
    for (int64_t i = spatial - 1, rest = linear; i >= 0; --i) {
      offset[i] = rest % kernel[i];
      rest /= kernel[i];
    }
    int64_t delta = 0;
    for (int64_t i = 0; i < spatial; ++i)
      delta += offset[i] * dilations[i] * flat[2 + i];
    FailureOr<Value> index = createOp<AddOp>(
        ref, loc, {baseIndex, createScalarConstant(loc, i64, delta)});
    if (failed(index))
      return failure();
    if (!result) {
      result = *index;
      continue;
    }
    SmallVector<int64_t> starts(rank, 0), steps(rank, 1);
    for (int64_t i = 0; i < spatial; ++i) {
      starts[2 + i] = offset[i] * dilations[i];
      steps[2 + i] = strides[i];
    }
    Value view = SliceOp::create(builder, loc, xType.clone(ys), padded,
                                 builder.getDenseI64ArrayAttr(starts),
                                 builder.getDenseI64ArrayAttr(steps));
    FailureOr<Value> hit = createOp<EqualOp>(ref, loc, {view, y});
    if (failed(hit))
      return failure();
    // Positions of this offset that fall in the padding never match.
    SmallVector<bool> valid(count, true);
    bool anyPadding = false;
    for (int64_t e = 0; e < count; ++e) {
      for (int64_t d = rank - 1, rest = e; d >= 0; --d) {
        position[d] = rest % ys[d];
        rest /= ys[d];
      }
      for (int64_t i = 0; i < spatial; ++i) {
        int64_t at =
            position[2 + i] * strides[i] + offset[i] * dilations[i] - pads[i];
        if (at < 0 || at >= xs[2 + i])
          valid[e] = false;
      }
      anyPadding |= !valid[e];
    }
    if (anyPadding) {
      auto maskType = RankedTensorType::get(ys, builder.getI1Type());
      Value mask = ConstantOp::create(
          builder, loc, maskType,
          cast<ElementsAttr>(DenseElementsAttr::get(maskType, valid)));
      hit = createOp<AndOp>(ref, loc, {*hit, mask});
      if (failed(hit))
        return failure();
    }
    FailureOr<Value> chosen =
        createOp<WhereOp>(ref, loc, {*hit, *index, result});
    if (failed(chosen))
      return failure();
    result = *chosen;
  }
  return result;
}

/// MaxUnpool: zeros of the unpooled shape ((in - 1) * stride + kernel -
/// pads) with X's values at the flat indices I (MaxPool's Indices, which
/// address that shape). A larger output_shape (known at compile time)
/// appends zeros at the end of each spatial dimension, as ONNX's reference
/// does (test_maxunpool_export_with_output_shape). Per batch and channel the
/// indices are
/// made local (minus (n * C + c) * spatial size, a constant), and a
/// scatter_elements along the flattened spatial dimension of [N, C, HW...]
/// places the values, so batch and channels split.
LogicalResult OnnxImporter::importMaxUnpool(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 2, 3, {"kernel_shape", "pads", "strides"})) ||
      failed(checkInputType(ref, 0, kFloat)) ||
      failed(checkInputType(ref, 1, kIndices)))
    return failure();
  Value x = input(ref, 0), indices = input(ref, 1);
  auto xType = cast<RankedTensorType>(x.getType());
  auto iType = cast<RankedTensorType>(indices.getType());
  if (xType.getRank() < 3)
    return emitError(ref) << "expected an input of rank >= 3, got "
                          << typeToString(xType);
  if (iType.getShape() != xType.getShape())
    return emitError(ref) << "input 1 ('I') must have X's shape "
                          << formatShape(xType.getShape()) << ", got "
                          << formatShape(iType.getShape());
  size_t n = xType.getRank() - 2;
  if (!findAttr(ref, "kernel_shape"))
    return emitError(ref) << "attribute 'kernel_shape' is required";
  SmallVector<int64_t> ones(n, 1), zeros(2 * n, 0);
  FailureOr<SmallVector<int64_t>> kernel = intsAttr(ref, "kernel_shape", {});
  FailureOr<SmallVector<int64_t>> strides = intsAttr(ref, "strides", ones);
  FailureOr<SmallVector<int64_t>> pads = intsAttr(ref, "pads", zeros);
  if (failed(kernel) || failed(strides) || failed(pads))
    return failure();
  if (kernel->size() != n || strides->size() != n || pads->size() != 2 * n)
    return emitError(ref) << "expected " << n
                          << " kernel sizes and strides and " << 2 * n
                          << " pads, got " << kernel->size() << ", "
                          << strides->size() << " and " << pads->size();
  ArrayRef<int64_t> xs = xType.getShape();
  SmallVector<int64_t> shape = {xs[0], xs[1]};
  for (size_t i = 0; i < n; ++i) {
    if ((*kernel)[i] < 1 || (*strides)[i] < 1)
      return emitError(ref) << "kernel sizes and strides must be positive";
    shape.push_back((xs[2 + i] - 1) * (*strides)[i] + (*kernel)[i] -
                    (*pads)[i] - (*pads)[n + i]);
  }
  SmallVector<int64_t> outputShape = shape;
  if (hasInput(ref, 2)) {
    FailureOr<SmallVector<int64_t>> given =
        requireKnownInts(ref, 2, "output_shape");
    if (failed(given))
      return failure();
    bool fits = given->size() == xs.size() && (*given)[0] == xs[0] &&
                (*given)[1] == xs[1];
    for (size_t i = 0; fits && i < n; ++i)
      fits = (*given)[2 + i] >= shape[2 + i];
    if (!fits)
      return emitError(ref)
             << "input 2 ('output_shape') must be [" << xs[0] << ", " << xs[1]
             << ", spatial sizes...] at least the unpooled "
                "shape "
             << formatShape(shape) << ", got " << formatShape(*given);
    outputShape = *given;
  }
  int64_t spatialSize = 1;
  for (size_t i = 0; i < n; ++i) {
    if (shape[2 + i] < 1)
      return emitError(ref) << "the output shape " << formatShape(shape)
                            << " has an empty spatial dimension";
    spatialSize *= shape[2 + i];
  }
  int64_t inputSpatial = 1;
  for (size_t i = 0; i < n; ++i)
    inputSpatial *= xs[2 + i];

  // (n * C + c) * spatialSize, broadcast over the spatial dimensions.
  SmallVector<int64_t> baseShape = {xs[0], xs[1]};
  baseShape.append(n, 1);
  auto baseType = RankedTensorType::get(baseShape, iType.getElementType());
  SmallVector<APInt> base;
  unsigned width = iType.getElementType().getIntOrFloatBitWidth();
  for (int64_t e = 0; e < xs[0] * xs[1]; ++e)
    base.push_back(APInt(width, e * spatialSize, /*isSigned=*/true));
  Value baseIndex = ConstantOp::create(
      builder, loc, baseType,
      cast<ElementsAttr>(DenseElementsAttr::get(baseType, base)));
  FailureOr<Value> local = createOp<SubOp>(ref, loc, {indices, baseIndex});
  if (failed(local))
    return failure();
  Value flatIndices = createReshape(loc, *local, {xs[0], xs[1], inputSpatial});
  Value flatValues = createReshape(loc, x, {xs[0], xs[1], inputSpatial});
  Value zero = createScalarConstant(loc, xType.getElementType(), 0.0,
                                    {xs[0], xs[1], spatialSize});
  ScatterElementsOp::Properties props;
  props.setAxis(builder.getI64IntegerAttr(2));
  props.setReduction(builder.getStringAttr("none"));
  FailureOr<Value> scattered = createOp<ScatterElementsOp>(
      ref, loc, {zero, flatIndices, flatValues}, props);
  if (failed(scattered))
    return failure();
  Value result = createReshape(loc, *scattered, shape);
  if (outputShape != shape) {
    SmallVector<int64_t> padAll(2 * xs.size(), 0);
    for (size_t i = 0; i < n; ++i)
      padAll[xs.size() + 2 + i] = outputShape[2 + i] - shape[2 + i];
    result = PadOp::create(builder, loc, xType.clone(outputShape), result,
                           Value(), builder.getDenseI64ArrayAttr(padAll),
                           builder.getStringAttr("constant"));
  }
  return setOutput(ref, 0, result);
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
