//===- ShardingRules.cpp - the loop sharding rule of each autopar op ------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The `getShardingRule()` of every autopar op that does not use the
// elementwise default of ShardingRuleInterface: loop iterator types, indexing
// maps (operands then results; a broadcast dimension maps to the constant 0)
// and the loops that must stay whole. ShardingInterfaceImpl.cpp turns each
// rule into upstream `shard::ShardingInterface`.
//
//===----------------------------------------------------------------------===//

#include "autopar/Dialect/Autopar/IR/Autopar.h"
#include "autopar/Dialect/Autopar/IR/PendingSums.h"

#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"
#include "llvm/ADT/Sequence.h"

using namespace mlir;
using namespace mlir::autopar;
using utils::IteratorType;

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
static LoopShardingRule parallelRule(ArrayRef<int64_t> shape,
                                     ArrayRef<int64_t> whole = {}) {
  LoopShardingRule rule;
  for (int64_t d = 0; d < (int64_t)shape.size(); ++d)
    rule.addLoop(IteratorType::parallel, !llvm::is_contained(whole, d));
  return rule;
}

LoopShardingRule MatMulOp::getShardingRule() {
  MatMulOp op = *this;
  MLIRContext *ctx = op.getContext();
  ArrayRef<int64_t> a = shapeOf(op.getA()), b = shapeOf(op.getB()),
                    y = shapeOf(op.getResult());
  bool aVec = a.size() == 1, bVec = b.size() == 1;
  // Loops: result dimensions (batch..., m?, n?) then k.
  LoopShardingRule rule = parallelRule(y);
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

LoopShardingRule GemmOp::getShardingRule() {
  GemmOp op = *this;
  MLIRContext *ctx = op.getContext();
  LoopShardingRule rule;
  unsigned m = rule.addLoop(IteratorType::parallel);
  unsigned n = rule.addLoop(IteratorType::parallel);
  unsigned k = rule.addLoop(IteratorType::reduction);
  rule.maps.push_back(mapOf(ctx, 3,
                            op.getTransA()
                                ? SmallVector<std::optional<unsigned>>{k, m}
                                : SmallVector<std::optional<unsigned>>{m, k}));
  rule.maps.push_back(mapOf(ctx, 3,
                            op.getTransB()
                                ? SmallVector<std::optional<unsigned>>{n, k}
                                : SmallVector<std::optional<unsigned>>{k, n}));
  if (Value c = op.getC())
    rule.maps.push_back(
        broadcastMap(ctx, 3, shapeOf(c), {m, n}, shapeOf(op.getResult())));
  rule.maps.push_back(mapOf(ctx, 3, {m, n}));
  return rule;
}

LoopShardingRule mlir::autopar::getElementwiseShardingRule(Operation *op) {
  MLIRContext *ctx = op->getContext();
  ArrayRef<int64_t> y = shapeOf(op->getResult(0));
  LoopShardingRule rule = parallelRule(y);
  for (Value operand : op->getOperands())
    rule.maps.push_back(
        broadcastMap(ctx, y.size(), shapeOf(operand), iota(y.size()), y));
  rule.maps.push_back(AffineMap::getMultiDimIdentityMap(y.size(), ctx));
  return rule;
}

/// Every operand and result has the same shape as the first result; loops in
/// `whole` stay whole.
static LoopShardingRule getIdentityRule(Operation *op,
                                        ArrayRef<int64_t> whole) {
  MLIRContext *ctx = op->getContext();
  ArrayRef<int64_t> y = shapeOf(op->getResult(0));
  LoopShardingRule rule = parallelRule(y, whole);
  for (unsigned i = 0, e = op->getNumOperands() + op->getNumResults(); i < e;
       ++i)
    rule.maps.push_back(AffineMap::getMultiDimIdentityMap(y.size(), ctx));
  return rule;
}

/// Ops with no operands: one parallel loop per result dimension.
static LoopShardingRule getSourceRule(Operation *op) {
  ArrayRef<int64_t> y = shapeOf(op->getResult(0));
  LoopShardingRule rule = parallelRule(y);
  rule.maps.push_back(
      AffineMap::getMultiDimIdentityMap(y.size(), op->getContext()));
  return rule;
}

LoopShardingRule LayerNormOp::getShardingRule() {
  LayerNormOp op = *this;
  MLIRContext *ctx = op.getContext();
  ArrayRef<int64_t> x = shapeOf(op.getInput());
  SmallVector<int64_t> whole;
  for (int64_t d = op.getAxis(); d < (int64_t)x.size(); ++d)
    whole.push_back(d);
  LoopShardingRule rule = parallelRule(x, whole);
  rule.maps.push_back(AffineMap::getMultiDimIdentityMap(x.size(), ctx));
  for (Value v : {op.getScale(), op.getBias()})
    if (v)
      rule.maps.push_back(
          broadcastMap(ctx, x.size(), shapeOf(v), iota(x.size()), x));
  rule.maps.push_back(AffineMap::getMultiDimIdentityMap(x.size(), ctx));
  return rule;
}

LoopShardingRule BatchNormOp::getShardingRule() {
  BatchNormOp op = *this;
  MLIRContext *ctx = op.getContext();
  ArrayRef<int64_t> x = shapeOf(op.getInput());
  LoopShardingRule rule = parallelRule(x);
  rule.maps.push_back(AffineMap::getMultiDimIdentityMap(x.size(), ctx));
  for (unsigned i = 1; i < 5; ++i)
    rule.maps.push_back(mapOf(ctx, x.size(), {1u}));
  rule.maps.push_back(AffineMap::getMultiDimIdentityMap(x.size(), ctx));
  return rule;
}

/// Quantize and dequantize: elementwise; a per-axis scale and zero point
/// follow the loop of their axis, per-tensor ones are broadcast.
static LoopShardingRule getQuantizationRule(Operation *op, int64_t axis) {
  MLIRContext *ctx = op->getContext();
  ArrayRef<int64_t> x = shapeOf(op->getOperand(0));
  ArrayRef<int64_t> scale = shapeOf(op->getOperand(1));
  LoopShardingRule rule = parallelRule(x);
  auto identity = AffineMap::getMultiDimIdentityMap(x.size(), ctx);
  rule.maps.push_back(identity);
  SmallVector<std::optional<unsigned>> params;
  if (!scale.empty())
    params.push_back(ShapedType::getNumElements(scale) == 1
                         ? std::nullopt
                         : std::optional<unsigned>(axis));
  rule.maps.push_back(mapOf(ctx, x.size(), params));
  rule.maps.push_back(mapOf(ctx, x.size(), params));
  rule.maps.push_back(identity);
  return rule;
}

LoopShardingRule QuantizeLinearOp::getShardingRule() {
  return getQuantizationRule(*this, getAxis());
}

LoopShardingRule DequantizeLinearOp::getShardingRule() {
  return getQuantizationRule(*this, getAxis());
}

/// Reductions: one loop per input dimension; a sum may be split (pending
/// sum), a mean or max may not.
static LoopShardingRule getReduceRule(Operation *op, ArrayRef<int64_t> axes,
                                      bool keepdims, bool splittableReduction) {
  MLIRContext *ctx = op->getContext();
  ArrayRef<int64_t> x = shapeOf(op->getOperand(0));
  LoopShardingRule rule;
  SmallVector<std::optional<unsigned>> resultLoops;
  for (int64_t d = 0; d < (int64_t)x.size(); ++d) {
    bool reduced = llvm::is_contained(axes, d);
    unsigned loop =
        rule.addLoop(reduced ? IteratorType::reduction : IteratorType::parallel,
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

LoopShardingRule TransposeOp::getShardingRule() {
  TransposeOp op = *this;
  MLIRContext *ctx = op.getContext();
  ArrayRef<int64_t> perm = op.getPerm();
  LoopShardingRule rule = parallelRule(shapeOf(op.getResult()));
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
LoopShardingRule ReshapeOp::getShardingRule() {
  ReshapeOp op = *this;
  MLIRContext *ctx = op.getContext();
  ArrayRef<int64_t> in = shapeOf(op.getInput()), out = shapeOf(op.getResult());
  LoopShardingRule rule;
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

LoopShardingRule ExpandOp::getShardingRule() {
  ExpandOp op = *this;
  MLIRContext *ctx = op.getContext();
  ArrayRef<int64_t> y = shapeOf(op.getResult());
  LoopShardingRule rule = parallelRule(y);
  rule.maps.push_back(
      broadcastMap(ctx, y.size(), shapeOf(op.getInput()), iota(y.size()), y));
  rule.maps.push_back(AffineMap::getMultiDimIdentityMap(y.size(), ctx));
  return rule;
}

/// A slice keeps the split of the dimensions it takes whole.
LoopShardingRule SliceOp::getShardingRule() {
  SliceOp op = *this;
  MLIRContext *ctx = op.getContext();
  ArrayRef<int64_t> in = shapeOf(op.getInput()), out = shapeOf(op.getResult());
  SmallVector<int64_t> whole;
  for (int64_t d = 0; d < (int64_t)in.size(); ++d)
    if (op.getStarts()[d] != 0 || op.getSteps()[d] != 1 || in[d] != out[d])
      whole.push_back(d);
  LoopShardingRule rule = parallelRule(out, whole);
  rule.maps.push_back(AffineMap::getMultiDimIdentityMap(in.size(), ctx));
  rule.maps.push_back(AffineMap::getMultiDimIdentityMap(out.size(), ctx));
  return rule;
}

LoopShardingRule GatherOp::getShardingRule() {
  GatherOp op = *this;
  MLIRContext *ctx = op.getContext();
  ArrayRef<int64_t> data = shapeOf(op.getData());
  int64_t axis = op.getAxis();
  int64_t indexRank = shapeOf(op.getIndices()).size();
  ArrayRef<int64_t> y = shapeOf(op.getResult());
  LoopShardingRule rule = parallelRule(y);
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
LoopShardingRule ConvOp::getShardingRule() {
  ConvOp op = *this;
  MLIRContext *ctx = op.getContext();
  ArrayRef<int64_t> x = shapeOf(op.getInput());
  size_t spatial = x.size() - 2;
  bool grouped = op.getGroup() != 1;
  LoopShardingRule rule;
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
static LoopShardingRule getPoolRule(Operation *op) {
  MLIRContext *ctx = op->getContext();
  ArrayRef<int64_t> y = shapeOf(op->getResult(0));
  SmallVector<int64_t> whole;
  for (int64_t d = 2; d < (int64_t)y.size(); ++d)
    whole.push_back(d);
  LoopShardingRule rule = parallelRule(y, whole);
  SmallVector<std::optional<unsigned>> xLoops = {0u, 1u};
  xLoops.append(y.size() - 2, std::nullopt);
  rule.maps.push_back(mapOf(ctx, y.size(), xLoops));
  rule.maps.push_back(AffineMap::getMultiDimIdentityMap(y.size(), ctx));
  return rule;
}

/// Einsum: a loop per letter (output letters first); letters summed away are
/// reductions and may be split (pending sum).
LoopShardingRule EinsumOp::getShardingRule() {
  EinsumOp op = *this;
  MLIRContext *ctx = op.getContext();
  FailureOr<EinsumEquation> eq = parseEinsumEquation(op.getEquation());
  assert(succeeded(eq) && "verified einsum equation");
  std::string letters = eq->output;
  for (const std::string &term : eq->inputs)
    for (char c : term)
      if (letters.find(c) == std::string::npos)
        letters.push_back(c);
  LoopShardingRule rule;
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

LoopShardingRule SoftmaxOp::getShardingRule() {
  return getIdentityRule(*this, {(int64_t)getAxis()});
}

LoopShardingRule LogSoftmaxOp::getShardingRule() {
  return getIdentityRule(*this, {(int64_t)getAxis()});
}

LoopShardingRule ConcatOp::getShardingRule() {
  return getIdentityRule(*this, {(int64_t)getAxis()});
}

LoopShardingRule SplitOp::getShardingRule() {
  return getIdentityRule(*this, {(int64_t)getAxis()});
}

LoopShardingRule ReduceSumOp::getShardingRule() {
  return getReduceRule(*this, getAxes(), getKeepdims(),
                       /*splittableReduction=*/true);
}

LoopShardingRule ReduceMeanOp::getShardingRule() {
  return getReduceRule(*this, getAxes(), getKeepdims(),
                       /*splittableReduction=*/false);
}

LoopShardingRule ReduceMaxOp::getShardingRule() {
  return getReduceRule(*this, getAxes(), getKeepdims(),
                       /*splittableReduction=*/false);
}

LoopShardingRule ReduceMinOp::getShardingRule() {
  return getReduceRule(*this, getAxes(), getKeepdims(),
                       /*splittableReduction=*/false);
}

/// A product is no sum: the reduced dimensions stay whole.
LoopShardingRule ReduceProdOp::getShardingRule() {
  return getReduceRule(*this, getAxes(), getKeepdims(),
                       /*splittableReduction=*/false);
}

/// sum(|x|) over shards is the sum of the shards' sums: a pending sum.
LoopShardingRule ReduceL1Op::getShardingRule() {
  return getReduceRule(*this, getAxes(), getKeepdims(),
                       /*splittableReduction=*/true);
}

/// sum(x^2) over shards is the sum of the shards' sums: a pending sum.
LoopShardingRule ReduceSumSquareOp::getShardingRule() {
  return getReduceRule(*this, getAxes(), getKeepdims(),
                       /*splittableReduction=*/true);
}

/// sqrt, log and log-sum-exp of a sum are not sums: reduced dimensions stay
/// whole.
LoopShardingRule ReduceL2Op::getShardingRule() {
  return getReduceRule(*this, getAxes(), getKeepdims(),
                       /*splittableReduction=*/false);
}

LoopShardingRule ReduceLogSumOp::getShardingRule() {
  return getReduceRule(*this, getAxes(), getKeepdims(),
                       /*splittableReduction=*/false);
}

LoopShardingRule ReduceLogSumExpOp::getShardingRule() {
  return getReduceRule(*this, getAxes(), getKeepdims(),
                       /*splittableReduction=*/false);
}

/// ArgMax / ArgMin: the other dimensions split, the axis stays whole (an
/// index is no sum).
LoopShardingRule ArgMaxOp::getShardingRule() {
  return getReduceRule(*this, {(int64_t)getAxis()}, getKeepdims(),
                       /*splittableReduction=*/false);
}

LoopShardingRule ArgMinOp::getShardingRule() {
  return getReduceRule(*this, {(int64_t)getAxis()}, getKeepdims(),
                       /*splittableReduction=*/false);
}

/// GatherElements: one loop per result (indices) dimension. The gathered
/// axis splits the indices only (data stays whole along it); another
/// dimension splits both when data and indices have the same size there,
/// and otherwise stays whole (the shards would not line up).
LoopShardingRule GatherElementsOp::getShardingRule() {
  GatherElementsOp op = *this;
  MLIRContext *ctx = op.getContext();
  ArrayRef<int64_t> data = shapeOf(op.getData()),
                    indices = shapeOf(op.getIndices());
  int64_t axis = op.getAxis();
  LoopShardingRule rule;
  SmallVector<std::optional<unsigned>> dataLoops;
  for (int64_t d = 0; d < (int64_t)indices.size(); ++d) {
    bool aligned = d != axis && data[d] == indices[d];
    unsigned loop = rule.addLoop(IteratorType::parallel, d == axis || aligned);
    dataLoops.push_back(aligned ? std::optional<unsigned>(loop) : std::nullopt);
  }
  rule.maps.push_back(mapOf(ctx, indices.size(), dataLoops));
  rule.maps.push_back(AffineMap::getMultiDimIdentityMap(indices.size(), ctx));
  rule.maps.push_back(AffineMap::getMultiDimIdentityMap(indices.size(), ctx));
  return rule;
}

/// Pad: dimensions without pads split (input and result alike); padded
/// dimensions stay whole. The pad value is a replicated scalar.
LoopShardingRule PadOp::getShardingRule() {
  PadOp op = *this;
  MLIRContext *ctx = op.getContext();
  ArrayRef<int64_t> y = shapeOf(op.getResult());
  ArrayRef<int64_t> pads = op.getPads();
  int64_t rank = y.size();
  SmallVector<int64_t> whole;
  for (int64_t d = 0; d < rank; ++d)
    if (pads[d] != 0 || pads[rank + d] != 0)
      whole.push_back(d);
  LoopShardingRule rule = parallelRule(y, whole);
  rule.maps.push_back(AffineMap::getMultiDimIdentityMap(rank, ctx));
  if (Value value = op.getValue())
    rule.maps.push_back(mapOf(ctx, rank,
                              SmallVector<std::optional<unsigned>>(
                                  shapeOf(value).size(), std::nullopt)));
  rule.maps.push_back(AffineMap::getMultiDimIdentityMap(rank, ctx));
  return rule;
}

LoopShardingRule GlobalAveragePoolOp::getShardingRule() {
  SmallVector<int64_t> spatial;
  for (int64_t d = 2; d < (int64_t)shapeOf(getInput()).size(); ++d)
    spatial.push_back(d);
  return getReduceRule(*this, spatial, /*keepdims=*/true,
                       /*splittableReduction=*/false);
}

LoopShardingRule MaxPoolOp::getShardingRule() { return getPoolRule(*this); }

LoopShardingRule AveragePoolOp::getShardingRule() { return getPoolRule(*this); }

LoopShardingRule WeightOp::getShardingRule() { return getSourceRule(*this); }

LoopShardingRule ConstantOp::getShardingRule() { return getSourceRule(*this); }

/// Every element is a function of its global position only: any dimension
/// may be split (the partitioner gives the op its block's offsets). The
/// counter is one replicated element.
LoopShardingRule RandomUniformOp::getShardingRule() {
  ArrayRef<int64_t> y = shapeOf(getResult());
  LoopShardingRule rule = parallelRule(y);
  if (Value counter = getCounter())
    rule.maps.push_back(AffineMap::get(
        y.size(), 0,
        SmallVector<AffineExpr>(shapeOf(counter).size(),
                                getAffineConstantExpr(0, getContext())),
        getContext()));
  rule.maps.push_back(
      AffineMap::getMultiDimIdentityMap(y.size(), getContext()));
  return rule;
}

/// Sums, differences, negations and pure data movement are linear in all
/// their operands together; products in each operand separately (a gemm's C
/// is added, not multiplied, so a gemm with C is neither).
PendingSumRule mlir::autopar::getPendingSumRule(Operation *op) {
  if (isa<AddOp, SubOp, NegOp, TransposeOp, ReshapeOp>(op))
    return PendingSumRule::AllOperands;
  if (isa<MulOp, MatMulOp>(op))
    return PendingSumRule::OneOperand;
  if (auto gemm = dyn_cast<GemmOp>(op); gemm && !gemm.getC())
    return PendingSumRule::OneOperand;
  return PendingSumRule::None;
}

/// The bias (C) is added into the product.
bool GemmOp::isAdditiveOperand(unsigned index) { return index == 2; }

/// The bias is added into the convolution's sum.
bool ConvOp::isAdditiveOperand(unsigned index) { return index == 2; }

/// The stored value, the weight and the result share one sharding (the
/// partitioner makes it the weight's).
LoopShardingRule AssignOp::getShardingRule() {
  return getIdentityRule(*this, {});
}

/// A boundary tensor stays whole: the sending and the receiving stage are
/// planned separately, and whole is the one layout both know.
LoopShardingRule SendOp::getShardingRule() {
  return getIdentityRule(*this, llvm::to_vector(llvm::seq<int64_t>(
                                    0, shapeOf(getInput()).size())));
}

LoopShardingRule RecvOp::getShardingRule() {
  ArrayRef<int64_t> y = shapeOf(getResult());
  LoopShardingRule rule =
      parallelRule(y, llvm::to_vector(llvm::seq<int64_t>(0, y.size())));
  rule.maps.push_back(
      AffineMap::getMultiDimIdentityMap(y.size(), getContext()));
  return rule;
}

//===----------------------------------------------------------------------===//
// Top-k and scatter (AutoparIndexingOps.td)
//===----------------------------------------------------------------------===//

/// TopK: one loop per input dimension. Every dimension but the axis splits
/// (input and both results alike); the axis stays whole, since the k best
/// of a slice need the whole slice, and the results (k long there) read
/// it whole.
LoopShardingRule TopKOp::getShardingRule() {
  TopKOp op = *this;
  MLIRContext *ctx = op.getContext();
  ArrayRef<int64_t> x = shapeOf(op.getInput());
  int64_t axis = op.getAxis();
  LoopShardingRule rule = parallelRule(x, {axis});
  SmallVector<std::optional<unsigned>> resultLoops;
  for (int64_t d = 0; d < (int64_t)x.size(); ++d)
    resultLoops.push_back(d == axis ? std::nullopt
                                    : std::optional<unsigned>(d));
  rule.maps.push_back(AffineMap::getMultiDimIdentityMap(x.size(), ctx));
  rule.maps.push_back(mapOf(ctx, x.size(), resultLoops));
  rule.maps.push_back(mapOf(ctx, x.size(), resultLoops));
  return rule;
}

/// ScatterElements: one loop per data (result) dimension. A dimension other
/// than the axis splits data, indices, updates and the result alike when
/// indices have the size of data there (each shard scatters within its own
/// rows); otherwise, and along the axis (an index may point anywhere on
/// it), it stays whole.
LoopShardingRule ScatterElementsOp::getShardingRule() {
  ScatterElementsOp op = *this;
  MLIRContext *ctx = op.getContext();
  ArrayRef<int64_t> data = shapeOf(op.getData()),
                    indices = shapeOf(op.getIndices());
  int64_t axis = op.getAxis();
  LoopShardingRule rule;
  SmallVector<std::optional<unsigned>> indexLoops;
  for (int64_t d = 0; d < (int64_t)data.size(); ++d) {
    bool aligned = d != axis && data[d] == indices[d];
    unsigned loop = rule.addLoop(IteratorType::parallel, aligned);
    indexLoops.push_back(aligned ? std::optional<unsigned>(loop)
                                 : std::nullopt);
  }
  rule.maps.push_back(AffineMap::getMultiDimIdentityMap(data.size(), ctx));
  rule.maps.push_back(mapOf(ctx, data.size(), indexLoops));
  rule.maps.push_back(mapOf(ctx, data.size(), indexLoops));
  rule.maps.push_back(AffineMap::getMultiDimIdentityMap(data.size(), ctx));
  return rule;
}

/// ScatterND: one loop per data (result) dimension. The k leading
/// dimensions that indices address stay whole (an index tuple may point
/// anywhere in them) and indices are replicated; the trailing dimensions,
/// which updates carry whole, split data, updates and the result alike.
LoopShardingRule ScatterNDOp::getShardingRule() {
  ScatterNDOp op = *this;
  MLIRContext *ctx = op.getContext();
  ArrayRef<int64_t> data = shapeOf(op.getData()),
                    indices = shapeOf(op.getIndices());
  int64_t rank = data.size(), k = indices.back();
  int64_t batch = indices.size() - 1;
  LoopShardingRule rule =
      parallelRule(data, llvm::to_vector(llvm::seq<int64_t>(0, k)));
  SmallVector<std::optional<unsigned>> updateLoops(batch, std::nullopt);
  for (int64_t d = k; d < rank; ++d)
    updateLoops.push_back(d);
  rule.maps.push_back(AffineMap::getMultiDimIdentityMap(rank, ctx));
  rule.maps.push_back(
      mapOf(ctx, rank,
            SmallVector<std::optional<unsigned>>(indices.size(), std::nullopt)));
  rule.maps.push_back(mapOf(ctx, rank, updateLoops));
  rule.maps.push_back(AffineMap::getMultiDimIdentityMap(rank, ctx));
  return rule;
}
