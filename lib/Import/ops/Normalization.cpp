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
          {"epsilon", "momentum", "training_mode", "spatial", "is_test"})) ||
      failed(checkInputType(ref, 0, kFloat)))
    return failure();
  FailureOr<int64_t> training = intAttr(ref, "training_mode", 0);
  FailureOr<float> epsilon = floatAttr(ref, "epsilon", 1e-5f);
  FailureOr<int64_t> spatial = intAttr(ref, "spatial", 1);
  if (failed(training) || failed(epsilon) || failed(spatial))
    return failure();
  if (*training != 0)
    return emitError(ref) << "training_mode = " << *training
                          << " is unsupported; only inference (0) is";
  if (*spatial != 1)
    return emitError(ref) << "spatial = " << *spatial
                          << " is unsupported; only 1 is";
  BatchNormOp::Properties props;
  props.setEpsilon(builder.getF32FloatAttr(*epsilon));
  FailureOr<Value> result =
      createOp<BatchNormOp>(ref, loc,
                            {input(ref, 0), input(ref, 1), input(ref, 2),
                             input(ref, 3), input(ref, 4)},
                            props);
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}
