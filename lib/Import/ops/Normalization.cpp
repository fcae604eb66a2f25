//===- Normalization.cpp - softmax and normalizations --------------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Importers of Softmax, LogSoftmax, LayerNormalization and
// BatchNormalization, and their registration by opset.
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

void OnnxImporter::registerNormalizationImporters(
    OpImporterRegistry &registry) {
  registry.add("Softmax", 1, &OnnxImporter::importSoftmax);
  registry.add("LogSoftmax", 1, &OnnxImporter::importSoftmax);
  registry.add("LayerNormalization", 1, &OnnxImporter::importLayerNorm);
  registry.add("BatchNormalization", 1, &OnnxImporter::importBatchNorm);
  registry.add("InstanceNormalization", 6, &OnnxImporter::importInstanceNorm);
  registry.add("Hardmax", 1, &OnnxImporter::importHardmax);
  registry.add("LRN", 1, &OnnxImporter::importLRN);
  registry.add("MeanVarianceNormalization", 9,
               &OnnxImporter::importMeanVarianceNorm);
}

LogicalResult OnnxImporter::importSoftmax(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 1, 1, {"axis"})) ||
      failed(checkInputType(ref, 0, kFloat)))
    return failure();
  bool legacy = ref.opset < 13;
  FailureOr<int64_t> axisAttr = intAttr(ref, "axis", legacy ? 1 : -1);
  if (failed(axisAttr))
    return failure();
  Value x = input(ref, 0);
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  FailureOr<int64_t> axis = normalizeAxis(ref, *axisAttr, rank);
  if (failed(axis))
    return failure();
  bool log = ref.node->op_type() == "LogSoftmax";
  auto build = [&](Value operand, int64_t a) -> FailureOr<Value> {
    if (log) {
      LogSoftmaxOp::Properties props;
      props.setAxis(builder.getI64IntegerAttr(a));
      return createOp<LogSoftmaxOp>(ref, loc, operand, props);
    }
    SoftmaxOp::Properties props;
    props.setAxis(builder.getI64IntegerAttr(a));
    return createOp<SoftmaxOp>(ref, loc, operand, props);
  };
  if (!legacy || *axis == rank - 1) {
    FailureOr<Value> result = build(x, *axis);
    return failed(result) ? failure() : setOutput(ref, 0, *result);
  }
  // Before opset 13 the input is coerced to 2-D at `axis` and normalized
  // over the second dimension.
  ArrayRef<int64_t> shape = type.getShape();
  SmallVector<int64_t> flat = {product(shape.take_front(*axis)),
                               product(shape.drop_front(*axis))};
  FailureOr<Value> result = build(createReshape(loc, x, flat), 1);
  if (failed(result))
    return failure();
  return setOutput(ref, 0, createReshape(loc, *result, shape));
}

LogicalResult OnnxImporter::importLayerNorm(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 2, 3, {"axis", "epsilon", "stash_type"}, 3)) ||
      failed(checkInputType(ref, 0, kFloat)))
    return failure();
  FailureOr<int64_t> axisAttr = intAttr(ref, "axis", -1);
  FailureOr<float> epsilon = floatAttr(ref, "epsilon", 1e-5f);
  FailureOr<int64_t> stash = intAttr(ref, "stash_type", 1);
  if (failed(axisAttr) || failed(epsilon) || failed(stash))
    return failure();
  Value x = input(ref, 0);
  FailureOr<int64_t> axis = normalizeAxis(
      ref, *axisAttr, cast<RankedTensorType>(x.getType()).getRank());
  if (failed(axis))
    return failure();
  LayerNormOp::Properties props;
  props.setAxis(builder.getI64IntegerAttr(*axis));
  props.setEpsilon(builder.getF32FloatAttr(*epsilon));
  SmallVector<Value> operands = {x, input(ref, 1)};
  if (hasInput(ref, 2))
    operands.push_back(input(ref, 2));
  FailureOr<Value> result = createOp<LayerNormOp>(ref, loc, operands, props);
  if (failed(result) || failed(setOutput(ref, 0, *result)))
    return failure();
  if (isOutputUsed(ref, 1) || isOutputUsed(ref, 2))
    return importLayerNormStatistics(ref, loc, x, *axis, *epsilon);
  return success();
}

LogicalResult OnnxImporter::importLayerNormStatistics(const NodeRef &ref,
                                                      Location loc, Value x,
                                                      int64_t axis,
                                                      float epsilon) {
  // Mean = mean(X), InvStdDev = 1 / sqrt(mean((X - Mean)^2) + epsilon), both
  // reduced over axes axis..rank-1 with the reduced dimensions kept.
  auto type = cast<RankedTensorType>(x.getType());
  ReduceMeanOp::Properties reduce;
  reduce.setAxes(builder.getDenseI64ArrayAttr(
      llvm::to_vector(llvm::seq<int64_t>(axis, type.getRank()))));
  reduce.setKeepdims(builder.getBoolAttr(true));
  FailureOr<Value> mean = createOp<ReduceMeanOp>(ref, loc, x, reduce);
  if (failed(mean))
    return failure();
  FailureOr<Value> deviation = createOp<SubOp>(ref, loc, {x, *mean});
  if (failed(deviation))
    return failure();
  FailureOr<Value> squared =
      createOp<MulOp>(ref, loc, {*deviation, *deviation});
  if (failed(squared))
    return failure();
  FailureOr<Value> variance =
      createOp<ReduceMeanOp>(ref, loc, *squared, reduce);
  if (failed(variance))
    return failure();
  auto scalarType = RankedTensorType::get({}, type.getElementType());
  Value eps = ConstantOp::create(builder, loc, scalarType,
                                 cast<ElementsAttr>(DenseElementsAttr::get(
                                     scalarType, ArrayRef<float>(epsilon))));
  FailureOr<Value> shifted = createOp<AddOp>(ref, loc, {*variance, eps});
  if (failed(shifted))
    return failure();
  FailureOr<Value> stdDev = createOp<SqrtOp>(ref, loc, *shifted);
  if (failed(stdDev))
    return failure();
  FailureOr<Value> invStdDev = createOp<ReciprocalOp>(ref, loc, *stdDev);
  if (failed(invStdDev))
    return failure();
  if (isOutputUsed(ref, 1) && failed(setOutput(ref, 1, *mean)))
    return failure();
  if (isOutputUsed(ref, 2) && failed(setOutput(ref, 2, *invStdDev)))
    return failure();
  return success();
}

LogicalResult OnnxImporter::importBatchNorm(const NodeRef &ref, Location loc) {
  if (failed(checkNode(
          ref, 5, 5,
          {"epsilon", "momentum", "training_mode", "spatial", "is_test"}, 3)) ||
      failed(checkInputType(ref, 0, kFloat)))
    return failure();
  FailureOr<int64_t> training = intAttr(ref, "training_mode", 0);
  FailureOr<float> epsilon = floatAttr(ref, "epsilon", 1e-5f);
  FailureOr<float> momentum = floatAttr(ref, "momentum", 0.9f);
  FailureOr<int64_t> spatial = intAttr(ref, "spatial", 1);
  if (failed(training) || failed(epsilon) || failed(momentum) ||
      failed(spatial))
    return failure();
  if (*spatial != 1)
    return emitError(ref) << "spatial = " << *spatial
                          << " is unsupported; only 1 is";
  if (!*training && (isOutputUsed(ref, 1) || isOutputUsed(ref, 2)))
    return emitError(ref) << "the running mean and variance outputs exist "
                             "in training mode only";
  BatchNormOp::Properties props;
  props.setEpsilon(builder.getF32FloatAttr(*epsilon));
  Value x = input(ref, 0);
  Value mean = input(ref, 3), var = input(ref, 4);
  if (*training) {
    // The batch statistics over every dimension but the channels
    // (population variance), which normalize X; the running statistics
    // blend them with the inputs' by `momentum`.
    auto type = cast<RankedTensorType>(x.getType());
    SmallVector<int64_t> axes = {0};
    for (int64_t d = 2; d < type.getRank(); ++d)
      axes.push_back(d);
    auto meanOver = [&](Value v, bool keep) {
      ReduceMeanOp::Properties reduce;
      reduce.setAxes(builder.getDenseI64ArrayAttr(axes));
      reduce.setKeepdims(builder.getBoolAttr(keep));
      return createOp<ReduceMeanOp>(ref, loc, v, reduce);
    };
    FailureOr<Value> keptMean = meanOver(x, true);
    if (failed(keptMean))
      return failure();
    FailureOr<Value> centered = createOp<SubOp>(ref, loc, {x, *keptMean});
    if (failed(centered))
      return failure();
    FailureOr<Value> squared =
        createOp<MulOp>(ref, loc, {*centered, *centered});
    if (failed(squared))
      return failure();
    FailureOr<Value> batchVar = meanOver(*squared, false);
    if (failed(batchVar))
      return failure();
    Value batchMean = createReshape(loc, *keptMean, {type.getDimSize(1)});
    Type element = type.getElementType();
    auto blend = [&](unsigned output, Value running,
                     Value batch) -> LogicalResult {
      if (!isOutputUsed(ref, output))
        return success();
      FailureOr<Value> kept = createOp<MulOp>(
          ref, loc, {running, createScalarConstant(loc, element, *momentum)});
      FailureOr<Value> fresh = createOp<MulOp>(
          ref, loc,
          {batch, createScalarConstant(loc, element, 1.0 - *momentum)});
      if (failed(kept) || failed(fresh))
        return failure();
      FailureOr<Value> sum = createOp<AddOp>(ref, loc, {*kept, *fresh});
      return failed(sum) ? failure() : setOutput(ref, output, *sum);
    };
    if (failed(blend(1, mean, batchMean)) || failed(blend(2, var, *batchVar)))
      return failure();
    mean = batchMean;
    var = *batchVar;
  }
  FailureOr<Value> result = createOp<BatchNormOp>(
      ref, loc, {x, input(ref, 1), input(ref, 2), mean, var}, props);
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

/// InstanceNormalization: a layer norm over the spatial dimensions (axis 2
/// on, unit scale) followed by the per-channel scale and bias.
LogicalResult OnnxImporter::importInstanceNorm(const NodeRef &ref,
                                               Location loc) {
  if (failed(checkNode(ref, 3, 3, {"epsilon"})) ||
      failed(checkInputType(ref, 0, kFloat)))
    return failure();
  FailureOr<float> epsilon = floatAttr(ref, "epsilon", 1e-5f);
  if (failed(epsilon))
    return failure();
  Value x = input(ref, 0);
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  if (rank < 3)
    return emitError(ref) << "input must have rank >= 3 (N, C, spatial...), "
                             "got "
                          << typeToString(type);
  int64_t channels = type.getDimSize(1);
  for (unsigned i = 1; i < 3; ++i) {
    RankedTensorType t = inputType(ref, i);
    if (t.getShape() != ArrayRef<int64_t>{channels})
      return emitError(ref)
             << "input " << i << " ('" << (i == 1 ? "scale" : "B")
             << "') must have shape [" << channels << "], got "
             << typeToString(t);
  }
  LayerNormOp::Properties props;
  props.setAxis(builder.getI64IntegerAttr(2));
  props.setEpsilon(builder.getF32FloatAttr(*epsilon));
  Value one = createScalarConstant(loc, type.getElementType(), 1.0);
  FailureOr<Value> normalized =
      createOp<LayerNormOp>(ref, loc, {x, one}, props);
  if (failed(normalized))
    return failure();
  // [C] viewed as [C, 1, ...] broadcasts over the spatial dimensions.
  SmallVector<int64_t> perChannel(rank - 1, 1);
  perChannel[0] = channels;
  FailureOr<Value> scaled = createOp<MulOp>(
      ref, loc, {*normalized, createReshape(loc, input(ref, 1), perChannel)});
  if (failed(scaled))
    return failure();
  FailureOr<Value> result = createOp<AddOp>(
      ref, loc, {*scaled, createReshape(loc, input(ref, 2), perChannel)});
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

/// Hardmax: 1 where an element is the first maximum along the axis, else 0:
/// an arg_max (kept dimension) compared with the positions along the axis.
/// Before opset 13 the input is coerced to 2-D at `axis`, as for Softmax.
LogicalResult OnnxImporter::importHardmax(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 1, 1, {"axis"})) ||
      failed(checkInputType(ref, 0, kFloat)))
    return failure();
  bool legacy = ref.opset < 13;
  FailureOr<int64_t> axisAttr = intAttr(ref, "axis", legacy ? 1 : -1);
  if (failed(axisAttr))
    return failure();
  Value x = input(ref, 0);
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  FailureOr<int64_t> axis = normalizeAxis(ref, *axisAttr, rank);
  if (failed(axis))
    return failure();
  ArrayRef<int64_t> shape = type.getShape();
  Value operand = x;
  int64_t along = *axis;
  if (legacy && *axis != rank - 1) {
    operand = createReshape(
        loc, x,
        {product(shape.take_front(*axis)), product(shape.drop_front(*axis))});
    along = 1;
  }
  auto operandType = cast<RankedTensorType>(operand.getType());
  ArgMaxOp::Properties props;
  props.setAxis(builder.getI64IntegerAttr(along));
  props.setKeepdims(builder.getBoolAttr(true));
  props.setSelectLastIndex(builder.getBoolAttr(false));
  FailureOr<Value> argmax = createOp<ArgMaxOp>(ref, loc, operand, props);
  if (failed(argmax))
    return failure();
  // Positions 0..size-1 along the axis, size 1 elsewhere.
  int64_t size = operandType.getDimSize(along);
  SmallVector<int64_t> positionShape(operandType.getRank(), 1);
  positionShape[along] = size;
  auto positionType =
      RankedTensorType::get(positionShape, builder.getI64Type());
  SmallVector<int64_t> positions = llvm::to_vector(llvm::seq<int64_t>(0, size));
  Value iota =
      ConstantOp::create(builder, loc, positionType,
                         cast<ElementsAttr>(DenseElementsAttr::get(
                             positionType, ArrayRef<int64_t>(positions))));
  FailureOr<Value> isMax = createOp<EqualOp>(ref, loc, {*argmax, iota});
  if (failed(isMax))
    return failure();
  Value result = CastOp::create(
      builder, loc, operandType.clone(type.getElementType()), *isMax);
  return setOutput(ref, 0, createReshape(loc, result, shape));
}

/// LRN: y = x / (bias + alpha / size * sum of x^2 over the channel
/// window)^beta. The window sum is an average pool (count_include_pad) of x^2
/// viewed as [N, 1, C, rest] with a [size, 1] kernel padded by floor((size - 1)
/// / 2) before and ceil((size - 1) / 2) after, times size.
LogicalResult OnnxImporter::importLRN(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 1, 1, {"alpha", "beta", "bias", "size"})) ||
      failed(checkInputType(ref, 0, kFloat)))
    return failure();
  FailureOr<float> alpha = floatAttr(ref, "alpha", 1e-4f);
  FailureOr<float> beta = floatAttr(ref, "beta", 0.75f);
  FailureOr<float> bias = floatAttr(ref, "bias", 1.0f);
  FailureOr<int64_t> size = intAttr(ref, "size", 0);
  if (failed(alpha) || failed(beta) || failed(bias) || failed(size))
    return failure();
  if (*size <= 0)
    return emitError(ref) << "attribute 'size' must be positive, got " << *size;
  Value x = input(ref, 0);
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getRank() < 2)
    return emitError(ref) << "input must have rank >= 2 (N, C, ...), got "
                          << typeToString(type);
  ArrayRef<int64_t> shape = type.getShape();
  Type element = type.getElementType();
  FailureOr<Value> squared = createOp<MulOp>(ref, loc, {x, x});
  if (failed(squared))
    return failure();
  int64_t rest = product(shape.drop_front(2));
  Value view = createReshape(loc, *squared, {shape[0], 1, shape[1], rest});
  AveragePoolOp::Properties pool;
  pool.setKernelShape(builder.getDenseI64ArrayAttr({*size, 1}));
  pool.setStrides(builder.getDenseI64ArrayAttr({1, 1}));
  pool.setPads(builder.getDenseI64ArrayAttr(
      {(*size - 1) / 2, 0, *size - 1 - (*size - 1) / 2, 0}));
  pool.setDilations(builder.getDenseI64ArrayAttr({1, 1}));
  pool.setCeilMode(builder.getBoolAttr(false));
  pool.setCountIncludePad(builder.getBoolAttr(true));
  FailureOr<Value> average = createOp<AveragePoolOp>(ref, loc, view, pool);
  if (failed(average))
    return failure();
  // alpha / size * sum = alpha * average.
  FailureOr<Value> scaled =
      createOp<MulOp>(ref, loc,
                      {createReshape(loc, *average, shape),
                       createScalarConstant(loc, element, *alpha)});
  if (failed(scaled))
    return failure();
  FailureOr<Value> base = createOp<AddOp>(
      ref, loc, {*scaled, createScalarConstant(loc, element, *bias)});
  if (failed(base))
    return failure();
  FailureOr<Value> denominator = createOp<PowOp>(
      ref, loc, {*base, createScalarConstant(loc, element, *beta)});
  if (failed(denominator))
    return failure();
  FailureOr<Value> result = createOp<DivOp>(ref, loc, {x, *denominator});
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

/// MeanVarianceNormalization as ONNX's function defines it over `axes`:
/// (X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9).
LogicalResult OnnxImporter::importMeanVarianceNorm(const NodeRef &ref,
                                                   Location loc) {
  if (failed(checkNode(ref, 1, 1, {"axes"})) ||
      failed(checkInputType(ref, 0, kFloat)))
    return failure();
  FailureOr<SmallVector<int64_t>> axesAttr = intsAttr(ref, "axes", {0, 2, 3});
  if (failed(axesAttr))
    return failure();
  Value x = input(ref, 0);
  auto type = cast<RankedTensorType>(x.getType());
  FailureOr<SmallVector<int64_t>> axes =
      normalizeAxes(ref, *axesAttr, type.getRank());
  if (failed(axes))
    return failure();
  auto mean = [&](Value v) {
    ReduceMeanOp::Properties props;
    props.setAxes(builder.getDenseI64ArrayAttr(*axes));
    props.setKeepdims(builder.getBoolAttr(true));
    return createOp<ReduceMeanOp>(ref, loc, v, props);
  };
  FailureOr<Value> meanX = mean(x);
  FailureOr<Value> squared = createOp<MulOp>(ref, loc, {x, x});
  if (failed(meanX) || failed(squared))
    return failure();
  FailureOr<Value> meanSquared = mean(*squared);
  FailureOr<Value> squaredMean = createOp<MulOp>(ref, loc, {*meanX, *meanX});
  if (failed(meanSquared) || failed(squaredMean))
    return failure();
  FailureOr<Value> variance =
      createOp<SubOp>(ref, loc, {*meanSquared, *squaredMean});
  if (failed(variance))
    return failure();
  FailureOr<Value> deviation = createOp<SqrtOp>(ref, loc, *variance);
  if (failed(deviation))
    return failure();
  FailureOr<Value> denominator = createOp<AddOp>(
      ref, loc,
      {*deviation, createScalarConstant(loc, type.getElementType(), 1e-9)});
  FailureOr<Value> centered = createOp<SubOp>(ref, loc, {x, *meanX});
  if (failed(denominator) || failed(centered))
    return failure();
  FailureOr<Value> result =
      createOp<DivOp>(ref, loc, {*centered, *denominator});
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}
