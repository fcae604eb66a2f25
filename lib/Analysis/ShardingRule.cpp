//===- ShardingRule.cpp - loop-based sharding rules of ops ----------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "autopar/Analysis/ShardingRule.h"

#include "autopar/Dialect/Autopar/IR/PendingSums.h"

#include "mlir/Dialect/Shard/Interfaces/ShardingInterface.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace mlir::autopar;

FailureOr<ShardingRule> ShardingRule::get(Operation *op) {
  auto iface = dyn_cast<shard::ShardingInterface>(op);
  if (!iface)
    return failure();
  ShardingRule rule;
  rule.iterators = iface.getLoopIteratorTypes();
  rule.maps = iface.getIndexingMaps();
  rule.numOperands = op->getNumOperands();
  if (rule.maps.size() != op->getNumOperands() + op->getNumResults())
    return failure();
  for (AffineMap map : rule.maps) {
    if (!map || map.getNumDims() != rule.iterators.size())
      return failure();
    for (AffineExpr expr : map.getResults())
      if (!isa<AffineDimExpr, AffineConstantExpr>(expr))
        return failure();
  }
  auto extras = dyn_cast<ShardingRuleInterface>(op);
  for (unsigned i = 0; i < rule.numOperands; ++i)
    rule.additive.push_back(extras && extras.isAdditiveOperand(i));
  for (unsigned l = 0; l < rule.iterators.size(); ++l)
    rule.splittable.push_back(!extras || extras.isLoopSplittable(l));
  return rule;
}

static std::optional<unsigned> loopOf(AffineMap map, unsigned dim) {
  if (auto d = dyn_cast<AffineDimExpr>(map.getResult(dim)))
    return d.getPosition();
  return std::nullopt;
}

std::optional<unsigned> ShardingRule::getOperandLoop(unsigned index,
                                                     unsigned dim) const {
  return loopOf(maps[index], dim);
}

std::optional<unsigned> ShardingRule::getResultLoop(unsigned index,
                                                    unsigned dim) const {
  return loopOf(maps[numOperands + index], dim);
}

SmallVector<int64_t> ShardingRule::getPartialAxes(const LoopAxes &loops) const {
  SmallVector<int64_t> axes;
  for (unsigned l = 0; l < getNumLoops(); ++l)
    if (isReduction(l))
      llvm::append_range(axes, loops[l]);
  llvm::sort(axes);
  return axes;
}

static ShardingAttr shardingFromMap(MLIRContext *ctx, AffineMap map,
                                    const LoopAxes &loops,
                                    ArrayRef<int64_t> partial) {
  SmallVector<SmallVector<int64_t>> dims;
  for (unsigned i = 0; i < map.getNumResults(); ++i) {
    if (auto d = dyn_cast<AffineDimExpr>(map.getResult(i)))
      dims.push_back(loops[d.getPosition()]);
    else
      dims.emplace_back();
  }
  return ShardingAttr::get(ctx, dims, partial);
}

ShardingAttr ShardingRule::getOperandSharding(MLIRContext *ctx, unsigned index,
                                              const LoopAxes &loops) const {
  SmallVector<int64_t> partial;
  if (additive[index])
    partial = getPartialAxes(loops);
  return shardingFromMap(ctx, maps[index], loops, partial);
}

ShardingAttr ShardingRule::getResultSharding(MLIRContext *ctx, unsigned index,
                                             const LoopAxes &loops) const {
  return shardingFromMap(ctx, maps[numOperands + index], loops,
                         getPartialAxes(loops));
}

FailureOr<LoopAxes> ShardingRule::getLoopsFromResults(
    Operation *op, ArrayRef<ShardingAttr> resultShardings,
    ArrayRef<ShardingAttr> operandShardings) const {
  LoopAxes loops(getNumLoops());
  SmallVector<bool> assigned(getNumLoops(), false);
  for (auto [r, sharding] : llvm::enumerate(resultShardings)) {
    AffineMap map = maps[numOperands + r];
    for (unsigned dim = 0; dim < map.getNumResults(); ++dim) {
      std::optional<unsigned> loop = loopOf(map, dim);
      ArrayRef<int64_t> axes = sharding.getDimAxes(dim);
      if (!loop) {
        if (!axes.empty())
          return op->emitError() << "result " << r << " dimension " << dim
                                 << " is a broadcast and cannot be split";
        continue;
      }
      if (assigned[*loop] && ArrayRef(loops[*loop]) != axes)
        return op->emitError()
               << "results disagree on the split of loop " << *loop;
      if (!axes.empty() && !splittable[*loop])
        return op->emitError() << "result " << r << " dimension " << dim
                               << " cannot be split: the op needs it whole "
                                  "on every device";
      loops[*loop].assign(axes.begin(), axes.end());
      assigned[*loop] = true;
    }
  }
  // Pending-sum axes of the results.
  SmallVector<int64_t> partial;
  if (!resultShardings.empty())
    partial.assign(resultShardings[0].getPartial().begin(),
                   resultShardings[0].getPartial().end());
  for (ShardingAttr sharding : resultShardings.drop_front())
    if (sharding.getPartial() != ArrayRef(partial))
      return op->emitError() << "results disagree on their pending sums";
  if (partial.empty())
    return loops;
  SmallVector<unsigned> reductionLoops;
  for (unsigned l = 0; l < getNumLoops(); ++l)
    if (isReduction(l) && splittable[l])
      reductionLoops.push_back(l);
  if (reductionLoops.empty()) {
    std::string name = getOnnxValueName(op->getResult(0));
    return op->emitError() << "result "
                           << (name.empty() ? "" : "'" + name + "' ")
                           << "cannot be a pending sum: the op has no "
                              "reduction that can be split";
  }
  llvm::SmallSet<int64_t, 4> remaining;
  for (int64_t axis : partial)
    remaining.insert(axis);
  // Place each pending axis on the reduction loop an operand splits over it.
  for (auto [o, sharding] : llvm::enumerate(operandShardings)) {
    if (!sharding)
      continue;
    AffineMap map = maps[o];
    for (unsigned dim = 0; dim < map.getNumResults(); ++dim) {
      std::optional<unsigned> loop = loopOf(map, dim);
      if (!loop || !isReduction(*loop) || !splittable[*loop])
        continue;
      for (int64_t axis : sharding.getDimAxes(dim))
        if (remaining.erase(axis))
          loops[*loop].push_back(axis);
    }
  }
  for (int64_t axis : partial)
    if (remaining.count(axis))
      loops[reductionLoops.front()].push_back(axis);
  return loops;
}

LoopAxes ShardingRule::getLoopsFromOperands(
    ArrayRef<ShardingAttr> operandShardings) const {
  LoopAxes loops(getNumLoops());
  llvm::SmallSet<int64_t, 4> used;
  for (auto [o, sharding] : llvm::enumerate(operandShardings)) {
    if (!sharding || additive[o])
      continue;
    AffineMap map = maps[o];
    for (unsigned dim = 0; dim < map.getNumResults(); ++dim) {
      std::optional<unsigned> loop = loopOf(map, dim);
      ArrayRef<int64_t> axes = sharding.getDimAxes(dim);
      if (!loop || axes.empty() || !loops[*loop].empty() || !splittable[*loop])
        continue;
      if (llvm::any_of(axes, [&](int64_t a) { return used.count(a); }))
        continue;
      loops[*loop].assign(axes.begin(), axes.end());
      for (int64_t axis : axes)
        used.insert(axis);
    }
  }
  return loops;
}

/// The pending sum that `op`'s results (`results`) carry from its operands
/// (`operands`, as annotated) by the op's linearity, empty when they carry
/// none (no pending sum, or one of a split reduction loop); `carries` marks
/// the operands that hold it. All operands carry it for an op linear in all
/// of them together; for an op linear in each operand separately, the one
/// operand that is that pending sum, when no other operand varies over its
/// axes (otherwise the sum comes from a split reduction, as for any op).
static FailureOr<ArrayRef<int64_t>>
getForwardedPendingSum(Operation *op, ArrayRef<ShardingAttr> results,
                       ArrayRef<ShardingAttr> operands,
                       MutableArrayRef<bool> carries) {
  PendingSumRule sumRule = getPendingSumRule(op);
  if (sumRule == PendingSumRule::None || results.empty() ||
      !results.front().isPartial())
    return ArrayRef<int64_t>();
  ArrayRef<int64_t> pending = results.front().getPartial();
  auto usesPendingAxis = [&](ShardingAttr s) {
    if (!s.getPartial().empty())
      return true;
    for (int64_t d = 0; d < s.getRank(); ++d)
      for (int64_t axis : s.getDimAxes(d))
        if (llvm::is_contained(pending, axis))
          return true;
    return false;
  };
  if (sumRule == PendingSumRule::OneOperand) {
    std::optional<unsigned> carrier;
    for (auto [i, s] : llvm::enumerate(operands)) {
      if (s.getPartial() == pending && !carrier)
        carrier = i;
      else if (usesPendingAxis(s))
        return ArrayRef<int64_t>();
    }
    if (!carrier)
      return ArrayRef<int64_t>();
    carries[*carrier] = true;
  } else {
    llvm::fill(carries, true);
  }
  for (ShardingAttr s : results)
    if (s.getPartial() != pending)
      return op->emitError() << "results disagree on their pending sums";
  return pending;
}

FailureOr<OpShardingPlan> mlir::autopar::getOpShardingPlan(Operation *op) {
  FailureOr<ShardingRule> rule = ShardingRule::get(op);
  if (failed(rule))
    return op->emitError() << "op '" << op->getName()
                           << "' has no sharding rule";
  OpShardingPlan plan;
  SmallVector<ShardingAttr> operands;
  for (Value v : op->getOperands()) {
    ShardingAttr s = getSharding(v);
    if (!s)
      return op->emitError() << "operand '" << getOnnxValueName(v)
                             << "' has no sharding";
    operands.push_back(s);
  }
  for (Value v : op->getResults()) {
    ShardingAttr s = getSharding(v);
    if (!s)
      return op->emitError() << "result '" << getOnnxValueName(v)
                             << "' has no sharding";
    plan.results.push_back(s);
  }
  // An op linear in its operands (getPendingSumRule) may carry a pending sum
  // of its operands to its results: the loops then follow the splits only,
  // and the operands that carry the sum must be that pending sum.
  SmallVector<ShardingAttr> splits = plan.results;
  SmallVector<bool> carries(op->getNumOperands(), false);
  FailureOr<ArrayRef<int64_t>> forwarded =
      getForwardedPendingSum(op, plan.results, operands, carries);
  if (failed(forwarded))
    return failure();
  if (!forwarded->empty())
    for (ShardingAttr &s : splits)
      s = s.withoutPartial();
  FailureOr<LoopAxes> loops = rule->getLoopsFromResults(op, splits, operands);
  if (failed(loops))
    return failure();
  plan.loops = *loops;
  for (unsigned i = 0; i < op->getNumOperands(); ++i) {
    ShardingAttr s = rule->getOperandSharding(op->getContext(), i, plan.loops);
    if (carries[i])
      s = ShardingAttr::get(op->getContext(), s.getDimsVector(), *forwarded);
    plan.requiredOperands.push_back(s);
  }
  return plan;
}
