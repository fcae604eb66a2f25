//===- ShardOptimizerState.cpp - ZeRO-1 sharding of optimizer updates ----===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements autopar-shard-optimizer-state: on an annotated
// training step, each weight's optimizer update (its Adam moments and the
// arithmetic that produces its next value) is split over the grid axes the
// weight is replicated on, so that each replica updates and stores a slice.
//
//===----------------------------------------------------------------------===//

#include "autopar/Dialect/Autopar/IR/Autopar.h"
#include "autopar/Transforms/Passes.h"
#include "autopar/Transforms/Planning/OptimizerUpdates.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

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

/// `sharding` (of a value of `shape`) with the grid axes of `gridShape` that
/// neither split a dimension nor hold a pending sum added to the dimension
/// whose local extent they divide and that is the largest; null when there is
/// no such axis or no such dimension.
static ShardingAttr getZeroSharding(ShardingAttr sharding,
                                    ArrayRef<int64_t> shape,
                                    ArrayRef<int64_t> gridShape) {
  SmallVector<int64_t> replicaAxes;
  int64_t replicas = 1;
  for (auto [axis, size] : llvm::enumerate(gridShape)) {
    if (size == 1 || llvm::is_contained(sharding.getPartial(), (int64_t)axis))
      continue;
    bool used = false;
    for (int64_t d = 0; d < sharding.getRank(); ++d)
      used |= llvm::is_contained(sharding.getDimAxes(d), (int64_t)axis);
    if (used)
      continue;
    replicaAxes.push_back(axis);
    replicas *= size;
  }
  if (replicaAxes.empty())
    return nullptr;
  int64_t best = -1, bestLocal = 0;
  for (int64_t d = 0; d < sharding.getRank(); ++d) {
    if (ShapedType::isDynamic(shape[d]))
      continue;
    int64_t split = 1;
    for (int64_t axis : sharding.getDimAxes(d))
      split *= gridShape[axis];
    if (shape[d] % split != 0)
      continue;
    int64_t local = shape[d] / split;
    if (local % replicas == 0 && local > bestLocal) {
      best = d;
      bestLocal = local;
    }
  }
  if (best < 0)
    return nullptr;
  SmallVector<SmallVector<int64_t>> dims;
  for (int64_t d = 0; d < sharding.getRank(); ++d) {
    dims.emplace_back(sharding.getDimAxes(d));
    if (d == best)
      llvm::append_range(dims.back(), replicaAxes);
  }
  return ShardingAttr::get(sharding.getContext(), dims, sharding.getPartial());
}

/// For `op` (a transpose, or a reshape that only inserts or drops unit
/// dimensions) whose result has sharding `resultSharding`, the sharding of
/// its input that yields it without communication; null for other ops.
static ShardingAttr getInputSharding(Operation *op,
                                     ShardingAttr resultSharding) {
  MLIRContext *ctx = op->getContext();
  if (auto transpose = dyn_cast<TransposeOp>(op)) {
    ArrayRef<int64_t> perm = transpose.getPerm();
    SmallVector<SmallVector<int64_t>> dims(perm.size());
    for (auto [i, p] : llvm::enumerate(perm))
      dims[p].assign(resultSharding.getDimAxes(i).begin(),
                     resultSharding.getDimAxes(i).end());
    return ShardingAttr::get(ctx, dims, resultSharding.getPartial());
  }
  if (auto reshape = dyn_cast<ReshapeOp>(op)) {
    auto in = cast<RankedTensorType>(reshape.getInput().getType());
    auto out = cast<RankedTensorType>(reshape.getType());
    if (!in.hasStaticShape() || !out.hasStaticShape())
      return nullptr;
    // Pair the non-unit dimensions of both sides; they must agree.
    SmallVector<int64_t> inDims, outDims;
    for (auto [i, size] : llvm::enumerate(in.getShape()))
      if (size != 1)
        inDims.push_back(i);
    for (auto [i, size] : llvm::enumerate(out.getShape()))
      if (size != 1)
        outDims.push_back(i);
    if (inDims.size() != outDims.size())
      return nullptr;
    SmallVector<SmallVector<int64_t>> dims(in.getRank());
    for (auto [i, o] : llvm::zip(inDims, outDims)) {
      if (in.getDimSize(i) != out.getDimSize(o))
        return nullptr;
      dims[i].assign(resultSharding.getDimAxes(o).begin(),
                     resultSharding.getDimAxes(o).end());
    }
    for (int64_t o = 0; o < out.getRank(); ++o)
      if (out.getDimSize(o) == 1 && !resultSharding.getDimAxes(o).empty())
        return nullptr;
    return ShardingAttr::get(ctx, dims, resultSharding.getPartial());
  }
  return nullptr;
}

/// Moves the split of the gradient `grad` (read by the update ops `update`
/// with sharding `zero`) up through the transposes and unit reshapes that
/// only the update reads, so that the pending sum they come from is
/// reduce-scattered into the split instead of all-reduced and sliced.
static void splitGradientChain(Value grad, ShardingAttr zero,
                               const llvm::DenseSet<Operation *> &update) {
  Value v = grad;
  ShardingAttr want = zero;
  while (Operation *def = v.getDefiningOp()) {
    if (def->getNumResults() != 1 || def->getNumOperands() != 1)
      return;
    ShardingAttr have = getSharding(v);
    if (!have || have.isPartial())
      return;
    // Only the update (or the chain op below) may read the value.
    if (v != grad && !v.hasOneUse())
      return;
    if (v == grad && llvm::any_of(v.getUsers(), [&](Operation *user) {
          return !update.contains(user);
        }))
      return;
    ShardingAttr input = getInputSharding(def, want);
    if (!input)
      return;
    ShardingAttr source = getSharding(def->getOperand(0));
    if (!source)
      return;
    // Split this value; stop at a pending-sum input (the partitioner
    // reduce-scatters it into the split instead of all-reducing it),
    // otherwise keep walking up the chain.
    setSharding(v, want);
    if (source.isPartial())
      return;
    v = def->getOperand(0);
    want = input;
  }
}

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
      auto type = cast<RankedTensorType>(weight.getType());
      ShardingAttr zero = getZeroSharding(own, type.getShape(), gridShape);
      if (!zero)
        continue;
      // Every value of the update with the weight's shape takes the split;
      // the store of the weight itself keeps the weight's sharding (the
      // partitioner all-gathers the updated slices into it).
      llvm::DenseSet<Operation *> update(ops.begin(), ops.end());
      llvm::SetVector<Value> gradients;
      for (Operation *op : ops) {
        if (auto assign = dyn_cast<AssignOp>(op);
            assign && assign.getWeight() == weight.getResult())
          continue;
        for (Value result : op->getResults()) {
          auto resultType = dyn_cast<RankedTensorType>(result.getType());
          if (resultType && resultType.getShape() == type.getShape())
            setSharding(result, zero);
        }
        // The gradient: an operand of the weight's shape made outside the
        // update (neither the weight nor its state).
        for (Value operand : op->getOperands()) {
          Operation *def = operand.getDefiningOp();
          if (operand.getType() == weight.getType() && def &&
              !update.contains(def) && !isa<WeightOp>(def))
            gradients.insert(operand);
        }
      }
      for (Value grad : gradients)
        splitGradientChain(grad, zero, update);
    }
  }
}
