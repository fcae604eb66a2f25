//===- ShardingInterfaceImpl.cpp - upstream sharding rules of autopar ops -===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Every autopar compute op states its sharding rule once, through upstream
// `shard::ShardingInterface`: loop iterator types and indexing maps (operands
// then results; a broadcast dimension maps to the constant 0). autopar's
// planner and partitioner read the rule from here, and upstream
// `sharding-propagation`/`shard-partition` can use the same ops.
//
//===----------------------------------------------------------------------===//

#include "autopar/Dialect/Autopar/IR/Autopar.h"

#include "mlir/Dialect/Shard/Interfaces/ShardingInterface.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterfaceImpl.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"

using namespace mlir;
using namespace mlir::autopar;
using utils::IteratorType;

namespace {

/// Loops and maps of one op, operands then results.
struct Rule {
  SmallVector<IteratorType> iterators;
  SmallVector<AffineMap> maps;
};

/// Map of a tensor of `shape` right-aligned onto the loops `loopDims` of a
/// broadcast result of rank loopDims.size(): size-1 dimensions that broadcast
/// map to 0.
static AffineMap broadcastMap(MLIRContext *ctx, unsigned numLoops,
                              ArrayRef<int64_t> shape,
                              ArrayRef<unsigned> loopDims,
                              ArrayRef<int64_t> loopSizes) {
  SmallVector<AffineExpr> exprs;
  size_t offset = loopDims.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i) {
    unsigned loop = loopDims[offset + i];
    if (shape[i] == 1 && loopSizes[offset + i] != 1)
      exprs.push_back(getAffineConstantExpr(0, ctx));
    else
      exprs.push_back(getAffineDimExpr(loop, ctx));
  }
  return AffineMap::get(numLoops, 0, exprs, ctx);
}

static ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

static Rule getRule(MatMulOp op) {
  MLIRContext *ctx = op.getContext();
  ArrayRef<int64_t> a = shapeOf(op.getA()), b = shapeOf(op.getB()),
                    y = shapeOf(op.getResult());
  bool aVec = a.size() == 1, bVec = b.size() == 1;
  // Loops: result dimensions (batch..., m?, n?) then k.
  unsigned numLoops = y.size() + 1;
  unsigned k = y.size();
  unsigned batchRank = y.size() - (aVec ? 0 : 1) - (bVec ? 0 : 1);
  Rule rule;
  rule.iterators.assign(y.size(), IteratorType::parallel);
  rule.iterators.push_back(IteratorType::reduction);
  SmallVector<unsigned> batchLoops;
  for (unsigned i = 0; i < batchRank; ++i)
    batchLoops.push_back(i);
  ArrayRef<int64_t> batchSizes = y.take_front(batchRank);
  auto operandMap = [&](ArrayRef<int64_t> shape, bool isA, bool isVec) {
    unsigned matRank = isVec ? 1 : 2;
    AffineMap batch = broadcastMap(ctx, numLoops, shape.drop_back(matRank),
                                   batchLoops, batchSizes);
    SmallVector<AffineExpr> exprs(batch.getResults());
    AffineExpr kExpr = getAffineDimExpr(k, ctx);
    if (isA) {
      if (!isVec)
        exprs.push_back(getAffineDimExpr(batchRank, ctx)); // m
      exprs.push_back(kExpr);
    } else {
      exprs.push_back(kExpr);
      if (!isVec)
        exprs.push_back(getAffineDimExpr(y.size() - 1, ctx)); // n
    }
    return AffineMap::get(numLoops, 0, exprs, ctx);
  };
  rule.maps.push_back(operandMap(a, true, aVec));
  rule.maps.push_back(operandMap(b, false, bVec));
  // The result walks the leading loops (everything but k).
  rule.maps.push_back(AffineMap::getMultiDimIdentityMap(numLoops, ctx)
                          .getMajorSubMap(y.size()));
  return rule;
}

static Rule getRule(GemmOp op) {
  MLIRContext *ctx = op.getContext();
  AffineExpr m = getAffineDimExpr(0, ctx), n = getAffineDimExpr(1, ctx),
             k = getAffineDimExpr(2, ctx);
  Rule rule;
  rule.iterators = {IteratorType::parallel, IteratorType::parallel,
                    IteratorType::reduction};
  rule.maps.push_back(AffineMap::get(
      3, 0, op.getTransA() ? SmallVector<AffineExpr>{k, m}
                           : SmallVector<AffineExpr>{m, k},
      ctx));
  rule.maps.push_back(AffineMap::get(
      3, 0, op.getTransB() ? SmallVector<AffineExpr>{n, k}
                           : SmallVector<AffineExpr>{k, n},
      ctx));
  if (Value c = op.getC())
    rule.maps.push_back(
        broadcastMap(ctx, 3, shapeOf(c), {0, 1}, shapeOf(op.getResult())));
  rule.maps.push_back(AffineMap::get(3, 0, {m, n}, ctx));
  return rule;
}

/// Elementwise with multidirectional broadcasting: one parallel loop per
/// result dimension.
static Rule getElementwiseRule(Operation *op) {
  MLIRContext *ctx = op->getContext();
  ArrayRef<int64_t> y = shapeOf(op->getResult(0));
  Rule rule;
  rule.iterators.assign(y.size(), IteratorType::parallel);
  SmallVector<unsigned> loops;
  for (unsigned i = 0; i < y.size(); ++i)
    loops.push_back(i);
  for (Value operand : op->getOperands())
    rule.maps.push_back(
        broadcastMap(ctx, y.size(), shapeOf(operand), loops, y));
  rule.maps.push_back(AffineMap::getMultiDimIdentityMap(y.size(), ctx));
  return rule;
}

/// Ops with no operands: one parallel loop per result dimension.
static Rule getSourceRule(Operation *op) {
  ArrayRef<int64_t> y = shapeOf(op->getResult(0));
  Rule rule;
  rule.iterators.assign(y.size(), IteratorType::parallel);
  rule.maps.push_back(
      AffineMap::getMultiDimIdentityMap(y.size(), op->getContext()));
  return rule;
}

static Rule getRuleOf(Operation *op) {
  if (auto matmul = dyn_cast<MatMulOp>(op))
    return getRule(matmul);
  if (auto gemm = dyn_cast<GemmOp>(op))
    return getRule(gemm);
  if (isa<AddOp, ReluOp>(op))
    return getElementwiseRule(op);
  if (isa<WeightOp, ConstantOp>(op))
    return getSourceRule(op);
  llvm_unreachable("op without a sharding rule");
}

/// The upstream interface, implemented from getRuleOf.
template <typename OpTy>
struct AutoparShardingModel
    : public shard::ShardingInterface::ExternalModel<AutoparShardingModel<OpTy>,
                                                     OpTy> {
  SmallVector<IteratorType> getLoopIteratorTypes(Operation *op) const {
    return getRuleOf(op).iterators;
  }

  SmallVector<shard::ReductionKind>
  getReductionLoopIteratorKinds(Operation *op) const {
    SmallVector<shard::ReductionKind> kinds;
    for (IteratorType it : getRuleOf(op).iterators)
      if (it == IteratorType::reduction)
        kinds.push_back(shard::ReductionKind::Sum);
    return kinds;
  }

  SmallVector<AffineMap> getIndexingMaps(Operation *op) const {
    return getRuleOf(op).maps;
  }

  /// Partition for upstream `shard-partition`: a clone on local types, then
  /// an all-reduce of a split reduction (upstream has no pending-sum state).
  LogicalResult partition(Operation *op, ArrayRef<Value> partitionedOperands,
                          ArrayRef<shard::Sharding> operandShardings,
                          ArrayRef<shard::Sharding> resultShardings,
                          IRMapping &partitionMap,
                          SymbolTableCollection &symbolTable,
                          OpBuilder &builder) const {
    Rule rule = getRuleOf(op);
    shard::ShardingArray loopAxes =
        shard::getGridAxisAssignmentForLoopIterators(
            operandShardings, resultShardings, rule.iterators, rule.maps);
    SmallVector<shard::GridAxis> reductionAxes =
        shard::getReductionGridAxes(rule.iterators, loopAxes);
    if (!reductionAxes.empty()) {
      auto partialRule = dyn_cast<PartialSumRuleInterface>(op);
      for (unsigned i = 0; partialRule && i < op->getNumOperands(); ++i)
        if (partialRule.isAdditiveOperand(i))
          return op->emitOpError()
                 << "with a split contraction and an added operand cannot be "
                    "partitioned by upstream shard-partition (it would add "
                    "operand "
                 << i << " on every device); use autopar-partition";
    }
    shard::partitionTriviallyShardableOperation(
        *op, partitionedOperands, operandShardings, resultShardings,
        partitionMap, symbolTable, builder);
    if (reductionAxes.empty())
      return success();
    Value local = partitionMap.lookup(op->getResult(0));
    auto reduced = shard::AllReduceOp::create(
        builder, op->getLoc(), local, resultShardings[0].getGridAttr().getValue(),
        reductionAxes, shard::ReductionKind::Sum);
    partitionMap.map(op->getResult(0), reduced.getResult());
    return success();
  }
};

} // namespace

namespace mlir::autopar {
/// Attaches the upstream sharding interface to every autopar op with a rule.
void attachShardingInterfaceModels(MLIRContext &ctx) {
  MatMulOp::attachInterface<AutoparShardingModel<MatMulOp>>(ctx);
  GemmOp::attachInterface<AutoparShardingModel<GemmOp>>(ctx);
  AddOp::attachInterface<AutoparShardingModel<AddOp>>(ctx);
  ReluOp::attachInterface<AutoparShardingModel<ReluOp>>(ctx);
  WeightOp::attachInterface<AutoparShardingModel<WeightOp>>(ctx);
  ConstantOp::attachInterface<AutoparShardingModel<ConstantOp>>(ctx);
}
} // namespace mlir::autopar
