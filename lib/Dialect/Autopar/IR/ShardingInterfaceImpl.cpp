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
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::autopar;
using utils::IteratorType;

namespace {

/// Loops and maps of one op, operands then results, and which loops may be
/// split.
struct Rule {
  SmallVector<IteratorType> iterators;
  SmallVector<AffineMap> maps;
  /// Per loop; a loop that must stay whole is false.
  SmallVector<bool> splittable;

  /// Adds a loop and returns its position.
  unsigned addLoop(IteratorType type, bool canSplit = true) {
    iterators.push_back(type);
    splittable.push_back(canSplit);
    return iterators.size() - 1;
  }
};

static ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// Builds the map of a tensor whose dimension i walks loop `loops[i]`
/// (std::nullopt: a broadcast or otherwise unsplit dimension, the constant 0).
static AffineMap mapOf(MLIRContext *ctx, unsigned numLoops,
                       ArrayRef<std::optional<unsigned>> loops) {
  SmallVector<AffineExpr> exprs;
  for (std::optional<unsigned> loop : loops)
    exprs.push_back(loop ? getAffineDimExpr(*loop, ctx)
                         : getAffineConstantExpr(0, ctx));
  return AffineMap::get(numLoops, 0, exprs, ctx);
}

/// Map of a tensor of `shape` right-aligned onto the loops `loopDims` of a
/// broadcast result of sizes `loopSizes`: size-1 dimensions that broadcast
/// map to 0.
static AffineMap broadcastMap(MLIRContext *ctx, unsigned numLoops,
                              ArrayRef<int64_t> shape,
                              ArrayRef<unsigned> loopDims,
                              ArrayRef<int64_t> loopSizes) {
  SmallVector<std::optional<unsigned>> loops;
  size_t offset = loopDims.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1 && loopSizes[offset + i] != 1)
      loops.push_back(std::nullopt);
    else
      loops.push_back(loopDims[offset + i]);
  }
  return mapOf(ctx, numLoops, loops);
}

static SmallVector<unsigned> iota(unsigned n, unsigned from = 0) {
  SmallVector<unsigned> v;
  for (unsigned i = 0; i < n; ++i)
    v.push_back(from + i);
  return v;
}

/// One parallel loop per dimension of `shape`; `whole` lists loops that must
/// stay whole.
static Rule parallelRule(ArrayRef<int64_t> shape, ArrayRef<int64_t> whole = {}) {
  Rule rule;
  for (int64_t d = 0; d < (int64_t)shape.size(); ++d)
    rule.addLoop(IteratorType::parallel, !llvm::is_contained(whole, d));
  return rule;
}

static Rule getRule(MatMulOp op) {
  MLIRContext *ctx = op.getContext();
  ArrayRef<int64_t> a = shapeOf(op.getA()), b = shapeOf(op.getB()),
                    y = shapeOf(op.getResult());
  bool aVec = a.size() == 1, bVec = b.size() == 1;
  // Loops: result dimensions (batch..., m?, n?) then k.
  Rule rule = parallelRule(y);
  unsigned k = rule.addLoop(IteratorType::reduction);
  unsigned numLoops = rule.iterators.size();
  unsigned batchRank = y.size() - (aVec ? 0 : 1) - (bVec ? 0 : 1);
  SmallVector<unsigned> batchLoops = iota(batchRank);
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
  // The result walks the leading loops (everything but k); the scalar result
  // of a vector-vector product walks none (getMajorSubMap(0) is a null map).
  SmallVector<AffineExpr> resultExprs;
  for (unsigned i = 0; i < y.size(); ++i)
    resultExprs.push_back(getAffineDimExpr(i, ctx));
  rule.maps.push_back(AffineMap::get(numLoops, 0, resultExprs, ctx));
  return rule;
}

static Rule getRule(GemmOp op) {
  MLIRContext *ctx = op.getContext();
  Rule rule;
  unsigned m = rule.addLoop(IteratorType::parallel);
  unsigned n = rule.addLoop(IteratorType::parallel);
  unsigned k = rule.addLoop(IteratorType::reduction);
  rule.maps.push_back(mapOf(ctx, 3,
                            op.getTransA() ? SmallVector<std::optional<unsigned>>{k, m}
                                           : SmallVector<std::optional<unsigned>>{m, k}));
  rule.maps.push_back(mapOf(ctx, 3,
                            op.getTransB() ? SmallVector<std::optional<unsigned>>{n, k}
                                           : SmallVector<std::optional<unsigned>>{k, n}));
  if (Value c = op.getC())
    rule.maps.push_back(
        broadcastMap(ctx, 3, shapeOf(c), {m, n}, shapeOf(op.getResult())));
  rule.maps.push_back(mapOf(ctx, 3, {m, n}));
  return rule;
}

/// Elementwise with multidirectional broadcasting: one parallel loop per
/// result dimension.
static Rule getElementwiseRule(Operation *op) {
  MLIRContext *ctx = op->getContext();
  ArrayRef<int64_t> y = shapeOf(op->getResult(0));
  Rule rule = parallelRule(y);
  for (Value operand : op->getOperands())
    rule.maps.push_back(
        broadcastMap(ctx, y.size(), shapeOf(operand), iota(y.size()), y));
  rule.maps.push_back(AffineMap::getMultiDimIdentityMap(y.size(), ctx));
  return rule;
}

/// Every operand and result has the same shape as the first result; loops in
/// `whole` stay whole.
static Rule getIdentityRule(Operation *op, ArrayRef<int64_t> whole) {
  MLIRContext *ctx = op->getContext();
  ArrayRef<int64_t> y = shapeOf(op->getResult(0));
  Rule rule = parallelRule(y, whole);
  for (unsigned i = 0, e = op->getNumOperands() + op->getNumResults(); i < e;
       ++i)
    rule.maps.push_back(AffineMap::getMultiDimIdentityMap(y.size(), ctx));
  return rule;
}

/// Ops with no operands: one parallel loop per result dimension.
static Rule getSourceRule(Operation *op) {
  ArrayRef<int64_t> y = shapeOf(op->getResult(0));
  Rule rule = parallelRule(y);
  rule.maps.push_back(
      AffineMap::getMultiDimIdentityMap(y.size(), op->getContext()));
  return rule;
}

static Rule getRule(LayerNormOp op) {
  MLIRContext *ctx = op.getContext();
  ArrayRef<int64_t> x = shapeOf(op.getInput());
  SmallVector<int64_t> whole;
  for (int64_t d = op.getAxis(); d < (int64_t)x.size(); ++d)
    whole.push_back(d);
  Rule rule = parallelRule(x, whole);
  rule.maps.push_back(AffineMap::getMultiDimIdentityMap(x.size(), ctx));
  for (Value v : {op.getScale(), op.getBias()})
    if (v)
      rule.maps.push_back(
          broadcastMap(ctx, x.size(), shapeOf(v), iota(x.size()), x));
  rule.maps.push_back(AffineMap::getMultiDimIdentityMap(x.size(), ctx));
  return rule;
}

static Rule getRule(BatchNormOp op) {
  MLIRContext *ctx = op.getContext();
  ArrayRef<int64_t> x = shapeOf(op.getInput());
  Rule rule = parallelRule(x);
  rule.maps.push_back(AffineMap::getMultiDimIdentityMap(x.size(), ctx));
  for (unsigned i = 1; i < 5; ++i)
    rule.maps.push_back(mapOf(ctx, x.size(), {1u}));
  rule.maps.push_back(AffineMap::getMultiDimIdentityMap(x.size(), ctx));
  return rule;
}

/// Reductions: one loop per input dimension; a sum may be split (pending
/// sum), a mean or max may not.
static Rule getReduceRule(Operation *op, ArrayRef<int64_t> axes, bool keepdims,
                          bool splittableReduction) {
  MLIRContext *ctx = op->getContext();
  ArrayRef<int64_t> x = shapeOf(op->getOperand(0));
  Rule rule;
  SmallVector<std::optional<unsigned>> resultLoops;
  for (int64_t d = 0; d < (int64_t)x.size(); ++d) {
    bool reduced = llvm::is_contained(axes, d);
    unsigned loop = rule.addLoop(reduced ? IteratorType::reduction
                                         : IteratorType::parallel,
                                 !reduced || splittableReduction);
    if (!reduced)
      resultLoops.push_back(loop);
    else if (keepdims)
      resultLoops.push_back(std::nullopt);
  }
  rule.maps.push_back(AffineMap::getMultiDimIdentityMap(x.size(), ctx));
  rule.maps.push_back(mapOf(ctx, x.size(), resultLoops));
  return rule;
}

static Rule getRule(TransposeOp op) {
  MLIRContext *ctx = op.getContext();
  ArrayRef<int64_t> perm = op.getPerm();
  Rule rule = parallelRule(shapeOf(op.getResult()));
  SmallVector<std::optional<unsigned>> inputLoops(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inputLoops[p] = i;
  rule.maps.push_back(mapOf(ctx, perm.size(), inputLoops));
  rule.maps.push_back(AffineMap::getMultiDimIdentityMap(perm.size(), ctx));
  return rule;
}

/// Reshape: dimensions are grouped into runs with equal products on both
/// sides; the major (first non-unit) dimensions of a group are the same
/// contiguous split on both sides, so they share a loop. Every other output
/// dimension gets a loop that stays whole; other input dimensions stay whole.
static Rule getRule(ReshapeOp op) {
  MLIRContext *ctx = op.getContext();
  ArrayRef<int64_t> in = shapeOf(op.getInput()), out = shapeOf(op.getResult());
  Rule rule;
  SmallVector<std::optional<unsigned>> inLoops(in.size()), outLoops(out.size());
  // Groups: [i0, i1) x [j0, j1).
  size_t i = 0, j = 0;
  auto majorOf = [](ArrayRef<int64_t> shape, size_t from, size_t to) {
    for (size_t d = from; d < to; ++d)
      if (shape[d] != 1)
        return std::optional<size_t>(d);
    return std::optional<size_t>();
  };
  while (i < in.size() && j < out.size()) {
    size_t i0 = i, j0 = j;
    int64_t pi = in[i++], pj = out[j++];
    while (pi != pj) {
      if (pi < pj && i < in.size())
        pi *= in[i++];
      else if (pj < pi && j < out.size())
        pj *= out[j++];
      else
        break;
    }
    // Trailing unit dimensions join the group.
    while (i < in.size() && in[i] == 1 && (j >= out.size() || out[j] != 1))
      ++i;
    std::optional<size_t> inMajor = majorOf(in, i0, i);
    std::optional<size_t> outMajor = majorOf(out, j0, j);
    for (size_t d = j0; d < j; ++d) {
      bool shared = inMajor && outMajor && d == *outMajor;
      unsigned loop = rule.addLoop(IteratorType::parallel, shared);
      outLoops[d] = loop;
      if (shared)
        inLoops[*inMajor] = loop;
    }
  }
  for (; j < out.size(); ++j)
    outLoops[j] = rule.addLoop(IteratorType::parallel, false);
  rule.maps.push_back(mapOf(ctx, rule.iterators.size(), inLoops));
  rule.maps.push_back(mapOf(ctx, rule.iterators.size(), outLoops));
  return rule;
}

static Rule getRule(ExpandOp op) {
  MLIRContext *ctx = op.getContext();
  ArrayRef<int64_t> y = shapeOf(op.getResult());
  Rule rule = parallelRule(y);
  rule.maps.push_back(
      broadcastMap(ctx, y.size(), shapeOf(op.getInput()), iota(y.size()), y));
  rule.maps.push_back(AffineMap::getMultiDimIdentityMap(y.size(), ctx));
  return rule;
}

/// A slice keeps the split of the dimensions it takes whole.
static Rule getRule(SliceOp op) {
  MLIRContext *ctx = op.getContext();
  ArrayRef<int64_t> in = shapeOf(op.getInput()), out = shapeOf(op.getResult());
  SmallVector<int64_t> whole;
  for (int64_t d = 0; d < (int64_t)in.size(); ++d)
    if (op.getStarts()[d] != 0 || op.getSteps()[d] != 1 || in[d] != out[d])
      whole.push_back(d);
  Rule rule = parallelRule(out, whole);
  rule.maps.push_back(AffineMap::getMultiDimIdentityMap(in.size(), ctx));
  rule.maps.push_back(AffineMap::getMultiDimIdentityMap(out.size(), ctx));
  return rule;
}

static Rule getRule(GatherOp op) {
  MLIRContext *ctx = op.getContext();
  ArrayRef<int64_t> data = shapeOf(op.getData());
  int64_t axis = op.getAxis();
  int64_t indexRank = shapeOf(op.getIndices()).size();
  ArrayRef<int64_t> y = shapeOf(op.getResult());
  Rule rule = parallelRule(y);
  SmallVector<std::optional<unsigned>> dataLoops;
  for (int64_t d = 0; d < (int64_t)data.size(); ++d) {
    if (d < axis)
      dataLoops.push_back(d);
    else if (d == axis)
      dataLoops.push_back(std::nullopt); // gathered: stays whole
    else
      dataLoops.push_back(d - 1 + indexRank);
  }
  rule.maps.push_back(mapOf(ctx, y.size(), dataLoops));
  SmallVector<std::optional<unsigned>> indexLoops;
  for (int64_t d = 0; d < indexRank; ++d)
    indexLoops.push_back(axis + d);
  rule.maps.push_back(mapOf(ctx, y.size(), indexLoops));
  rule.maps.push_back(AffineMap::getMultiDimIdentityMap(y.size(), ctx));
  return rule;
}

/// Conv: loops n, m, output positions, then c and the kernel positions
/// (reductions). Batch and output channels split freely; input channels split
/// as a pending sum (the bias joins it) when there are no groups; windows
/// stay whole.
static Rule getRule(ConvOp op) {
  MLIRContext *ctx = op.getContext();
  ArrayRef<int64_t> x = shapeOf(op.getInput());
  size_t spatial = x.size() - 2;
  bool grouped = op.getGroup() != 1;
  Rule rule;
  unsigned n = rule.addLoop(IteratorType::parallel);
  unsigned m = rule.addLoop(IteratorType::parallel, !grouped);
  SmallVector<unsigned> outPos, kernelPos;
  for (size_t i = 0; i < spatial; ++i)
    outPos.push_back(rule.addLoop(IteratorType::parallel, false));
  unsigned c = rule.addLoop(IteratorType::reduction, !grouped);
  for (size_t i = 0; i < spatial; ++i)
    kernelPos.push_back(rule.addLoop(IteratorType::reduction, false));
  unsigned numLoops = rule.iterators.size();
  SmallVector<std::optional<unsigned>> xLoops = {n, grouped ? std::nullopt
                                                            : std::optional(c)};
  xLoops.append(spatial, std::nullopt);
  rule.maps.push_back(mapOf(ctx, numLoops, xLoops));
  SmallVector<std::optional<unsigned>> wLoops = {m, c};
  wLoops.append(kernelPos.begin(), kernelPos.end());
  rule.maps.push_back(mapOf(ctx, numLoops, wLoops));
  if (op.getBias())
    rule.maps.push_back(mapOf(ctx, numLoops, {m}));
  SmallVector<std::optional<unsigned>> yLoops = {n, m};
  yLoops.append(outPos.begin(), outPos.end());
  rule.maps.push_back(mapOf(ctx, numLoops, yLoops));
  return rule;
}

/// Pooling: batch and channels split, windows stay whole.
static Rule getPoolRule(Operation *op) {
  MLIRContext *ctx = op->getContext();
  ArrayRef<int64_t> y = shapeOf(op->getResult(0));
  SmallVector<int64_t> whole;
  for (int64_t d = 2; d < (int64_t)y.size(); ++d)
    whole.push_back(d);
  Rule rule = parallelRule(y, whole);
  SmallVector<std::optional<unsigned>> xLoops = {0u, 1u};
  xLoops.append(y.size() - 2, std::nullopt);
  rule.maps.push_back(mapOf(ctx, y.size(), xLoops));
  rule.maps.push_back(AffineMap::getMultiDimIdentityMap(y.size(), ctx));
  return rule;
}

/// Einsum: a loop per letter (output letters first); letters summed away are
/// reductions and may be split (pending sum).
static Rule getRule(EinsumOp op) {
  MLIRContext *ctx = op.getContext();
  FailureOr<EinsumEquation> eq = parseEinsumEquation(op.getEquation());
  assert(succeeded(eq) && "verified einsum equation");
  std::string letters = eq->output;
  for (const std::string &term : eq->inputs)
    for (char c : term)
      if (letters.find(c) == std::string::npos)
        letters.push_back(c);
  Rule rule;
  for (size_t i = 0; i < letters.size(); ++i)
    rule.addLoop(i < eq->output.size() ? IteratorType::parallel
                                       : IteratorType::reduction);
  auto termMap = [&](StringRef term, ArrayRef<int64_t> shape) {
    SmallVector<std::optional<unsigned>> loops;
    for (auto [c, size] : llvm::zip(term, shape)) {
      unsigned loop = letters.find(c);
      // A size-1 dimension against a larger letter size broadcasts.
      bool broadcast = false;
      if (size == 1)
        for (auto [t, operand] : llvm::zip(eq->inputs, op.getInputs()))
          for (auto [c2, s2] : llvm::zip(t, shapeOf(operand)))
            broadcast |= c2 == c && s2 != 1;
      loops.push_back(broadcast ? std::nullopt : std::optional(loop));
    }
    return mapOf(ctx, letters.size(), loops);
  };
  for (auto [term, operand] : llvm::zip(eq->inputs, op.getInputs()))
    rule.maps.push_back(termMap(term, shapeOf(operand)));
  rule.maps.push_back(termMap(eq->output, shapeOf(op.getResult())));
  return rule;
}

static Rule getRuleOf(Operation *op) {
  return llvm::TypeSwitch<Operation *, Rule>(op)
      .Case<MatMulOp, GemmOp, LayerNormOp, BatchNormOp, TransposeOp, ReshapeOp,
            ExpandOp, SliceOp, GatherOp, ConvOp, EinsumOp>(
          [](auto typed) { return getRule(typed); })
      .Case<AddOp, SubOp, MulOp, DivOp, PowOp, AndOp, EqualOp, LessOp,
            GreaterOp, WhereOp, ReluOp, AbsOp, NegOp, SqrtOp, ReciprocalOp,
            ExpOp, LogOp, SigmoidOp, TanhOp, ErfOp, NotOp, LeakyReluOp, GeluOp,
            ClipOp, CastOp>([](Operation *op) { return getElementwiseRule(op); })
      .Case<SoftmaxOp, LogSoftmaxOp>([](auto typed) {
        return getIdentityRule(typed, {(int64_t)typed.getAxis()});
      })
      .Case<ConcatOp, SplitOp>([](auto typed) {
        return getIdentityRule(typed, {(int64_t)typed.getAxis()});
      })
      .Case<ReduceSumOp>([](ReduceSumOp typed) {
        return getReduceRule(typed, typed.getAxes(), typed.getKeepdims(),
                             /*splittableReduction=*/true);
      })
      .Case<ReduceMeanOp, ReduceMaxOp>([](auto typed) {
        return getReduceRule(typed, typed.getAxes(), typed.getKeepdims(),
                             /*splittableReduction=*/false);
      })
      .Case<GlobalAveragePoolOp>([](GlobalAveragePoolOp typed) {
        SmallVector<int64_t> spatial;
        for (int64_t d = 2; d < (int64_t)shapeOf(typed.getInput()).size(); ++d)
          spatial.push_back(d);
        return getReduceRule(typed, spatial, /*keepdims=*/true,
                             /*splittableReduction=*/false);
      })
      .Case<MaxPoolOp, AveragePoolOp>(
          [](Operation *op) { return getPoolRule(op); })
      .Case<WeightOp, ConstantOp>([](Operation *op) { return getSourceRule(op); })
      .Default([](Operation *) -> Rule {
        llvm_unreachable("op without a sharding rule");
      });
}

/// autopar's completion of the rule: additive operands, loops kept whole.
template <typename OpTy>
struct AutoparShardingRuleModel
    : public ShardingRuleInterface::ExternalModel<AutoparShardingRuleModel<OpTy>,
                                                  OpTy> {
  bool isAdditiveOperand(Operation *op, unsigned index) const {
    // The bias of Gemm (C) and of Conv.
    return isa<GemmOp, ConvOp>(op) && index == 2;
  }
  bool isLoopSplittable(Operation *op, unsigned loop) const {
    Rule rule = getRuleOf(op);
    return loop < rule.splittable.size() && rule.splittable[loop];
  }
};

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
      auto partialRule = dyn_cast<ShardingRuleInterface>(op);
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
template <typename... OpTys> static void attachModels(MLIRContext &ctx) {
  (OpTys::template attachInterface<AutoparShardingModel<OpTys>,
                                   AutoparShardingRuleModel<OpTys>>(ctx),
   ...);
}

void attachShardingInterfaceModels(MLIRContext &ctx) {
  attachModels<MatMulOp, GemmOp, AddOp, ReluOp, WeightOp, ConstantOp, AbsOp,
               NegOp, SqrtOp, ReciprocalOp, ExpOp, LogOp, SigmoidOp, TanhOp,
               ErfOp, NotOp, LeakyReluOp, GeluOp, ClipOp, CastOp, SubOp, MulOp,
               DivOp, PowOp, AndOp, EqualOp, LessOp, GreaterOp, WhereOp,
               SoftmaxOp, LogSoftmaxOp, LayerNormOp, BatchNormOp, ReduceSumOp,
               ReduceMeanOp, ReduceMaxOp, TransposeOp, ReshapeOp, ExpandOp,
               ConcatOp, SplitOp, SliceOp, GatherOp, ConvOp, MaxPoolOp,
               AveragePoolOp, GlobalAveragePoolOp, EinsumOp>(ctx);
}
} // namespace mlir::autopar
