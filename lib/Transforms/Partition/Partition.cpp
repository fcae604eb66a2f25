//===- Partition.cpp - SPMD partitioning of an annotated module -----------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Turns a module whose values all carry a #autopar.sharding into the program
// one device runs. Per op, the sharding rule (upstream ShardingInterface) and
// the op's result shardings give the loop assignment and from it the sharding
// each operand must have; a mismatch is closed by the single-step collectives
// of planCheapestReshard (fewest bytes per device). Pending sums stay pending until a consumer needs them
// reduced, which is where upstream shard-partition (no partial state in MLIR
// 22) would all-reduce right away.
//
//===----------------------------------------------------------------------===//

#include "autopar/Analysis/Reshard.h"
#include "autopar/Analysis/ShardingRule.h"
#include "autopar/Dialect/Autopar/IR/ShardLayout.h"
#include "autopar/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#define DEBUG_TYPE "autopar-partition"

namespace mlir::autopar {
#define GEN_PASS_DEF_PARTITIONPASS
#include "autopar/Transforms/Passes.h.inc"
} // namespace mlir::autopar

using namespace mlir;
using namespace mlir::autopar;

namespace {

struct PartitionPass
    : public mlir::autopar::impl::PartitionPassBase<PartitionPass> {
  using Base::Base;
  void runOnOperation() override;

private:
  /// Emits the collectives taking `local` (the device's part of a value of
  /// `globalType` with sharding `from`) to sharding `to`.
  FailureOr<Value> reshard(OpBuilder &b, Location loc, Value local,
                           RankedTensorType globalType, ShardingAttr from,
                           ShardingAttr to);
  FailureOr<RankedTensorType> localType(Location loc, RankedTensorType global,
                                        ShardingAttr sharding);
  LogicalResult partitionFunction(func::FuncOp func);

  SmallVector<int64_t> gridShape;
  StringRef gridName;
};

} // namespace

static SmallVector<int16_t> toGridAxes(ArrayRef<int64_t> axes) {
  return llvm::to_vector(
      llvm::map_range(axes, [](int64_t a) { return (int16_t)a; }));
}

/// The uses of `v` before a reshard of it is inserted. Only these move to the
/// reshard's result: the first step of a multi-step reshard reads `v` itself.
static SmallVector<OpOperand *> getUses(Value v) {
  SmallVector<OpOperand *> uses;
  for (OpOperand &use : v.getUses())
    uses.push_back(&use);
  return uses;
}

FailureOr<RankedTensorType>
PartitionPass::localType(Location loc, RankedTensorType global,
                         ShardingAttr sharding) {
  FailureOr<SmallVector<int64_t>> shape =
      getLocalShape(global.getShape(), sharding, gridShape,
                    [&]() { return emitError(loc) << "value "; });
  if (failed(shape))
    return failure();
  return RankedTensorType::get(*shape, global.getElementType());
}

FailureOr<Value> PartitionPass::reshard(OpBuilder &b, Location loc,
                                        Value local,
                                        RankedTensorType globalType,
                                        ShardingAttr from, ShardingAttr to) {
  int64_t elementBytes =
      std::max<int64_t>(1, globalType.getElementTypeBitWidth() / 8);
  for (const ReshardStep &step :
       planCheapestReshard(from, to, globalType.getShape(), elementBytes,
                           gridShape)) {
    FailureOr<RankedTensorType> type = localType(loc, globalType, step.after);
    if (failed(type))
      return failure();
    SmallVector<int16_t> axes = toGridAxes(step.axes);
    switch (step.kind) {
    case ReshardStep::Kind::AllReduce:
      local = shard::AllReduceOp::create(b, loc, *type, gridName, axes, local,
                                         shard::ReductionKind::Sum);
      ++numCollectives;
      break;
    case ReshardStep::Kind::ReduceScatter:
      local = shard::ReduceScatterOp::create(
          b, loc, *type, gridName, axes, local, shard::ReductionKind::Sum,
          llvm::APInt(64, step.dim));
      ++numCollectives;
      break;
    case ReshardStep::Kind::AllGather:
      local = shard::AllGatherOp::create(b, loc, *type, gridName, axes, local,
                                         llvm::APInt(64, step.dim));
      ++numCollectives;
      break;
    case ReshardStep::Kind::AllToAll:
      local = shard::AllToAllOp::create(b, loc, *type, gridName, axes, local,
                                        llvm::APInt(64, step.otherDim),
                                        llvm::APInt(64, step.dim));
      ++numCollectives;
      break;
    case ReshardStep::Kind::AllSlice:
      local = shard::AllSliceOp::create(b, loc, *type, gridName, axes, local,
                                        llvm::APInt(64, step.dim));
      break;
    case ReshardStep::Kind::SwapAxes:
      local = SwapGridAxesOp::create(
          b, loc, local, FlatSymbolRefAttr::get(b.getContext(), gridName),
          b.getDenseI64ArrayAttr(step.axes));
      ++numCollectives;
      break;
    case ReshardStep::Kind::ToPartial:
      local = ToPartialOp::create(b, loc, local,
                                  FlatSymbolRefAttr::get(b.getContext(), gridName),
                                  b.getDenseI64ArrayAttr(step.axes));
      break;
    }
  }
  return local;
}

void PartitionPass::runOnOperation() {
  ModuleOp module = getOperation();
  shard::GridOp grid = getUniqueGrid(module);
  if (!grid)
    return signalPassFailure();
  gridShape.assign(grid.getShape().begin(), grid.getShape().end());
  gridName = grid.getSymName();
  for (auto func : llvm::to_vector(module.getOps<func::FuncOp>())) {
    if (func.isExternal())
      continue;
    if (failed(partitionFunction(func)))
      return signalPassFailure();
  }
}

LogicalResult PartitionPass::partitionFunction(func::FuncOp func) {
  MLIRContext *ctx = &getContext();

  // A stored weight (training state) keeps the weight's own sharding, so
  // each device stores exactly the shard it loads, whatever the plan chose.
  func.walk([&](AssignOp assign) {
    if (ShardingAttr s = getSharding(assign.getWeight()))
      setSharding(assign.getResult(), s);
  });

  // Read the whole plan before the IR changes: shardings and global types of
  // every value, and each op's required operand shardings.
  DenseMap<Value, ShardingAttr> sharding;
  DenseMap<Value, RankedTensorType> globalType;
  DenseMap<Operation *, OpShardingPlan> plans;
  auto record = [&](Value v) -> LogicalResult {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type)
      return success();
    ShardingAttr s = getSharding(v);
    if (!s)
      return emitError(v.getLoc())
             << "value '" << getOnnxValueName(v)
             << "' has no sharding (run autopar-verify-sharded first)";
    sharding[v] = s;
    globalType[v] = type;
    return success();
  };
  for (BlockArgument arg : func.getArguments())
    if (failed(record(arg)))
      return failure();
  WalkResult walk = func.walk([&](Operation *op) -> WalkResult {
    if (isa<func::FuncOp, func::ReturnOp>(op))
      return WalkResult::advance();
    for (Value r : op->getResults())
      if (failed(record(r)))
        return WalkResult::interrupt();
    if (isa<WeightOp, ConstantOp>(op))
      return WalkResult::advance();
    FailureOr<OpShardingPlan> plan = getOpShardingPlan(op);
    if (failed(plan))
      return WalkResult::interrupt();
    plans[op] = std::move(*plan);
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();

  // The ops of the plan, before any reshard is inserted.
  SmallVector<Operation *> ops;
  for (Operation &op : func.getBody().front())
    ops.push_back(&op);

  OpBuilder b(ctx);
  // Runtime inputs: every device reads only its own block of each input (the
  // runtime seeks into the input file), so an argument takes the local type
  // of its planned split and keeps that split and its global type as
  // argument attributes. An input planned as a pending sum is read split
  // and made partial locally.
  b.setInsertionPointToStart(&func.getBody().front());
  for (BlockArgument arg : func.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type)
      continue;
    ShardingAttr planned = sharding.lookup(arg);
    ShardingAttr read = planned.withoutPartial();
    FailureOr<RankedTensorType> local = localType(arg.getLoc(), type, read);
    if (failed(local))
      return failure();
    SmallVector<OpOperand *> uses = getUses(arg);
    arg.setType(*local);
    sharding[arg] = read;
    FailureOr<Value> value = reshard(b, arg.getLoc(), arg, type, read, planned);
    if (failed(value))
      return failure();
    for (OpOperand *use : uses)
      use->set(*value);
    if (*value != arg) {
      sharding[*value] = planned;
      globalType[*value] = type;
    }
    unsigned index = arg.getArgNumber();
    if (read.isReplicated()) {
      func.removeArgAttr(index, kShardingAttrName);
      func.removeArgAttr(index, kGlobalTypeAttrName);
    } else {
      func.setArgAttr(index, kShardingAttrName, read);
      func.setArgAttr(index, kGlobalTypeAttrName, TypeAttr::get(type));
    }
  }

  // Reshards are shared between the consumers of a value.
  DenseMap<std::pair<Value, Attribute>, Value> resharded;
  auto operandAs = [&](Operation *user, Value v, RankedTensorType global,
                       ShardingAttr to) -> FailureOr<Value> {
    ShardingAttr from = sharding.lookup(v);
    assert(from && "every operand was recorded or produced by a reshard");
    if (from == to)
      return v;
    auto key = std::make_pair(v, Attribute(to));
    if (Value done = resharded.lookup(key))
      return done;
    b.setInsertionPoint(user);
    FailureOr<Value> local = reshard(b, v.getLoc(), v, global, from, to);
    if (succeeded(local))
      resharded[key] = *local;
    return local;
  };

  for (Operation *op : ops) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (OpOperand &operand : ret->getOpOperands()) {
        Value v = operand.get();
        auto want = func.getResultAttrOfType<ShardingAttr>(
            operand.getOperandNumber(), kShardingAttrName);
        auto global = dyn_cast<RankedTensorType>(globalType.lookup(v));
        if (!global)
          continue;
        if (!want)
          want = ShardingAttr::getReplicated(ctx, global.getRank());
        // Every device writes its own block of a split output (the runtime
        // writes it at its offset in the output file); a pending sum is
        // summed first.
        want = want.withoutPartial();
        FailureOr<Value> local = operandAs(ret, v, global, want);
        if (failed(local))
          return failure();
        operand.set(*local);
        unsigned index = operand.getOperandNumber();
        if (want.isReplicated()) {
          func.removeResultAttr(index, StringAttr::get(ctx, kShardingAttrName));
        } else {
          func.setResultAttr(index, kShardingAttrName, want);
          func.setResultAttr(index, kGlobalTypeAttrName, TypeAttr::get(global));
        }
      }
      func.setType(FunctionType::get(ctx,
                                     func.getBody().front().getArgumentTypes(),
                                     ret->getOperandTypes()));
      continue;
    }
    if (auto weight = dyn_cast<WeightOp>(op)) {
      Value v = weight.getResult();
      FailureOr<RankedTensorType> type =
          localType(op->getLoc(), globalType[v], sharding[v]);
      if (failed(type))
        return failure();
      weight->setAttr(kGlobalTypeAttrName, TypeAttr::get(globalType[v]));
      v.setType(*type);
      continue;
    }
    if (auto constant = dyn_cast<ConstantOp>(op)) {
      // Constants are materialized whole, then sliced to their sharding.
      Value v = constant.getResult();
      ShardingAttr s = sharding[v];
      constant->removeAttr(kShardingsAttrName);
      b.setInsertionPointAfter(constant);
      SmallVector<OpOperand *> uses = getUses(v);
      FailureOr<Value> local = reshard(
          b, op->getLoc(), v, globalType[v],
          ShardingAttr::getReplicated(ctx, globalType[v].getRank()), s);
      if (failed(local))
        return failure();
      for (OpOperand *use : uses)
        use->set(*local);
      if (*local != v) {
        RankedTensorType global = globalType.lookup(v);
        sharding[*local] = s;
        globalType[*local] = global;
      }
      continue;
    }
    const OpShardingPlan &plan = plans[op];
    for (OpOperand &operand : op->getOpOperands()) {
      Value v = operand.get();
      FailureOr<Value> local =
          operandAs(op, v, globalType.lookup(v),
                    plan.requiredOperands[operand.getOperandNumber()]);
      if (failed(local))
        return failure();
      operand.set(*local);
    }
    for (OpResult r : op->getResults()) {
      FailureOr<RankedTensorType> type = localType(
          op->getLoc(), globalType[r], plan.results[r.getResultNumber()]);
      if (failed(type))
        return failure();
      r.setType(*type);
    }
    // An op computing its values from their global positions keeps the
    // global shape and the result's sharding: the runtime lowering turns the
    // sharding into the device's block offsets.
    if (op->hasTrait<UsesGlobalPosition>()) {
      RankedTensorType global = globalType[op->getResult(0)];
      op->setAttr("global_shape", b.getDenseI64ArrayAttr(global.getShape()));
      ShardingAttr s = plan.results[0];
      if (s.isPartial())
        return op->emitOpError() << "cannot produce a pending sum";
      if (!s.isReplicated())
        op->setAttr(kShardingAttrName, s);
    }
    op->removeAttr(kShardingsAttrName);
  }
  return success();
}
