//===- ShardOptimizerState.cpp - ZeRO-1 sharding of optimizer updates ----===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements autopar-shard-optimizer-state: on an annotated
// training step, each weight's optimizer update (its Adam moments and the
// arithmetic that produces its next value) is split over the grid axes the
// weight is replicated on, so that each replica updates and stores a slice
// (the rule: OptimizerStateSplit.h).
//
//===----------------------------------------------------------------------===//

#include "autopar/Dialect/Autopar/IR/Autopar.h"
#include "autopar/Transforms/Passes.h"
#include "autopar/Transforms/Planning/OptimizerStateSplit.h"
#include "autopar/Transforms/Planning/OptimizerUpdates.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::autopar {
#define GEN_PASS_DEF_SHARDOPTIMIZERSTATEPASS
#include "autopar/Transforms/Passes.h.inc"
} // namespace mlir::autopar

using namespace mlir;
using namespace mlir::autopar;

namespace {
struct ShardOptimizerStatePass
    : public mlir::autopar::impl::ShardOptimizerStatePassBase<
          ShardOptimizerStatePass> {
  using Base::Base;
  void runOnOperation() override;
};
} // namespace

void ShardOptimizerStatePass::runOnOperation() {
  ModuleOp module = getOperation();
  shard::GridOp grid = getUniqueGrid(module);
  if (!grid)
    return signalPassFailure();
  ArrayRef<int64_t> gridShape = grid.getShape();

  for (auto func : module.getOps<func::FuncOp>()) {
    OptimizerUpdates found = collectOptimizerUpdates(func);
    for (auto &[name, ops] : found.updates) {
      WeightOp weight = found.weights.lookup(name);
      if (!weight) {
        func.emitError() << "optimizer update of '" << name
                         << "' without a load of that weight";
        return signalPassFailure();
      }
      ShardingAttr own = getSharding(weight.getResult());
      if (!own) {
        weight.emitError() << "weight '" << name
                           << "' has no sharding (run a plan first)";
        return signalPassFailure();
      }
      for (const SplitValue &split :
           getOptimizerStateSplit(weight, ops, own, gridShape, getSharding))
        setSharding(split.value, split.sharding);
    }
  }
}
