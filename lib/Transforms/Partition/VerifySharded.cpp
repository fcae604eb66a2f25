//===- VerifySharded.cpp - the planning contract --------------------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "autopar/Analysis/ShardingRule.h"
#include "autopar/Dialect/Autopar/IR/ShardLayout.h"
#include "autopar/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::autopar {
#define GEN_PASS_DEF_VERIFYSHARDEDPASS
#include "autopar/Transforms/Passes.h.inc"
} // namespace mlir::autopar

using namespace mlir;
using namespace mlir::autopar;

namespace {
struct VerifyShardedPass
    : public mlir::autopar::impl::VerifyShardedPassBase<VerifyShardedPass> {
  using Base::Base;
  void runOnOperation() override;
};
} // namespace

/// `'name'` of a value for diagnostics, or its position when unnamed.
static std::string describe(Value v) {
  std::string name = getOnnxValueName(v);
  if (!name.empty())
    return "'" + name + "'";
  if (auto arg = dyn_cast<BlockArgument>(v))
    return "argument #" + std::to_string(arg.getArgNumber());
  return "result #" + std::to_string(cast<OpResult>(v).getResultNumber()) +
         " of '" + v.getDefiningOp()->getName().getStringRef().str() + "'";
}

/// Checks that `sharding` fits `type` on the grid; `what` prefixes errors.
static LogicalResult checkFits(Location loc, const std::string &what,
                               RankedTensorType type, ShardingAttr sharding,
                               ArrayRef<int64_t> gridShape) {
  return getLocalShape(type.getShape(), sharding, gridShape, [&]() {
    return emitError(loc) << what << " ";
  });
}

void VerifyShardedPass::runOnOperation() {
  ModuleOp module = getOperation();
  shard::GridOp grid = getUniqueGrid(module);
  if (!grid)
    return signalPassFailure();
  ArrayRef<int64_t> gridShape = grid.getShape();
  if (llvm::any_of(gridShape, ShapedType::isDynamic)) {
    grid.emitError() << "grid must have a static shape";
    return signalPassFailure();
  }
  // Stops at the first value that breaks the contract: the values after it
  // take their sharding from it by propagation, so their errors repeat it.
  bool ok = true;
  auto checkValue = [&](Value v, Location loc) {
    if (!ok)
      return;
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type)
      return;
    ShardingAttr s = getSharding(v);
    if (!s) {
      emitError(loc) << "value " << describe(v) << " has no sharding";
      ok = false;
      return;
    }
    if (failed(checkFits(loc, "value " + describe(v), type, s, gridShape)))
      ok = false;
  };
  module.walk([&](func::FuncOp func) {
    for (BlockArgument arg : func.getArguments())
      checkValue(arg, arg.getLoc());
    for (unsigned i = 0; i < func.getNumResults(); ++i) {
      auto type = dyn_cast<RankedTensorType>(func.getResultTypes()[i]);
      auto s = func.getResultAttrOfType<ShardingAttr>(i, kShardingAttrName);
      if (!ok)
        break;
      if (type && !s) {
        func.emitError() << "result " << i << " of @" << func.getSymName()
                         << " has no sharding";
        ok = false;
      } else if (type && failed(checkFits(func.getLoc(),
                                          "result " + std::to_string(i), type,
                                          s, gridShape))) {
        ok = false;
      }
    }
    func.walk([&](Operation *op) {
      if (isa<func::FuncOp, func::ReturnOp>(op))
        return;
      for (Value r : op->getResults())
        checkValue(r, op->getLoc());
      if (!ok || isa<WeightOp, ConstantOp>(op))
        return;
      FailureOr<OpShardingPlan> plan = getOpShardingPlan(op);
      if (failed(plan)) {
        ok = false;
        return;
      }
      for (auto [i, v] : llvm::enumerate(op->getOperands()))
        if (ok && failed(checkFits(op->getLoc(),
                                   "operand " + std::to_string(i) + " (" +
                                       describe(v) + ") as this op needs it,",
                                   cast<RankedTensorType>(v.getType()),
                                   plan->requiredOperands[i], gridShape)))
          ok = false;
    });
  });
  if (!ok)
    signalPassFailure();
}
