//===- Quantization.cpp - linear quantization operators -------------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Importers of the ONNX linear quantization operators on int8/uint8 tensors.
// QuantizeLinear and DequantizeLinear are autopar ops. The others are
// compositions, so that each part keeps its own sharding rule and cost:
// MatMulInteger and ConvInteger widen their operands to i32, subtract the
// zero points and run the i32 MatMul or Conv (the contraction rules, i32
// accumulation); QLinearMatMul and QLinearConv add the rescaling by
// `a_scale * b_scale / y_scale` (a per-row or per-channel scale broadcast
// along its dimension) and a QuantizeLinear of scale 1 onto the output zero
// point; DynamicQuantizeLinear computes scale and zero point from the
// input's range (reduce_min/reduce_max with 0, as ONNX defines it) and
// quantizes with them.
//
//===----------------------------------------------------------------------===//

#include "../Importer.h"

#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::importer;

using NodeRef = OnnxImporter::NodeRef;

void OnnxImporter::registerQuantizationImporters(OpImporterRegistry &registry) {
  registry.add("QuantizeLinear", 10, &OnnxImporter::importQuantizeLinear);
  registry.add("DequantizeLinear", 10, &OnnxImporter::importDequantizeLinear);
  registry.add("DynamicQuantizeLinear", 11,
               &OnnxImporter::importDynamicQuantizeLinear);
  registry.add("MatMulInteger", 10, &OnnxImporter::importMatMulInteger);
  registry.add("ConvInteger", 10, &OnnxImporter::importConvInteger);
  registry.add("QLinearMatMul", 10, &OnnxImporter::importQLinearMatMul);
  registry.add("QLinearConv", 10, &OnnxImporter::importQLinearConv);
}

bool OnnxImporter::acceptsQuantizedTypes(StringRef opType) {
  // Cast converts to and from them (createCast in the lowering); the views
  // and transposes move their bytes without arithmetic; the integer
  // arithmetic, comparisons and max pooling lower with the unsigned arith
  // forms on ui8 (the scalar helpers of the lowering read the signedness
  // from the element type). Each importer still checks its own types.
  return llvm::StringSwitch<bool>(opType)
      .Cases({"Cast", "Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze",
              "Transpose", "QuantizeLinear", "DequantizeLinear",
              "DynamicQuantizeLinear", "MatMulInteger", "ConvInteger",
              "QLinearMatMul", "QLinearConv"},
             true)
      .Cases({"Add", "Sub", "Mul", "Div", "Mod", "Min", "Max", "Clip", "Equal",
              "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Where",
              "MaxPool", "BitShift"},
             true)
      .Default(false);
}

static int64_t numElements(Value value) {
  return cast<RankedTensorType>(value.getType()).getNumElements();
}

static ArrayRef<int64_t> shapeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getShape();
}

/// Checks that inputs `a` and `b` (both present) have the same element type.
static LogicalResult
checkSameElementType(const NodeRef &ref, Value a, unsigned aIndex, Value b,
                     unsigned bIndex,
                     function_ref<InFlightDiagnostic()> emitError) {
  Type aType = cast<RankedTensorType>(a.getType()).getElementType();
  Type bType = cast<RankedTensorType>(b.getType()).getElementType();
  if (aType == bType)
    return success();
  return emitError() << "input " << bIndex << " ('" << ref.node->input(bIndex)
                     << "') must have the element type of input " << aIndex
                     << " (" << typeToString(aType) << "), got "
                     << typeToString(bType);
}

/// The shape a quantization parameter (scale or zero point) of input
/// `index` takes to broadcast against an operand: a scalar when it has one
/// element, else `perAxisShape` when it is 1-D of `size` elements; an error
/// naming `what` ("per-row", "per-column", "per-channel") otherwise.
static FailureOr<SmallVector<int64_t>>
getParameterShape(const NodeRef &ref, unsigned index, Value parameter,
                  int64_t size, ArrayRef<int64_t> perAxisShape, StringRef what,
                  function_ref<InFlightDiagnostic()> emitError) {
  if (numElements(parameter) == 1)
    return SmallVector<int64_t>();
  ArrayRef<int64_t> shape = shapeOf(parameter);
  if (shape.size() == 1 && shape[0] == size && !perAxisShape.empty())
    return SmallVector<int64_t>(perAxisShape);
  InFlightDiagnostic diag = emitError();
  diag << "input " << index << " ('" << ref.node->input(index)
       << "') must have one element";
  if (!perAxisShape.empty())
    diag << " or " << size << " (" << what << ")";
  return diag << ", got shape " << formatShape(shape);
}

//===----------------------------------------------------------------------===//
// QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear
//===----------------------------------------------------------------------===//

/// Reads `axis` and checks `scale` and `zeroPoint` of a (de)quantization of
/// `x`: one element each, or 1-D of `x`'s size along `axis`.
static FailureOr<int64_t> getQuantizationAxis(
    const NodeRef &ref, Value x, Value scale, Value zeroPoint,
    FailureOr<int64_t> axis,
    function_ref<FailureOr<int64_t>(int64_t, int64_t)> normalize,
    function_ref<InFlightDiagnostic()> emitError) {
  if (failed(axis))
    return failure();
  if (shapeOf(scale) != shapeOf(zeroPoint))
    return emitError() << "scale and zero point must have the same shape, got "
                       << formatShape(shapeOf(scale)) << " and "
                       << formatShape(shapeOf(zeroPoint));
  if (numElements(scale) == 1 && shapeOf(scale).size() <= 1)
    return int64_t(1);
  ArrayRef<int64_t> xShape = shapeOf(x);
  FailureOr<int64_t> normalized = normalize(*axis, xShape.size());
  if (failed(normalized))
    return failure();
  if (shapeOf(scale).size() != 1 || shapeOf(scale)[0] != xShape[*normalized])
    return emitError() << "a per-axis scale must be 1-D of size "
                       << xShape[*normalized] << " (dimension " << *normalized
                       << " of the input), got shape "
                       << formatShape(shapeOf(scale));
  return *normalized;
}

LogicalResult OnnxImporter::importQuantizeLinear(const NodeRef &ref,
                                                 Location loc) {
  if (failed(checkNode(ref, 2, 3, {"axis"})) ||
      failed(checkInputType(ref, 0, {DType::F32, DType::I32})) ||
      failed(checkInputType(ref, 1, kFloat)) ||
      failed(checkInputType(ref, 2, kQuantized)))
    return failure();
  Value x = input(ref, 0), scale = input(ref, 1);
  // Without a zero point the result is uint8 with zero point 0.
  Value zeroPoint =
      hasInput(ref, 2)
          ? input(ref, 2)
          : createScalarConstant(
                loc, IntegerType::get(&ctx, 8, IntegerType::Unsigned), 0.0,
                shapeOf(scale));
  auto diag = [&] { return emitError(ref); };
  FailureOr<int64_t> axis = getQuantizationAxis(
      ref, x, scale, zeroPoint, intAttr(ref, "axis", 1),
      [&](int64_t a, int64_t r) { return normalizeAxis(ref, a, r); }, diag);
  if (failed(axis))
    return failure();
  QuantizeLinearOp::Properties props;
  props.setAxis(builder.getI64IntegerAttr(*axis));
  FailureOr<Value> result =
      createOp<QuantizeLinearOp>(ref, loc, {x, scale, zeroPoint}, props);
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

LogicalResult OnnxImporter::importDequantizeLinear(const NodeRef &ref,
                                                   Location loc) {
  if (failed(checkNode(ref, 2, 3, {"axis"})) ||
      failed(checkInputType(ref, 0, {DType::I8, DType::U8, DType::I32})) ||
      failed(checkInputType(ref, 1, kFloat)))
    return failure();
  Value x = input(ref, 0), scale = input(ref, 1);
  Type element = cast<RankedTensorType>(x.getType()).getElementType();
  Value zeroPoint = hasInput(ref, 2) ? input(ref, 2)
                                     : createScalarConstant(loc, element, 0.0,
                                                            shapeOf(scale));
  auto diag = [&] { return emitError(ref); };
  if (failed(checkSameElementType(ref, x, 0, zeroPoint, 2, diag)))
    return failure();
  FailureOr<int64_t> axis = getQuantizationAxis(
      ref, x, scale, zeroPoint, intAttr(ref, "axis", 1),
      [&](int64_t a, int64_t r) { return normalizeAxis(ref, a, r); }, diag);
  if (failed(axis))
    return failure();
  DequantizeLinearOp::Properties props;
  props.setAxis(builder.getI64IntegerAttr(*axis));
  FailureOr<Value> result =
      createOp<DequantizeLinearOp>(ref, loc, {x, scale, zeroPoint}, props);
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

/// scale = (max(x_max, 0) - min(x_min, 0)) / 255,
/// zero_point = saturate(round(-min(x_min, 0) / scale)),
/// y = saturate(round(x / scale) + zero_point), all uint8.
LogicalResult OnnxImporter::importDynamicQuantizeLinear(const NodeRef &ref,
                                                        Location loc) {
  if (failed(checkNode(ref, 1, 1, {}, 3)) ||
      failed(checkInputType(ref, 0, kFloat)))
    return failure();
  Value x = input(ref, 0);
  SmallVector<int64_t> axes;
  for (int64_t d = 0; d < (int64_t)shapeOf(x).size(); ++d)
    axes.push_back(d);
  Type f32 = builder.getF32Type();
  Type u8 = IntegerType::get(&ctx, 8, IntegerType::Unsigned);
  auto reduce = [&](auto tag) -> FailureOr<Value> {
    using OpTy = decltype(tag);
    typename OpTy::Properties props;
    props.setAxes(builder.getDenseI64ArrayAttr(axes));
    props.setKeepdims(builder.getBoolAttr(false));
    return createOp<OpTy>(ref, loc, x, props);
  };
  FailureOr<Value> low = reduce(ReduceMinOp());
  FailureOr<Value> high = reduce(ReduceMaxOp());
  if (failed(low) || failed(high))
    return failure();
  Value zero = createScalarConstant(loc, f32, 0.0);
  low = createOp<MinOp>(ref, loc, {*low, zero});
  high = createOp<MaxOp>(ref, loc, {*high, zero});
  if (failed(low) || failed(high))
    return failure();
  FailureOr<Value> range = createOp<SubOp>(ref, loc, {*high, *low});
  if (failed(range))
    return failure();
  FailureOr<Value> scale = createOp<DivOp>(
      ref, loc, {*range, createScalarConstant(loc, f32, 255.0)});
  FailureOr<Value> negLow = createOp<NegOp>(ref, loc, {*low});
  if (failed(scale) || failed(negLow))
    return failure();
  QuantizeLinearOp::Properties props;
  props.setAxis(builder.getI64IntegerAttr(1));
  FailureOr<Value> zeroPoint = createOp<QuantizeLinearOp>(
      ref, loc, {*negLow, *scale, createScalarConstant(loc, u8, 0.0)}, props);
  if (failed(zeroPoint))
    return failure();
  FailureOr<Value> y =
      createOp<QuantizeLinearOp>(ref, loc, {x, *scale, *zeroPoint}, props);
  if (failed(y) || failed(setOutput(ref, 0, *y)))
    return failure();
  if (ref.node->output_size() > 1 && !ref.node->output(1).empty() &&
      failed(setOutput(ref, 1, *scale)))
    return failure();
  if (ref.node->output_size() > 2 && !ref.node->output(2).empty() &&
      failed(setOutput(ref, 2, *zeroPoint)))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Integer contractions
//===----------------------------------------------------------------------===//

FailureOr<Value>
OnnxImporter::buildShiftedI32(const NodeRef &ref, Location loc, Value value,
                              Value zeroPoint,
                              ArrayRef<int64_t> zeroPointShape) {
  Type i32 = builder.getI32Type();
  auto widen = [&](Value v) -> Value {
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getElementType() == i32)
      return v;
    return CastOp::create(builder, loc, type.clone(i32), v);
  };
  Value wide = widen(value);
  if (!zeroPoint)
    return wide;
  Value shift = createReshape(loc, widen(zeroPoint), zeroPointShape);
  return createOp<SubOp>(ref, loc, {wide, shift});
}

FailureOr<Value> OnnxImporter::buildRequantize(const NodeRef &ref, Location loc,
                                               Value real, Value zeroPoint) {
  Value scalarZeroPoint = createReshape(loc, zeroPoint, {});
  QuantizeLinearOp::Properties props;
  props.setAxis(builder.getI64IntegerAttr(1));
  return createOp<QuantizeLinearOp>(
      ref, loc,
      {real, createScalarConstant(loc, builder.getF32Type(), 1.0),
       scalarZeroPoint},
      props);
}

LogicalResult OnnxImporter::importMatMulInteger(const NodeRef &ref,
                                                Location loc) {
  if (failed(checkNode(ref, 2, 4, {})) ||
      failed(checkInputType(ref, 0, kQuantized)) ||
      failed(checkInputType(ref, 1, kQuantized)) ||
      failed(checkInputType(ref, 2, kQuantized)) ||
      failed(checkInputType(ref, 3, kQuantized)))
    return failure();
  Value a = input(ref, 0), b = input(ref, 1);
  Value aZero = input(ref, 2), bZero = input(ref, 3);
  auto diag = [&] { return emitError(ref); };
  ArrayRef<int64_t> aShape = shapeOf(a), bShape = shapeOf(b);
  if (aShape.size() < 2 || bShape.size() < 2)
    return emitError(ref) << "expected operands of rank >= 2, got "
                          << formatShape(aShape) << " and "
                          << formatShape(bShape);
  int64_t m = aShape[aShape.size() - 2], n = bShape.back();
  SmallVector<int64_t> aZeroShape, bZeroShape;
  if (aZero) {
    if (failed(checkSameElementType(ref, a, 0, aZero, 2, diag)))
      return failure();
    FailureOr<SmallVector<int64_t>> shape =
        getParameterShape(ref, 2, aZero, m, {m, 1}, "per row of input 0", diag);
    if (failed(shape))
      return failure();
    aZeroShape = *shape;
  }
  if (bZero) {
    if (failed(checkSameElementType(ref, b, 1, bZero, 3, diag)))
      return failure();
    FailureOr<SmallVector<int64_t>> shape =
        getParameterShape(ref, 3, bZero, n, {n}, "per column of input 1", diag);
    if (failed(shape))
      return failure();
    bZeroShape = *shape;
  }
  FailureOr<Value> aWide = buildShiftedI32(ref, loc, a, aZero, aZeroShape);
  FailureOr<Value> bWide = buildShiftedI32(ref, loc, b, bZero, bZeroShape);
  if (failed(aWide) || failed(bWide))
    return failure();
  FailureOr<Value> result = createOp<MatMulOp>(ref, loc, {*aWide, *bWide});
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

LogicalResult OnnxImporter::importConvInteger(const NodeRef &ref,
                                              Location loc) {
  if (failed(checkNode(ref, 2, 4,
                       {"auto_pad", "dilations", "group", "kernel_shape",
                        "pads", "strides"})) ||
      failed(checkInputType(ref, 0, kQuantized)) ||
      failed(checkInputType(ref, 1, kQuantized)) ||
      failed(checkInputType(ref, 2, kQuantized)) ||
      failed(checkInputType(ref, 3, kQuantized)))
    return failure();
  Value x = input(ref, 0), w = input(ref, 1);
  Value xZero = input(ref, 2), wZero = input(ref, 3);
  auto diag = [&] { return emitError(ref); };
  ArrayRef<int64_t> wShape = shapeOf(w);
  if (wShape.size() < 3)
    return emitError(ref) << "expected a weight of rank >= 3, got "
                          << formatShape(wShape);
  SmallVector<int64_t> xZeroShape, wZeroShape;
  if (xZero) {
    if (failed(checkSameElementType(ref, x, 0, xZero, 2, diag)))
      return failure();
    FailureOr<SmallVector<int64_t>> shape =
        getParameterShape(ref, 2, xZero, 1, {}, "", diag);
    if (failed(shape))
      return failure();
  }
  if (wZero) {
    if (failed(checkSameElementType(ref, w, 1, wZero, 3, diag)))
      return failure();
    SmallVector<int64_t> perChannel(wShape.size(), 1);
    perChannel[0] = wShape[0];
    FailureOr<SmallVector<int64_t>> shape = getParameterShape(
        ref, 3, wZero, wShape[0], perChannel, "per output channel", diag);
    if (failed(shape))
      return failure();
    wZeroShape = *shape;
  }
  FailureOr<Value> xWide = buildShiftedI32(ref, loc, x, xZero, xZeroShape);
  FailureOr<Value> wWide = buildShiftedI32(ref, loc, w, wZero, wZeroShape);
  if (failed(xWide) || failed(wWide))
    return failure();
  FailureOr<Value> result = buildConv(ref, loc, *xWide, *wWide, Value());
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

//===----------------------------------------------------------------------===//
// QLinearMatMul, QLinearConv
//===----------------------------------------------------------------------===//

LogicalResult OnnxImporter::importQLinearMatMul(const NodeRef &ref,
                                                Location loc) {
  if (failed(checkNode(ref, 8, 8, {})) ||
      failed(checkInputType(ref, 0, kQuantized)) ||
      failed(checkInputType(ref, 1, kFloat)) ||
      failed(checkInputType(ref, 3, kQuantized)) ||
      failed(checkInputType(ref, 4, kFloat)) ||
      failed(checkInputType(ref, 6, kFloat)) ||
      failed(checkInputType(ref, 7, kQuantized)))
    return failure();
  Value a = input(ref, 0), aScale = input(ref, 1), aZero = input(ref, 2);
  Value b = input(ref, 3), bScale = input(ref, 4), bZero = input(ref, 5);
  Value yScale = input(ref, 6), yZero = input(ref, 7);
  auto diag = [&] { return emitError(ref); };
  if (failed(checkSameElementType(ref, a, 0, aZero, 2, diag)) ||
      failed(checkSameElementType(ref, b, 3, bZero, 5, diag)))
    return failure();
  ArrayRef<int64_t> aShape = shapeOf(a), bShape = shapeOf(b);
  if (aShape.size() < 2 || bShape.size() < 2)
    return emitError(ref) << "expected operands of rank >= 2, got "
                          << formatShape(aShape) << " and "
                          << formatShape(bShape);
  int64_t m = aShape[aShape.size() - 2], n = bShape.back();
  FailureOr<SmallVector<int64_t>> aScaleShape =
      getParameterShape(ref, 1, aScale, m, {m, 1}, "per row of input 0", diag);
  FailureOr<SmallVector<int64_t>> aZeroShape =
      getParameterShape(ref, 2, aZero, m, {m, 1}, "per row of input 0", diag);
  FailureOr<SmallVector<int64_t>> bScaleShape =
      getParameterShape(ref, 4, bScale, n, {n}, "per column of input 3", diag);
  FailureOr<SmallVector<int64_t>> bZeroShape =
      getParameterShape(ref, 5, bZero, n, {n}, "per column of input 3", diag);
  FailureOr<SmallVector<int64_t>> yScaleShape =
      getParameterShape(ref, 6, yScale, 1, {}, "", diag);
  FailureOr<SmallVector<int64_t>> yZeroShape =
      getParameterShape(ref, 7, yZero, 1, {}, "", diag);
  if (failed(aScaleShape) || failed(aZeroShape) || failed(bScaleShape) ||
      failed(bZeroShape) || failed(yScaleShape) || failed(yZeroShape))
    return failure();
  FailureOr<Value> aWide = buildShiftedI32(ref, loc, a, aZero, *aZeroShape);
  FailureOr<Value> bWide = buildShiftedI32(ref, loc, b, bZero, *bZeroShape);
  if (failed(aWide) || failed(bWide))
    return failure();
  FailureOr<Value> product = createOp<MatMulOp>(ref, loc, {*aWide, *bWide});
  if (failed(product))
    return failure();
  auto productType = cast<RankedTensorType>(product->getType());
  Value real = CastOp::create(
      builder, loc, productType.clone(builder.getF32Type()), *product);
  FailureOr<Value> multiplier =
      createOp<MulOp>(ref, loc,
                      {createReshape(loc, aScale, *aScaleShape),
                       createReshape(loc, bScale, *bScaleShape)});
  if (failed(multiplier))
    return failure();
  multiplier =
      createOp<DivOp>(ref, loc, {*multiplier, createReshape(loc, yScale, {})});
  if (failed(multiplier))
    return failure();
  FailureOr<Value> scaled = createOp<MulOp>(ref, loc, {real, *multiplier});
  if (failed(scaled))
    return failure();
  FailureOr<Value> result = buildRequantize(ref, loc, *scaled, yZero);
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

LogicalResult OnnxImporter::importQLinearConv(const NodeRef &ref,
                                              Location loc) {
  if (failed(checkNode(ref, 8, 9,
                       {"auto_pad", "dilations", "group", "kernel_shape",
                        "pads", "strides"})) ||
      failed(checkInputType(ref, 0, kQuantized)) ||
      failed(checkInputType(ref, 1, kFloat)) ||
      failed(checkInputType(ref, 3, kQuantized)) ||
      failed(checkInputType(ref, 4, kFloat)) ||
      failed(checkInputType(ref, 6, kFloat)) ||
      failed(checkInputType(ref, 7, kQuantized)) ||
      failed(checkInputType(ref, 8, {DType::I32})))
    return failure();
  Value x = input(ref, 0), xScale = input(ref, 1), xZero = input(ref, 2);
  Value w = input(ref, 3), wScale = input(ref, 4), wZero = input(ref, 5);
  Value yScale = input(ref, 6), yZero = input(ref, 7), bias = input(ref, 8);
  auto diag = [&] { return emitError(ref); };
  if (failed(checkSameElementType(ref, x, 0, xZero, 2, diag)) ||
      failed(checkSameElementType(ref, w, 3, wZero, 5, diag)))
    return failure();
  ArrayRef<int64_t> xShape = shapeOf(x), wShape = shapeOf(w);
  if (xShape.size() < 3 || wShape.size() != xShape.size())
    return emitError(ref) << "expected input and weight of the same rank >= 3, "
                             "got "
                          << formatShape(xShape) << " and "
                          << formatShape(wShape);
  int64_t channels = wShape[0];
  // A per-channel weight zero point broadcasts over [M, C/group, k...], a
  // per-channel scale over the result [N, M, spatial...].
  SmallVector<int64_t> weightChannel(wShape.size(), 1),
      resultChannel(xShape.size() - 1, 1);
  weightChannel[0] = resultChannel[0] = channels;
  FailureOr<SmallVector<int64_t>> xScaleShape =
      getParameterShape(ref, 1, xScale, 1, {}, "", diag);
  FailureOr<SmallVector<int64_t>> xZeroShape =
      getParameterShape(ref, 2, xZero, 1, {}, "", diag);
  FailureOr<SmallVector<int64_t>> wScaleShape = getParameterShape(
      ref, 4, wScale, channels, resultChannel, "per output channel", diag);
  FailureOr<SmallVector<int64_t>> wZeroShape = getParameterShape(
      ref, 5, wZero, channels, weightChannel, "per output channel", diag);
  FailureOr<SmallVector<int64_t>> yScaleShape =
      getParameterShape(ref, 6, yScale, 1, {}, "", diag);
  FailureOr<SmallVector<int64_t>> yZeroShape =
      getParameterShape(ref, 7, yZero, 1, {}, "", diag);
  if (failed(xScaleShape) || failed(xZeroShape) || failed(wScaleShape) ||
      failed(wZeroShape) || failed(yScaleShape) || failed(yZeroShape))
    return failure();
  FailureOr<Value> xWide = buildShiftedI32(ref, loc, x, xZero, *xZeroShape);
  FailureOr<Value> wWide = buildShiftedI32(ref, loc, w, wZero, *wZeroShape);
  if (failed(xWide) || failed(wWide))
    return failure();
  FailureOr<Value> accumulated = buildConv(ref, loc, *xWide, *wWide, bias);
  if (failed(accumulated))
    return failure();
  auto accumulatedType = cast<RankedTensorType>(accumulated->getType());
  Value real = CastOp::create(
      builder, loc, accumulatedType.clone(builder.getF32Type()), *accumulated);
  FailureOr<Value> multiplier =
      createOp<MulOp>(ref, loc,
                      {createReshape(loc, xScale, {}),
                       createReshape(loc, wScale, *wScaleShape)});
  if (failed(multiplier))
    return failure();
  multiplier =
      createOp<DivOp>(ref, loc, {*multiplier, createReshape(loc, yScale, {})});
  if (failed(multiplier))
    return failure();
  FailureOr<Value> scaled = createOp<MulOp>(ref, loc, {real, *multiplier});
  if (failed(scaled))
    return failure();
  FailureOr<Value> result = buildRequantize(ref, loc, *scaled, yZero);
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}
