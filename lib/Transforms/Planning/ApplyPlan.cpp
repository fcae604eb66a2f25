//===- ApplyPlan.cpp - annotate values with a parallel plan ---------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Writes the shardings of a plan onto the IR: seeds (split runtime inputs for
// data parallelism, Megatron column/row splits for tensor parallelism, or the
// values pinned by a plan file), then a forward propagation through the ops'
// sharding rules that gives every other value a sharding. Automatic planning
// plugs in by producing a plan file (or seeds) for the same propagation.
//
//===----------------------------------------------------------------------===//

#include "autopar/Analysis/ShardingRule.h"
#include "autopar/Dialect/Autopar/IR/Autopar.h"
#include "autopar/Dialect/Autopar/IR/PendingSums.h"
#include "autopar/Dialect/Autopar/IR/ShardLayout.h"
#include "autopar/Transforms/Passes.h"
#include "autopar/Transforms/Planning/OptimizerUpdates.h"
#include "autopar/Transforms/Planning/PlanReport.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"

#define DEBUG_TYPE "autopar-apply-plan"

namespace mlir::autopar {
#define GEN_PASS_DEF_APPLYPLANPASS
#include "autopar/Transforms/Passes.h.inc"
} // namespace mlir::autopar

using namespace mlir;
using namespace mlir::autopar;

namespace {

enum class PlanKind { Replicated, Data, Tensor, File };


struct ApplyPlanPass
    : public mlir::autopar::impl::ApplyPlanPassBase<ApplyPlanPass> {
  using Base::Base;
  void runOnOperation() override;

private:
  /// Grid axes of size > 1 (splitting over a size-1 axis is a no-op).
  SmallVector<int64_t> activeAxes(ArrayRef<int64_t> axes) const {
    SmallVector<int64_t> result;
    for (int64_t axis : axes)
      if (gridShape[axis] > 1)
        result.push_back(axis);
    return result;
  }
  LogicalResult annotate(func::FuncOp func);
  /// Fails when the plan file pins a name that is no tensor of `func`.
  LogicalResult checkPinnedNames(func::FuncOp func);
  /// The Megatron loop assignment of a weight-bearing MatMul/Gemm/Conv, if
  /// `op` is one.
  std::optional<LoopAxes> tensorLoops(Operation *op, const ShardingRule &rule,
                                      ArrayRef<ShardingAttr> operands);

  PlanKind kind = PlanKind::Replicated;
  SmallVector<int64_t> gridShape;
  std::map<std::string, ShardingAttr> pinned;
};

} // namespace

/// The weight a transpose lays out for a contraction (the `Transpose` that
/// exporters put between a `Linear` weight and its `MatMul`), or null.
static WeightOp getTransposedWeight(Value v) {
  auto transpose = v.getDefiningOp<TransposeOp>();
  return transpose ? transpose.getInput().getDefiningOp<WeightOp>()
                   : WeightOp();
}

/// The weight operand index of a MatMul/Gemm whose B, or a Conv whose W, is a
/// weight or the transpose of one, or nullopt.
static std::optional<unsigned> getWeightOperand(Operation *op) {
  if (!isa<MatMulOp, GemmOp, ConvOp>(op))
    return std::nullopt;
  Value b = op->getOperand(1);
  if (b.getDefiningOp<WeightOp>() || getTransposedWeight(b))
    return 1u;
  return std::nullopt;
}

/// Whether the tensor plan decides `transpose` at its first consumer: it lays
/// out a weight that nothing has split yet, for a MatMul/Gemm that reads it as
/// B and is the transpose's first user in program order. The Megatron split
/// of that contraction then fixes the transposed weight's sharding, and the
/// weight is stored split to match (otherwise the weight would take the
/// transpose's replicated default, and the exported `Transpose` before every
/// `Linear` would hide every split).
static bool isDeferredWeightTranspose(Operation *op) {
  auto transpose = dyn_cast<TransposeOp>(op);
  if (!transpose)
    return false;
  WeightOp weight = getTransposedWeight(transpose.getResult());
  if (!weight || getSharding(weight))
    return false;
  Operation *first = nullptr;
  for (Operation *user : transpose->getUsers())
    if (user->getBlock() != op->getBlock())
      return false;
    else if (!first || user->isBeforeInBlock(first))
      first = user;
  if (!first || !isa<MatMulOp, GemmOp>(first))
    return false;
  // Read as B only (a product of the weight with itself stays as it is).
  return llvm::all_of(first->getOpOperands(), [&](OpOperand &use) {
    return use.get() != transpose.getResult() || use.getOperandNumber() == 1;
  });
}

std::optional<LoopAxes>
ApplyPlanPass::tensorLoops(Operation *op, const ShardingRule &rule,
                           ArrayRef<ShardingAttr> operands) {
  if (!getWeightOperand(op))
    return std::nullopt;
  SmallVector<int64_t> tensorAxis = activeAxes({(int64_t)gridShape.size() - 1});
  if (tensorAxis.empty())
    return std::nullopt;
  int64_t axis = tensorAxis.front();
  // Start from the data operand only (the weight follows).
  SmallVector<ShardingAttr> dataOnly(operands.size());
  dataOnly[0] = operands[0];
  LoopAxes loops = rule.getLoopsFromOperands(dataOnly);
  for (SmallVector<int64_t> &axes : loops)
    if (llvm::is_contained(axes, axis))
      // The activation already arrives split over the tensor axis: if that is
      // the contraction, this is the row-split half of a Megatron pair.
      return loops;
  // Column split: the last splittable parallel loop that the weight walks
  // (N of a matmul, the output channels of a conv).
  unsigned numLoops = rule.getNumLoops();
  for (int64_t l = numLoops - 1; l >= 0; --l) {
    if (rule.isReduction(l) || !rule.isSplittable(l))
      continue;
    bool walkedByB = false;
    for (unsigned d = 0, e = cast<RankedTensorType>(op->getOperand(1).getType())
                                 .getRank();
         d < e; ++d)
      walkedByB |= rule.getOperandLoop(1, d) == (unsigned)l;
    if (!walkedByB)
      continue;
    // A split that does not divide the loop is left out (the op stays whole
    // over the tensor axis) rather than failing the plan.
    auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
    for (unsigned d = 0, e = resultType.getRank(); d < e; ++d)
      if (rule.getResultLoop(0, d) == (unsigned)l &&
          resultType.getDimSize(d) % gridShape[axis] != 0)
        return loops;
    loops[l].push_back(axis);
    return loops;
  }
  return loops;
}

/// Gives each weight's optimizer update the weight's own layout: its state
/// (Adam's moments) and every value of the update with the weight's shape
/// are split as the weight is stored. Propagation alone would not: the
/// moments' first use, their decay (`m * beta1`), comes before the forward
/// pass and has nothing split to follow, so the state would be stored whole
/// on every device beside a split weight, and the update would slice the
/// decayed moments apart from their producer (a buffer held through the
/// whole step) and all-gather the new state back. The gradient is
/// resharded into the update's layout instead (a pending sum is
/// reduce-scattered).
static void alignOptimizerUpdates(func::FuncOp func) {
  OptimizerUpdates found = collectOptimizerUpdates(func);
  for (auto &[name, ops] : found.updates) {
    WeightOp weight = found.weights.lookup(name);
    ShardingAttr own = weight ? getSharding(weight.getResult()) : nullptr;
    if (!own)
      continue;
    for (Operation *op : ops) {
      if (auto assign = dyn_cast<AssignOp>(op);
          assign && assign.getWeight() == weight.getResult())
        continue;
      for (Value result : op->getResults())
        if (result.getType() == weight.getType())
          setSharding(result, own);
    }
  }
}

/// Keeps a pending sum pending through the ops linear in their operands
/// (getPendingSumRule) where that saves collectives. The op must be planned
/// with no split over the sum's axes, and the operands that carry the sum
/// must be read by that op alone and already be in the layout the op needs:
/// for a sum, difference, negation, transpose or reshape every operand is
/// the same pending sum; for a product, one operand is, and the others do
/// not vary over its axes. When, besides, every reader of the op's result
/// needs the result in one layout, the result becomes the pending sum (the
/// op adds, moves or scales the parts), reduced once where it is read,
/// instead of the operands before the op. So the gradients of a weight read
/// by the microbatches of a pipeline stage are summed while pending and
/// reduced once per step, after the last microbatch. A result with readers
/// that need different layouts stays as planned (reducing it there would
/// take one collective per layout, where one reduction before the op serves
/// them all). Runs in program order, so that a chain of such ops (the
/// microbatches' sum) carries the sum to its end; values pinned by a plan
/// file keep their sharding.
static LogicalResult
forwardPendingSums(func::FuncOp func,
                   llvm::function_ref<bool(Value)> isPinned) {
  MLIRContext *ctx = func.getContext();
  for (Operation &op : func.getBody().front()) {
    PendingSumRule sumRule = getPendingSumRule(&op);
    if (sumRule == PendingSumRule::None || op.getNumResults() != 1 ||
        op.getNumOperands() == 0)
      continue;
    Value result = op.getResult(0);
    ShardingAttr planned = getSharding(result);
    if (!planned || planned.isPartial() || isPinned(result) ||
        result.use_empty())
      continue;
    FailureOr<OpShardingPlan> plan = getOpShardingPlan(&op);
    if (failed(plan))
      return failure();
    // The pending sum and the operands that carry it.
    ArrayRef<int64_t> pending;
    SmallVector<unsigned> carriers;
    for (OpOperand &operand : op.getOpOperands()) {
      ArrayRef<int64_t> partial = getSharding(operand.get()).getPartial();
      if (partial.empty())
        continue;
      if (!pending.empty() && partial != pending) {
        carriers.clear();
        break;
      }
      pending = partial;
      carriers.push_back(operand.getOperandNumber());
    }
    bool forward =
        !carriers.empty() &&
        carriers.size() ==
            (sumRule == PendingSumRule::AllOperands ? op.getNumOperands() : 1u);
    for (unsigned i : carriers) {
      Value v = op.getOperand(i);
      forward &= v.hasOneUse() &&
                 getSharding(v).withoutPartial() == plan->requiredOperands[i];
    }
    // Nothing else may vary over the pending axes.
    auto usesPendingAxis = [&](ArrayRef<int64_t> axes) {
      return llvm::any_of(
          axes, [&](int64_t a) { return llvm::is_contained(pending, a); });
    };
    for (const SmallVector<int64_t> &axes : plan->loops)
      forward &= !usesPendingAxis(axes);
    for (OpOperand &operand : op.getOpOperands())
      for (ShardingAttr s :
           {getSharding(operand.get()),
            plan->requiredOperands[operand.getOperandNumber()]})
        for (int64_t d = 0; d < s.getRank(); ++d)
          forward &= !usesPendingAxis(s.getDimAxes(d));
    if (!forward)
      continue;
    ShardingAttr needed;
    for (OpOperand &use : result.getUses()) {
      Operation *user = use.getOwner();
      if (failed(ShardingRule::get(user))) {
        forward = false;
        break;
      }
      FailureOr<OpShardingPlan> userPlan = getOpShardingPlan(user);
      if (failed(userPlan))
        return failure();
      ShardingAttr need = userPlan->requiredOperands[use.getOperandNumber()];
      forward &= !needed || need == needed;
      needed = need;
    }
    if (forward)
      setSharding(result,
                  ShardingAttr::get(ctx, planned.getDimsVector(), pending));
  }
  return success();
}

LogicalResult ApplyPlanPass::checkPinnedNames(func::FuncOp func) {
  llvm::StringSet<> names;
  for (BlockArgument arg : func.getArguments())
    names.insert(getOnnxValueName(arg));
  func.walk([&](Operation *op) {
    for (Value r : op->getResults())
      names.insert(getOnnxValueName(r));
  });
  SmallVector<StringRef> unknown;
  for (const auto &entry : pinned)
    if (!names.contains(entry.first))
      unknown.push_back(entry.first);
  if (unknown.empty())
    return success();
  InFlightDiagnostic diag = func.emitError()
                            << "plan file '" << plan << "' pins '"
                            << unknown.front()
                            << "', which is not a tensor of the model";
  if (unknown.size() > 1)
    diag << " (nor are " << unknown.size() - 1 << " other pinned names)";
  diag.attachNote() << "values computed at import (shape subgraphs, constant "
                       "folding) are not tensors of the compiled model";
  return failure();
}

LogicalResult ApplyPlanPass::annotate(func::FuncOp func) {
  MLIRContext *ctx = &getContext();
  auto replicated = [&](Value v) {
    return ShardingAttr::getReplicated(
        ctx, cast<RankedTensorType>(v.getType()).getRank());
  };
  auto pinnedFor = [&](Value v) -> ShardingAttr {
    if (kind != PlanKind::File)
      return {};
    auto it = pinned.find(getOnnxValueName(v));
    return it == pinned.end() ? ShardingAttr() : it->second;
  };
  auto checkRank = [&](Value v, ShardingAttr s, Location loc) -> LogicalResult {
    int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
    if (s.getRank() != rank)
      return emitError(loc) << "plan gives value '" << getOnnxValueName(v)
                            << "' a sharding of rank " << s.getRank()
                            << ", the value has rank " << rank;
    for (ArrayRef<int64_t> list :
         {ArrayRef<int64_t>(s.getPartial())})
      for (int64_t axis : list)
        if (axis >= (int64_t)gridShape.size())
          return emitError(loc)
                 << "plan value '" << getOnnxValueName(v) << "' uses grid axis "
                 << axis << " on a " << gridShape.size() << "-d grid";
    for (int64_t d = 0; d < rank; ++d)
      for (int64_t axis : s.getDimAxes(d))
        if (axis >= (int64_t)gridShape.size())
          return emitError(loc)
                 << "plan value '" << getOnnxValueName(v) << "' uses grid axis "
                 << axis << " on a " << gridShape.size() << "-d grid";
    return success();
  };

  // Seeds: runtime inputs.
  SmallVector<int64_t> dataAxes;
  if (kind == PlanKind::Data) {
    SmallVector<int64_t> all;
    for (int64_t a = 0; a < (int64_t)gridShape.size(); ++a)
      all.push_back(a);
    dataAxes = activeAxes(all);
  } else if (kind == PlanKind::Tensor && gridShape.size() >= 2) {
    dataAxes = activeAxes({0});
  }
  for (BlockArgument arg : func.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type)
      return emitError(arg.getLoc()) << "runtime input " << arg.getArgNumber()
                                     << " is not a ranked tensor";
    ShardingAttr s = replicated(arg);
    if (ShardingAttr p = pinnedFor(arg)) {
      if (failed(checkRank(arg, p, arg.getLoc())))
        return failure();
      s = p;
    } else if (!dataAxes.empty() && type.getRank() >= 1) {
      SmallVector<SmallVector<int64_t>> dims(type.getRank());
      dims[0] = dataAxes;
      s = ShardingAttr::get(ctx, dims, {});
    }
    setSharding(arg, s);
  }

  // Forward propagation in program order.
  WalkResult walk = func.walk([&](Operation *op) -> WalkResult {
    if (isa<func::FuncOp, func::ReturnOp>(op))
      return WalkResult::advance();
    if (auto weight = dyn_cast<WeightOp>(op)) {
      // Pinned now; otherwise the first consumer decides (below).
      if (ShardingAttr p = pinnedFor(weight)) {
        if (failed(checkRank(weight, p, op->getLoc())))
          return WalkResult::interrupt();
        setSharding(weight, p);
      }
      return WalkResult::advance();
    }
    if (isa<ConstantOp>(op)) {
      ShardingAttr p = pinnedFor(op->getResult(0));
      setSharding(op->getResult(0), p ? p : replicated(op->getResult(0)));
      return WalkResult::advance();
    }
    // Decided by its consumer's Megatron split (below).
    if (kind == PlanKind::Tensor && !pinnedFor(op->getResult(0)) &&
        isDeferredWeightTranspose(op))
      return WalkResult::advance();
    FailureOr<ShardingRule> rule = ShardingRule::get(op);
    if (failed(rule)) {
      op->emitError() << "op '" << op->getName()
                      << "' has no sharding rule; it cannot be planned";
      return WalkResult::interrupt();
    }
    SmallVector<ShardingAttr> operands;
    for (Value v : op->getOperands())
      operands.push_back(getSharding(v));

    // Pinned results fix the loops; otherwise the plan's rule or the operands.
    SmallVector<ShardingAttr> pinnedResults;
    for (Value r : op->getResults())
      if (ShardingAttr p = pinnedFor(r)) {
        if (failed(checkRank(r, p, op->getLoc())))
          return WalkResult::interrupt();
        pinnedResults.push_back(p);
      }
    LoopAxes loops;
    if (!pinnedResults.empty() &&
        pinnedResults.size() == op->getNumResults()) {
      FailureOr<LoopAxes> fromResults =
          rule->getLoopsFromResults(op, pinnedResults, operands);
      if (failed(fromResults))
        return WalkResult::interrupt();
      loops = *fromResults;
    } else if (std::optional<LoopAxes> t =
                   kind == PlanKind::Tensor ? tensorLoops(op, *rule, operands)
                                            : std::nullopt) {
      loops = *t;
    } else {
      loops = rule->getLoopsFromOperands(operands);
    }
    // A deferred weight transpose takes the layout this op reads it in, and
    // its weight the layout that needs no communication for it.
    for (unsigned i = 0; i < op->getNumOperands(); ++i) {
      Value v = op->getOperand(i);
      auto transpose = v.getDefiningOp<TransposeOp>();
      if (!transpose || getSharding(v))
        continue;
      ShardingAttr wanted =
          rule->getOperandSharding(ctx, i, loops).withoutPartial();
      FailureOr<ShardingRule> transposeRule = ShardingRule::get(transpose);
      if (failed(transposeRule)) {
        transpose->emitError() << "op '" << transpose->getName()
                               << "' has no sharding rule; it cannot be "
                                  "planned";
        return WalkResult::interrupt();
      }
      SmallVector<ShardingAttr> none(1);
      FailureOr<LoopAxes> transposeLoops =
          transposeRule->getLoopsFromResults(transpose, {wanted}, none);
      if (failed(transposeLoops))
        return WalkResult::interrupt();
      setSharding(v, transposeRule->getResultSharding(ctx, 0, *transposeLoops));
      setSharding(transpose.getInput(),
                  transposeRule->getOperandSharding(ctx, 0, *transposeLoops)
                      .withoutPartial());
    }
    for (unsigned r = 0; r < op->getNumResults(); ++r)
      setSharding(op->getResult(r), rule->getResultSharding(ctx, r, loops));
    // Weights without a sharding take what this op needs (their first use).
    for (unsigned i = 0; i < op->getNumOperands(); ++i) {
      auto weight = op->getOperand(i).getDefiningOp<WeightOp>();
      if (!weight || getSharding(weight))
        continue;
      setSharding(weight,
                  rule->getOperandSharding(ctx, i, loops).withoutPartial());
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  func.walk([&](WeightOp weight) {
    if (!getSharding(weight))
      setSharding(weight, replicated(weight));
  });
  if (kind == PlanKind::Tensor)
    alignOptimizerUpdates(func);
  if (failed(forwardPendingSums(
          func, [&](Value v) { return static_cast<bool>(pinnedFor(v)); })))
    return failure();
  // Outputs of the data plan stay split as computed (each device writes its
  // block of the batch; a pending sum is summed); the other plans request
  // them replicated.
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  for (unsigned i = 0; i < func.getNumResults(); ++i) {
    auto type = cast<RankedTensorType>(func.getResultTypes()[i]);
    ShardingAttr computed = getSharding(ret.getOperand(i));
    func.setResultAttr(i, kShardingAttrName,
                       kind == PlanKind::Data && computed
                           ? computed.withoutPartial()
                           : ShardingAttr::getReplicated(ctx, type.getRank()));
  }
  return success();
}

void ApplyPlanPass::runOnOperation() {
  ModuleOp module = getOperation();
  MLIRContext *ctx = &getContext();
  std::string error;
  FailureOr<SmallVector<int64_t>> shape = parseGridShape(grid, error);
  if (failed(shape)) {
    module.emitError() << error;
    return signalPassFailure();
  }
  gridShape = *shape;

  kind = llvm::StringSwitch<PlanKind>(plan)
             .Case("replicated", PlanKind::Replicated)
             .Case("data", PlanKind::Data)
             .Case("tensor", PlanKind::Tensor)
             .Default(PlanKind::File);
  if (kind == PlanKind::File) {
    FailureOr<std::map<std::string, ShardingAttr>> values =
        readPlanValues(plan, ctx, module.getLoc());
    if (failed(values))
      return signalPassFailure();
    pinned = std::move(*values);
  }

  // The grid.
  if (shard::GridOp existing = getUniqueGrid(module, /*emitErrors=*/false)) {
    if (existing.getShape() != ArrayRef(gridShape)) {
      module.emitError() << "module already has a grid of another shape";
      return signalPassFailure();
    }
  } else {
    OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
    shard::GridOp::create(b, module.getLoc(), "grid", gridShape);
  }

  auto func = module.lookupSymbol<func::FuncOp>("main");
  if (!func) {
    module.emitError() << "expected a function @main to plan";
    return signalPassFailure();
  }
  if (failed(checkPinnedNames(func)))
    return signalPassFailure();
  if (failed(annotate(func)))
    return signalPassFailure();
}
