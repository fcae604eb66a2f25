//===- Reduction.cpp - reductions ----------------------------------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Importers of the Reduce* operators and their registration by opset.
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

void OnnxImporter::registerReductionImporters(OpImporterRegistry &registry) {
  registry.add("ReduceSum", 1, &OnnxImporter::importReduce);
  registry.add("ReduceMean", 1, &OnnxImporter::importReduce);
  registry.add("ReduceMax", 1, &OnnxImporter::importReduce);
  registry.add("ReduceMin", 1, &OnnxImporter::importReduce);
  registry.add("ReduceProd", 1, &OnnxImporter::importReduce);
  registry.add("ReduceL1", 1, &OnnxImporter::importReduce);
  registry.add("ReduceL2", 1, &OnnxImporter::importReduce);
  registry.add("ReduceLogSum", 1, &OnnxImporter::importReduce);
  registry.add("ReduceLogSumExp", 1, &OnnxImporter::importReduce);
  registry.add("ReduceSumSquare", 1, &OnnxImporter::importReduce);
  registry.add("ArgMax", 1, &OnnxImporter::importArgReduce);
  registry.add("ArgMin", 1, &OnnxImporter::importArgReduce);
  registry.add("TopK", 1, &OnnxImporter::importTopK);
}

LogicalResult OnnxImporter::importReduce(const NodeRef &ref, Location loc) {
  StringRef op = ref.node->op_type();
  // ReduceSum takes its axes as an input from opset 13, the others from 18.
  bool axesInput = ref.opset >= (op == "ReduceSum" ? 13 : 18);
  LogicalResult checked =
      axesInput ? checkNode(ref, 1, 2, {"keepdims", "noop_with_empty_axes"})
                : checkNode(ref, 1, 1, {"axes", "keepdims"});
  bool floatOnly =
      llvm::is_contained({"ReduceL2", "ReduceLogSum", "ReduceLogSumExp"}, op);
  if (failed(checked) ||
      failed(checkInputType(ref, 0,
                            floatOnly ? ArrayRef<DType>(kFloat)
                                      : ArrayRef<DType>(kNumeric))))
    return failure();
  FailureOr<int64_t> keepdims = intAttr(ref, "keepdims", 1);
  FailureOr<int64_t> noop = intAttr(ref, "noop_with_empty_axes", 0);
  if (failed(keepdims) || failed(noop))
    return failure();
  SmallVector<int64_t> axes;
  if (axesInput) {
    if (hasInput(ref, 1)) {
      FailureOr<SmallVector<int64_t>> values = requireKnownInts(ref, 1, "axes");
      if (failed(values))
        return failure();
      axes = *values;
    }
  } else {
    FailureOr<SmallVector<int64_t>> values = intsAttr(ref, "axes", {});
    if (failed(values))
      return failure();
    axes = *values;
  }
  Value x = input(ref, 0);
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  if (axes.empty()) {
    if (*noop)
      return setOutput(ref, 0, x);
    axes = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  }
  FailureOr<SmallVector<int64_t>> normalized = normalizeAxes(ref, axes, rank);
  if (failed(normalized))
    return failure();
  auto fill = [&](auto &props) {
    props.setAxes(builder.getDenseI64ArrayAttr(*normalized));
    props.setKeepdims(builder.getBoolAttr(*keepdims != 0));
  };
  auto build = [&](auto tag) -> FailureOr<Value> {
    using OpTy = decltype(tag);
    typename OpTy::Properties props;
    fill(props);
    return createOp<OpTy>(ref, loc, x, props);
  };
  FailureOr<Value> result = op == "ReduceSum"      ? build(ReduceSumOp())
                            : op == "ReduceMean"   ? build(ReduceMeanOp())
                            : op == "ReduceMax"    ? build(ReduceMaxOp())
                            : op == "ReduceMin"    ? build(ReduceMinOp())
                            : op == "ReduceProd"   ? build(ReduceProdOp())
                            : op == "ReduceL1"     ? build(ReduceL1Op())
                            : op == "ReduceL2"     ? build(ReduceL2Op())
                            : op == "ReduceLogSum" ? build(ReduceLogSumOp())
                            : op == "ReduceLogSumExp"
                                ? build(ReduceLogSumExpOp())
                                : build(ReduceSumSquareOp());
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

LogicalResult OnnxImporter::importArgReduce(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 1, 1, {"axis", "keepdims", "select_last_index"})) ||
      failed(checkInputType(ref, 0, kNumeric)))
    return failure();
  FailureOr<int64_t> axisAttr = intAttr(ref, "axis", 0);
  FailureOr<int64_t> keepdims = intAttr(ref, "keepdims", 1);
  FailureOr<int64_t> last = intAttr(ref, "select_last_index", 0);
  if (failed(axisAttr) || failed(keepdims) || failed(last))
    return failure();
  Value x = input(ref, 0);
  FailureOr<int64_t> axis = normalizeAxis(
      ref, *axisAttr, cast<RankedTensorType>(x.getType()).getRank());
  if (failed(axis))
    return failure();
  auto build = [&](auto tag) -> FailureOr<Value> {
    using OpTy = decltype(tag);
    typename OpTy::Properties props;
    props.setAxis(builder.getI64IntegerAttr(*axis));
    props.setKeepdims(builder.getBoolAttr(*keepdims != 0));
    props.setSelectLastIndex(builder.getBoolAttr(*last != 0));
    return createOp<OpTy>(ref, loc, x, props);
  };
  FailureOr<Value> result =
      ref.node->op_type() == "ArgMax" ? build(ArgMaxOp()) : build(ArgMinOp());
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

/// TopK: `k` is an attribute before opset 10 and a one-element input from
/// 10 on, which defines the results' shape and must be a compile-time
/// constant; `largest` and `sorted` come in opset 11.
LogicalResult OnnxImporter::importTopK(const NodeRef &ref, Location loc) {
  bool kInput = ref.opset >= 10;
  SmallVector<StringRef> allowed = {"axis"};
  if (!kInput)
    allowed.push_back("k");
  if (ref.opset >= 11)
    allowed.append({"largest", "sorted"});
  if (failed(checkNode(ref, kInput ? 2 : 1, kInput ? 2 : 1, allowed, 2)) ||
      failed(checkInputType(ref, 0, kNumeric)))
    return failure();
  int64_t k;
  if (kInput) {
    FailureOr<SmallVector<int64_t>> kValue = requireKnownInts(ref, 1, "K");
    if (failed(kValue))
      return failure();
    if (kValue->size() != 1)
      return emitError(ref) << "input 1 ('K') must have one element, got "
                            << kValue->size();
    k = kValue->front();
  } else {
    if (!findAttr(ref, "k"))
      return emitError(ref) << "attribute 'k' is required";
    FailureOr<int64_t> kAttr = intAttr(ref, "k", 0);
    if (failed(kAttr))
      return failure();
    k = *kAttr;
  }
  FailureOr<int64_t> axisAttr = intAttr(ref, "axis", -1);
  FailureOr<int64_t> largest = intAttr(ref, "largest", 1);
  FailureOr<int64_t> sorted = intAttr(ref, "sorted", 1);
  if (failed(axisAttr) || failed(largest) || failed(sorted))
    return failure();
  RankedTensorType type = inputType(ref, 0);
  FailureOr<int64_t> axis = normalizeAxis(ref, *axisAttr, type.getRank());
  if (failed(axis))
    return failure();
  if (k < 0 || k > type.getDimSize(*axis))
    return emitError(ref) << "k = " << k << " must be in [0, "
                          << type.getDimSize(*axis) << "] (axis " << *axis
                          << " of " << typeToString(type) << ")";
  TopKOp::Properties props;
  props.setAxis(builder.getI64IntegerAttr(*axis));
  props.setK(builder.getI64IntegerAttr(k));
  props.setLargest(builder.getBoolAttr(*largest != 0));
  props.setSorted(builder.getBoolAttr(*sorted != 0));
  FailureOr<Value> values = createOp<TopKOp>(ref, loc, {input(ref, 0)}, props);
  if (failed(values) || failed(setOutput(ref, 0, *values)))
    return failure();
  if (ref.node->output_size() < 2 || ref.node->output(1).empty())
    return success();
  return setOutput(ref, 1, values->getDefiningOp()->getResult(1));
}
