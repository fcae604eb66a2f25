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
}

LogicalResult OnnxImporter::importReduce(const NodeRef &ref, Location loc) {
  StringRef op = ref.node->op_type();
  // ReduceSum takes its axes as an input from opset 13, the others from 18.
  bool axesInput = ref.opset >= (op == "ReduceSum" ? 13 : 18);
  LogicalResult checked =
      axesInput ? checkNode(ref, 1, 2, {"keepdims", "noop_with_empty_axes"})
                : checkNode(ref, 1, 1, {"axes", "keepdims"});
  if (failed(checked) || failed(checkInputType(ref, 0, kNumeric)))
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
  FailureOr<Value> result = failure();
  if (op == "ReduceSum") {
    ReduceSumOp::Properties props;
    fill(props);
    result = createOp<ReduceSumOp>(ref, loc, x, props);
  } else if (op == "ReduceMean") {
    ReduceMeanOp::Properties props;
    fill(props);
    result = createOp<ReduceMeanOp>(ref, loc, x, props);
  } else {
    ReduceMaxOp::Properties props;
    fill(props);
    result = createOp<ReduceMaxOp>(ref, loc, x, props);
  }
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}
