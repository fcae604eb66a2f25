//===- Loss.cpp - loss functions ------------------------------------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Importers of the ONNX loss operators, NegativeLogLikelihoodLoss and
// SoftmaxCrossEntropyLoss, composed of autopar ops as ONNX's own function
// definitions compose them: a gather_elements of the target class, the class
// weights gathered alike, ignored targets masked with where, and the
// reduction (none, sum, or the weighted mean) as reduce_sum and div. Every
// piece has its own sharding rule, so a loss is planned like the rest of the
// model.
//
//===----------------------------------------------------------------------===//

#include "../Importer.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::importer;

using NodeRef = OnnxImporter::NodeRef;

void OnnxImporter::registerLossImporters(OpImporterRegistry &registry) {
  registry.add("NegativeLogLikelihoodLoss", 12,
               &OnnxImporter::importNegativeLogLikelihoodLoss);
  registry.add("SoftmaxCrossEntropyLoss", 12,
               &OnnxImporter::importSoftmaxCrossEntropyLoss);
}

FailureOr<Value> OnnxImporter::buildNllLoss(const NodeRef &ref, Location loc,
                                            Value logProb, Value target,
                                            Value weight) {
  FailureOr<std::string> reduction = stringAttr(ref, "reduction", "mean");
  if (failed(reduction))
    return failure();
  if (*reduction != "none" && *reduction != "sum" && *reduction != "mean")
    return emitError(ref) << "attribute 'reduction' must be 'none', 'sum' or "
                             "'mean', got '"
                          << *reduction << "'";
  auto inType = cast<RankedTensorType>(logProb.getType());
  auto targetType = cast<RankedTensorType>(target.getType());
  ArrayRef<int64_t> in = inType.getShape();
  ArrayRef<int64_t> t = targetType.getShape();
  // Target [N, d...] against input [N, C, d...].
  if (in.size() < 2 || t.size() + 1 != in.size() || t[0] != in[0] ||
      t.drop_front() != in.drop_front(2))
    return emitError(ref) << "target of shape " << formatShape(t)
                          << " does not match input of shape "
                          << formatShape(in) << " ([N, d...] for [N, C, d...])";
  int64_t classes = in[1];
  if (weight && cast<RankedTensorType>(weight.getType()).getShape() !=
                    ArrayRef<int64_t>{classes})
    return emitError(ref) << "weight must have shape [" << classes << "], got "
                          << typeToString(weight.getType());
  Type element = inType.getElementType();
  Type indexElement = targetType.getElementType();

  // Ignored targets read class 0 and weigh 0.
  Value ignored, safeTarget = target;
  if (findAttr(ref, "ignore_index")) {
    FailureOr<int64_t> ignoreIndex = intAttr(ref, "ignore_index", 0);
    if (failed(ignoreIndex))
      return failure();
    FailureOr<Value> isIgnored = createOp<EqualOp>(
        ref, loc,
        {target, createScalarConstant(loc, indexElement, *ignoreIndex)});
    if (failed(isIgnored))
      return failure();
    ignored = *isIgnored;
    FailureOr<Value> safe = createOp<WhereOp>(
        ref, loc,
        {ignored, createScalarConstant(loc, indexElement, 0), target});
    if (failed(safe))
      return failure();
    safeTarget = *safe;
  }

  // -input[n, target[n, d...], d...].
  SmallVector<int64_t> withClass(t);
  withClass.insert(withClass.begin() + 1, 1);
  GatherElementsOp::Properties gather;
  gather.setAxis(builder.getI64IntegerAttr(1));
  FailureOr<Value> picked = createOp<GatherElementsOp>(
      ref, loc, {logProb, createReshape(loc, safeTarget, withClass)}, gather);
  if (failed(picked))
    return failure();
  FailureOr<Value> loss =
      createOp<NegOp>(ref, loc, createReshape(loc, *picked, t));
  if (failed(loss))
    return failure();

  // The weight of each element: weight[target] (1 without weights), 0 where
  // ignored.
  Value elementWeight;
  if (weight) {
    GatherOp::Properties byClass;
    byClass.setAxis(builder.getI64IntegerAttr(0));
    FailureOr<Value> gathered =
        createOp<GatherOp>(ref, loc, {weight, safeTarget}, byClass);
    if (failed(gathered))
      return failure();
    elementWeight = *gathered;
  }
  if (ignored) {
    FailureOr<Value> masked = createOp<WhereOp>(
        ref, loc,
        {ignored, createScalarConstant(loc, element, 0.0),
         elementWeight ? elementWeight
                       : createScalarConstant(loc, element, 1.0)});
    if (failed(masked))
      return failure();
    elementWeight = *masked;
  }
  if (elementWeight) {
    loss = createOp<MulOp>(ref, loc, {*loss, elementWeight});
    if (failed(loss))
      return failure();
  }
  if (*reduction == "none")
    return loss;

  auto sumAll = [&](Value v) -> FailureOr<Value> {
    ReduceSumOp::Properties props;
    props.setAxes(builder.getDenseI64ArrayAttr(llvm::to_vector(
        llvm::seq<int64_t>(0, cast<RankedTensorType>(v.getType()).getRank()))));
    props.setKeepdims(builder.getBoolAttr(false));
    return createOp<ReduceSumOp>(ref, loc, v, props);
  };
  FailureOr<Value> total = sumAll(*loss);
  if (failed(total) || *reduction == "sum")
    return total;
  // mean: the sum divided by the sum of the weights (the count of the
  // elements not ignored without weights).
  if (!elementWeight) {
    Value count =
        createScalarConstant(loc, element, static_cast<double>(product(t)));
    return createOp<DivOp>(ref, loc, {*total, count});
  }
  FailureOr<Value> weightTotal = sumAll(elementWeight);
  if (failed(weightTotal))
    return failure();
  return createOp<DivOp>(ref, loc, {*total, *weightTotal});
}

LogicalResult OnnxImporter::importNegativeLogLikelihoodLoss(const NodeRef &ref,
                                                            Location loc) {
  if (failed(checkNode(ref, 2, 3, {"reduction", "ignore_index"})) ||
      failed(checkInputType(ref, 0, kFloat)) ||
      failed(checkInputType(ref, 1, kIndices)))
    return failure();
  FailureOr<Value> loss =
      buildNllLoss(ref, loc, input(ref, 0), input(ref, 1), input(ref, 2));
  return failed(loss) ? failure() : setOutput(ref, 0, *loss);
}

/// SoftmaxCrossEntropyLoss: log_softmax over the classes (dimension 1), then
/// the negative log-likelihood; output 1 is the log-probabilities.
LogicalResult OnnxImporter::importSoftmaxCrossEntropyLoss(const NodeRef &ref,
                                                          Location loc) {
  if (failed(checkNode(ref, 2, 3, {"reduction", "ignore_index"}, 2)) ||
      failed(checkInputType(ref, 0, kFloat)) ||
      failed(checkInputType(ref, 1, kIndices)))
    return failure();
  Value scores = input(ref, 0);
  if (cast<RankedTensorType>(scores.getType()).getRank() < 2)
    return emitError(ref) << "scores must have rank >= 2 ([N, C, d...]), got "
                          << typeToString(scores.getType());
  LogSoftmaxOp::Properties props;
  props.setAxis(builder.getI64IntegerAttr(1));
  FailureOr<Value> logProb = createOp<LogSoftmaxOp>(ref, loc, scores, props);
  if (failed(logProb))
    return failure();
  FailureOr<Value> loss =
      buildNllLoss(ref, loc, *logProb, input(ref, 1), input(ref, 2));
  if (failed(loss) || failed(setOutput(ref, 0, *loss)))
    return failure();
  if (ref.node->output_size() > 1 && !ref.node->output(1).empty())
    return setOutput(ref, 1, *logProb);
  return success();
}
