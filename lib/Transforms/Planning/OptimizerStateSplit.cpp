//===- OptimizerStateSplit.cpp - the ZeRO-1 split of an update ------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "autopar/Transforms/Planning/OptimizerStateSplit.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::autopar;

ShardingAttr
mlir::autopar::getOptimizerStateSharding(ShardingAttr sharding,
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

SmallVector<SplitValue> mlir::autopar::getOptimizerStateSplit(
    WeightOp weight, ArrayRef<Operation *> ops, ShardingAttr weightSharding,
    ArrayRef<int64_t> gridShape,
    llvm::function_ref<ShardingAttr(Value)> getSharding) {
  SmallVector<SplitValue> split;
  auto type = cast<RankedTensorType>(weight.getType());
  ShardingAttr zero =
      getOptimizerStateSharding(weightSharding, type.getShape(), gridShape);
  if (!zero)
    return split;
  // The shardings set so far win over the ones before the split.
  llvm::DenseMap<Value, ShardingAttr> set;
  auto assign = [&](Value v, ShardingAttr s) {
    split.push_back({v, s});
    set[v] = s;
  };
  auto current = [&](Value v) {
    auto it = set.find(v);
    return it != set.end() ? it->second : getSharding(v);
  };
  // Every value of the update with the weight's shape takes the split; the
  // store of the weight itself keeps the weight's sharding.
  llvm::DenseSet<Operation *> update(ops.begin(), ops.end());
  llvm::SetVector<Value> gradients;
  for (Operation *op : ops) {
    if (auto store = dyn_cast<AssignOp>(op);
        store && store.getWeight() == weight.getResult())
      continue;
    for (Value result : op->getResults()) {
      auto resultType = dyn_cast<RankedTensorType>(result.getType());
      if (resultType && resultType.getShape() == type.getShape())
        assign(result, zero);
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
  // Move the split up through the transposes and unit reshapes that only
  // the update reads, so that the pending sum they come from is
  // reduce-scattered into the split instead of all-reduced and sliced.
  for (Value grad : gradients) {
    Value v = grad;
    ShardingAttr want = zero;
    while (Operation *def = v.getDefiningOp()) {
      if (def->getNumResults() != 1 || def->getNumOperands() != 1)
        break;
      ShardingAttr have = current(v);
      if (!have || have.isPartial())
        break;
      // Only the update (or the chain op below) may read the value.
      if (v != grad && !v.hasOneUse())
        break;
      if (v == grad && llvm::any_of(v.getUsers(), [&](Operation *user) {
            return !update.contains(user);
          }))
        break;
      ShardingAttr input = getInputSharding(def, want);
      if (!input)
        break;
      ShardingAttr source = current(def->getOperand(0));
      if (!source)
        break;
      // Split this value; stop at a pending-sum input (the partitioner
      // reduce-scatters it into the split), otherwise keep walking up.
      assign(v, want);
      if (source.isPartial())
        break;
      v = def->getOperand(0);
      want = input;
    }
  }
  return split;
}
