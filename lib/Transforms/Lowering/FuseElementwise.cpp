//===- FuseElementwise.cpp - fuse elementwise producers into consumers ----===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements autopar-fuse-elementwise: an elementwise
// `linalg.generic` whose only use is an operand of another `linalg.generic`
// read without broadcast is computed inside that consumer, so that the
// intermediate tensor is never written to memory. An elementwise consumer of
// a depthwise convolution computed over its flattened padded plane is first
// moved onto that wide domain (sinkFlatPlaneViews), so that the two fuse.
//
//===----------------------------------------------------------------------===//

#include "autopar/Transforms/Lowering/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::autopar {
#define GEN_PASS_DEF_FUSEELEMENTWISEPASS
#include "autopar/Transforms/Lowering/Passes.h.inc"
} // namespace mlir::autopar

using namespace mlir;
using namespace mlir::autopar;

namespace {

/// Fuses when the producer has no other use (nothing is computed twice, and
/// no tensor stays live for another reader) and the consumer reads it with a
/// permutation (each producer element once: fusing into a broadcasting read
/// would recompute the producer for every broadcast copy).
/// True when `op` is a contraction or reduction (a named linalg op such as
/// `linalg.mmt4d`, or a generic with a reduction loop) or a call (the
/// runtime's sends, receives and collectives).
bool isFusionBarrier(Operation &op) {
  if (isa<func::CallOp>(op))
    return true;
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp)
    return false;
  if (!isa<linalg::GenericOp>(op))
    return !isa<linalg::FillOp, linalg::CopyOp, linalg::TransposeOp,
                linalg::BroadcastOp>(op);
  return linalgOp.getNumParallelLoops() != linalgOp.getNumLoops();
}

/// Bytes of a statically shaped tensor (0 otherwise).
int64_t getTensorBytes(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  return tensor.getNumElements() *
         llvm::divideCeil(tensor.getElementTypeBitWidth(), 8);
}

/// Fusion computes the producer at the consumer, so the producer's operands
/// stay live until the consumer runs. Across a contraction or a call that
/// can hold more than it saves: a gradient accumulated over microbatches
/// (acc_k = acc_{k-1} + g_k, each add used once by the next) fused into the
/// last microbatch's add kept every microbatch's gradient live to the end of
/// the step, m weight-sized buffers where the program holds one. True when a
/// barrier lies between the two and the operands that would die at the
/// producer (no use at or after the consumer; weights and inputs, read from
/// resident buffers, never die) are larger than the producer's result.
bool fusionHoldsMore(Operation *producer, Operation *consumer) {
  if (producer->getBlock() != consumer->getBlock() ||
      !producer->isBeforeInBlock(consumer))
    return false;
  int64_t dying = 0;
  llvm::SmallPtrSet<Value, 4> seen;
  for (Value operand : producer->getOperands()) {
    Operation *def = operand.getDefiningOp();
    if (!def || isa<bufferization::ToTensorOp>(def) ||
        !seen.insert(operand).second)
      continue;
    bool usedLater = llvm::any_of(operand.getUsers(), [&](Operation *user) {
      Operation *inBlock = consumer->getBlock()->findAncestorOpInBlock(*user);
      return !inBlock || inBlock == consumer ||
             consumer->isBeforeInBlock(inBlock);
    });
    if (!usedLater)
      dying += getTensorBytes(operand.getType());
  }
  int64_t saved = 0;
  for (Value result : producer->getResults())
    saved += getTensorBytes(result.getType());
  if (dying <= saved)
    return false;
  for (Operation *op = producer->getNextNode(); op && op != consumer;
       op = op->getNextNode())
    if (isFusionBarrier(*op))
      return true;
  return false;
}

bool shouldFuse(OpOperand *fused) {
  Operation *producer = fused->get().getDefiningOp();
  if (!producer || !producer->hasOneUse())
    return false;
  auto consumer = dyn_cast<linalg::GenericOp>(fused->getOwner());
  if (!consumer)
    return false;
  return consumer.getMatchingIndexingMap(fused).isPermutation() &&
         !fusionHoldsMore(producer, consumer);
}

/// Whether every use of `value` is the init of a linalg op with only
/// parallel loops that writes it whole (a permutation map) and never reads it
/// (its payload ignores the init): the value's elements are all overwritten
/// before anyone reads them.
bool isOverwrittenWhole(Value value) {
  return !value.use_empty() &&
         llvm::all_of(value.getUses(), [](OpOperand &use) {
           auto op = dyn_cast<linalg::LinalgOp>(use.getOwner());
           return op && op.isDpsInit(&use) &&
                  !op.payloadUsesValueFromOperand(&use) &&
                  op.getNumParallelLoops() == op.getNumLoops() &&
                  op.getMatchingIndexingMap(&use).isPermutation();
         });
}

/// Bytes of a cache line: the width of the column slabs of fillBorderOnly.
constexpr int64_t kCacheLineBytes = 64;

/// A `linalg.fill` whose result is read only through one interior
/// `tensor.extract_slice`, wholly overwritten (isOverwrittenWhole), and
/// written back by a `tensor.insert_slice` at the same place (the padded
/// input that a fused `tensor.pad` leaves: the producer writes the interior)
/// becomes fills of the border slabs only: per dimension, the slabs before
/// and after the interior, limited to the interior along the dimensions
/// already done (corners once), those of the last dimension a cache line
/// wide. The interior is written once, not twice.
/// Returns whether `fill` was rewritten.
bool fillBorderOnly(RewriterBase &rewriter, linalg::FillOp fill) {
  if (!fill.hasPureTensorSemantics())
    return false;
  Value filled = fill.getResult(0);
  auto type = dyn_cast<RankedTensorType>(filled.getType());
  if (!type || !type.hasStaticShape())
    return false;
  tensor::ExtractSliceOp slice;
  tensor::InsertSliceOp insert;
  for (OpOperand &use : filled.getUses()) {
    if (auto s = dyn_cast<tensor::ExtractSliceOp>(use.getOwner());
        s && !slice) {
      slice = s;
      continue;
    }
    if (auto i = dyn_cast<tensor::InsertSliceOp>(use.getOwner());
        i && !insert && &use == &i.getDestMutable()) {
      insert = i;
      continue;
    }
    return false;
  }
  if (!slice || !insert || !slice.hasUnitStride() || !insert.hasUnitStride() ||
      slice.getResultType().getRank() != type.getRank() ||
      insert.getSourceType() != slice.getResultType() ||
      ShapedType::isDynamicShape(slice.getStaticOffsets()) ||
      ShapedType::isDynamicShape(slice.getStaticSizes()) ||
      slice.getStaticOffsets() != insert.getStaticOffsets() ||
      slice.getStaticSizes() != insert.getStaticSizes() ||
      !isOverwrittenWhole(slice.getResult()))
    return false;
  ArrayRef<int64_t> offsets = slice.getStaticOffsets();
  ArrayRef<int64_t> sizes = slice.getStaticSizes();
  ArrayRef<int64_t> shape = type.getShape();

  Location loc = fill.getLoc();
  rewriter.setInsertionPoint(fill);
  Value value = fill.getDpsInputs().front();
  Value current = fill.getDpsInits().front();
  SmallVector<int64_t> slabOffsets(shape.size(), 0);
  SmallVector<int64_t> slabSizes(shape);
  SmallVector<int64_t> strides(shape.size(), 1);
  auto fillSlab = [&](int64_t dim, int64_t offset, int64_t size) {
    if (size <= 0)
      return;
    slabOffsets[dim] = offset;
    slabSizes[dim] = size;
    auto slabType = RankedTensorType::get(slabSizes, type.getElementType());
    Value slab = tensor::ExtractSliceOp::create(
        rewriter, loc, slabType, current, ValueRange{}, ValueRange{},
        ValueRange{}, rewriter.getDenseI64ArrayAttr(slabOffsets),
        rewriter.getDenseI64ArrayAttr(slabSizes),
        rewriter.getDenseI64ArrayAttr(strides));
    Value slabFilled =
        linalg::FillOp::create(rewriter, loc, value, slab).getResult(0);
    current = tensor::InsertSliceOp::create(
        rewriter, loc, slabFilled, current, ValueRange{}, ValueRange{},
        ValueRange{}, rewriter.getDenseI64ArrayAttr(slabOffsets),
        rewriter.getDenseI64ArrayAttr(slabSizes),
        rewriter.getDenseI64ArrayAttr(strides));
  };
  size_t last = shape.size() - 1;
  for (size_t d = 0; d < last; ++d) {
    fillSlab(d, 0, offsets[d]);
    fillSlab(d, offsets[d] + sizes[d], shape[d] - offsets[d] - sizes[d]);
    // The later dimensions' slabs cover only the interior of this one.
    slabOffsets[d] = offsets[d];
    slabSizes[d] = sizes[d];
  }
  // Along the last dimension (a row's columns), each slab is widened to a
  // cache line into the interior, which the producer overwrites later: the
  // same lines are written either way, and a store of contiguous elements
  // per row replaces a strided one (which LLVM vectorizes as scatters).
  int64_t line = std::max<int64_t>(
      1, kCacheLineBytes / llvm::divideCeil(type.getElementTypeBitWidth(), 8));
  int64_t lowEnd = offsets[last] > 0 ? std::max(offsets[last], line) : 0;
  int64_t highPad = shape[last] - offsets[last] - sizes[last];
  int64_t highBegin =
      highPad > 0 ? shape[last] - std::max(highPad, line) : shape[last];
  if (lowEnd >= highBegin && lowEnd > 0) {
    fillSlab(last, 0, shape[last]);
  } else {
    fillSlab(last, 0, std::min(lowEnd, shape[last]));
    fillSlab(last, std::max<int64_t>(highBegin, 0),
             shape[last] - std::max<int64_t>(highBegin, 0));
  }
  rewriter.modifyOpInPlace(slice,
                           [&] { slice.getSourceMutable().assign(current); });
  rewriter.modifyOpInPlace(insert,
                           [&] { insert.getDestMutable().assign(current); });
  rewriter.eraseOp(fill);
  return true;
}

/// Whether `slice` takes the leading part of its source: same rank, static
/// sizes, offsets 0 and unit strides (a view that starts where its source
/// does).
bool isLeadingSlice(tensor::ExtractSliceOp slice) {
  return slice.getSourceType().getRank() == slice.getResultType().getRank() &&
         slice.getResultType().hasStaticShape() &&
         llvm::all_of(slice.getStaticOffsets(),
                      [](int64_t offset) { return offset == 0; }) &&
         llvm::all_of(slice.getStaticStrides(),
                      [](int64_t stride) { return stride == 1; });
}

/// The views through which a depthwise convolution computed over its
/// flattened padded plane (autopar-convert-to-linalg) yields its output
/// `[N, C, H, W]` from the wide result `[N, C, length]`: an optional leading
/// `tensor.extract_slice` (the first H x paddedWidth positions), a
/// `tensor.expand_shape` of the last dimension into rows of the padded
/// width, and a leading `tensor.extract_slice` of the output's columns.
struct FlatPlaneViews {
  linalg::GenericOp wide;
  tensor::ExtractSliceOp rows; // null when the domain is not rounded up
  tensor::ExpandShapeOp expand;
  tensor::ExtractSliceOp columns;
};

/// Matches FlatPlaneViews on `value`, each view and the wide generic used
/// once (by the next view, and `value` by the consumer, unless
/// `anyUses`).
std::optional<FlatPlaneViews> matchFlatPlaneViews(Value value,
                                                  bool anyUses = false) {
  FlatPlaneViews views;
  views.columns = value.getDefiningOp<tensor::ExtractSliceOp>();
  if (!views.columns || !isLeadingSlice(views.columns) ||
      (!anyUses && !views.columns->hasOneUse()))
    return std::nullopt;
  views.expand =
      views.columns.getSource().getDefiningOp<tensor::ExpandShapeOp>();
  if (!views.expand || !views.expand->hasOneUse() ||
      !views.expand.getResultType().hasStaticShape())
    return std::nullopt;
  int64_t rank = views.expand.getSrcType().getRank();
  SmallVector<ReassociationIndices> groups =
      views.expand.getReassociationIndices();
  if (views.expand.getResultType().getRank() != rank + 1 ||
      groups.back() != ReassociationIndices{rank - 1, rank})
    return std::nullopt;
  Value wide = views.expand.getSrc();
  views.rows = wide.getDefiningOp<tensor::ExtractSliceOp>();
  if (views.rows) {
    if (!isLeadingSlice(views.rows) || !views.rows->hasOneUse())
      return std::nullopt;
    wide = views.rows.getSource();
  }
  views.wide = wide.getDefiningOp<linalg::GenericOp>();
  if (!views.wide || views.wide->getNumResults() != 1 || !wide.hasOneUse())
    return std::nullopt;
  return views;
}

/// Whether the payload of `op` computes on floats (and their comparisons)
/// without memory effects: evaluating it on values that are then dropped
/// (the padding columns of a flattened plane) cannot trap.
bool hasSafeFloatPayload(linalg::GenericOp op) {
  for (Operation &inner : op.getBlock()->without_terminator()) {
    if (!isMemoryEffectFree(&inner) || isa<linalg::IndexOp>(inner))
      return false;
    for (Type type : inner.getResultTypes())
      if (!isa<FloatType>(type) && !type.isInteger(1))
        return false;
  }
  return true;
}

/// An elementwise `linalg.generic` that reads a depthwise convolution's
/// output through the views of its flattened padded plane
/// (FlatPlaneViews), and whose other inputs do not index the viewed rows
/// and columns (per-channel parameters, scalars), is computed over the wide
/// domain instead and the same views are taken of its result: the
/// convolution's generic then fuses into it (one pass over memory, as for
/// a convolution over whole rows), and a chain of such consumers (Clip,
/// then another elementwise op) follows. The padding columns compute
/// values that are dropped (hasSafeFloatPayload). Returns whether
/// `consumer` was rewritten.
bool sinkFlatPlaneViews(RewriterBase &rewriter, linalg::GenericOp consumer) {
  if (!consumer.hasPureTensorSemantics() || consumer.getNumDpsInits() != 1 ||
      consumer.getNumLoops() != consumer.getNumParallelLoops() ||
      consumer.payloadUsesValueFromOperand(consumer.getDpsInitOperand(0)) ||
      !consumer.getMatchingIndexingMap(consumer.getDpsInitOperand(0))
           .isIdentity() ||
      !hasSafeFloatPayload(consumer))
    return false;
  std::optional<FlatPlaneViews> views;
  OpOperand *viewed = nullptr;
  for (OpOperand *input : consumer.getDpsInputOperands()) {
    if (!consumer.getMatchingIndexingMap(input).isIdentity())
      continue;
    views = matchFlatPlaneViews(input->get());
    if (views) {
      viewed = input;
      break;
    }
  }
  if (!views)
    return false;
  auto wideType = cast<RankedTensorType>(views->wide->getResult(0).getType());
  int64_t rank = wideType.getRank();
  // The consumer's loops: the wide domain's, its last split into rows and
  // columns (loops rank - 1 and rank), which no other input may read.
  MLIRContext *ctx = rewriter.getContext();
  SmallVector<AffineExpr> replacements;
  for (int64_t d = 0; d < rank; ++d)
    replacements.push_back(getAffineDimExpr(d, ctx));
  replacements.push_back(getAffineDimExpr(rank - 1, ctx));
  SmallVector<AffineMap> maps;
  for (OpOperand *input : consumer.getDpsInputOperands()) {
    AffineMap map = consumer.getMatchingIndexingMap(input);
    if (input == viewed) {
      maps.push_back(AffineMap::getMultiDimIdentityMap(rank, ctx));
      continue;
    }
    if (map.isFunctionOfDim(rank - 1) || map.isFunctionOfDim(rank))
      return false;
    maps.push_back(
        map.replaceDimsAndSymbols(replacements, {}, rank, map.getNumSymbols()));
  }
  maps.push_back(AffineMap::getMultiDimIdentityMap(rank, ctx));

  Location loc = consumer.getLoc();
  rewriter.setInsertionPoint(consumer);
  auto resultType = cast<RankedTensorType>(consumer->getResult(0).getType());
  auto wideResultType = wideType.clone(resultType.getElementType());
  SmallVector<Value> inputs;
  for (OpOperand *input : consumer.getDpsInputOperands())
    inputs.push_back(input == viewed ? views->wide->getResult(0)
                                     : input->get());
  Value init = tensor::EmptyOp::create(rewriter, loc, wideResultType.getShape(),
                                       wideResultType.getElementType());
  auto wideConsumer = linalg::GenericOp::create(
      rewriter, loc, TypeRange{wideResultType}, inputs, ValueRange{init}, maps,
      SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel));
  rewriter.inlineRegionBefore(consumer.getRegion(), wideConsumer.getRegion(),
                              wideConsumer.getRegion().begin());
  Value result = wideConsumer.getResult(0);
  auto retype = [&](RankedTensorType type) {
    return type.clone(resultType.getElementType());
  };
  if (views->rows)
    result = tensor::ExtractSliceOp::create(
        rewriter, loc, retype(views->rows.getResultType()), result,
        views->rows.getMixedOffsets(), views->rows.getMixedSizes(),
        views->rows.getMixedStrides());
  result = tensor::ExpandShapeOp::create(
      rewriter, loc, retype(views->expand.getResultType()), result,
      views->expand.getReassociationIndices());
  result = tensor::ExtractSliceOp::create(
      rewriter, loc, resultType, result, views->columns.getMixedOffsets(),
      views->columns.getMixedSizes(), views->columns.getMixedStrides());
  rewriter.replaceOp(consumer, result);
  rewriter.eraseOp(views->columns);
  rewriter.eraseOp(views->expand);
  if (views->rows)
    rewriter.eraseOp(views->rows);
  return true;
}

/// The output of a flattened depthwise plane (FlatPlaneViews) is a view
/// whose rows are apart in its buffer: an op other than a linalg op that
/// reads it (the `tensor.pad` of the next convolution, the
/// `tensor.collapse_shape` of a pointwise convolution's input, a returned
/// result) would make bufferization copy it with a scalar loop nest. Those
/// uses read an elementwise copy instead (one `linalg.generic`, which
/// autopar-vectorize-elementwise vectorizes and a pad fuses with). Returns
/// whether `columns` got a copy.
bool copyFlatPlaneOutput(RewriterBase &rewriter,
                         tensor::ExtractSliceOp columns) {
  Value view = columns.getResult();
  if (!matchFlatPlaneViews(view, /*anyUses=*/true))
    return false;
  SmallVector<OpOperand *> uses;
  for (OpOperand &use : view.getUses())
    if (!isa<linalg::LinalgOp>(use.getOwner()))
      uses.push_back(&use);
  if (uses.empty())
    return false;
  rewriter.setInsertionPointAfter(columns);
  auto type = cast<RankedTensorType>(view.getType());
  Location loc = columns.getLoc();
  Value init = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                       type.getElementType());
  AffineMap identity =
      AffineMap::getMultiDimIdentityMap(type.getRank(), rewriter.getContext());
  auto copy = linalg::GenericOp::create(
      rewriter, loc, TypeRange{type}, ValueRange{view}, ValueRange{init},
      ArrayRef<AffineMap>{identity, identity},
      SmallVector<utils::IteratorType>(type.getRank(),
                                       utils::IteratorType::parallel),
      [](OpBuilder &b, Location l, ValueRange args) {
        linalg::YieldOp::create(b, l, args[0]);
      });
  for (OpOperand *use : uses)
    rewriter.modifyOpInPlace(use->getOwner(),
                             [&] { use->set(copy.getResult(0)); });
  return true;
}

struct FuseElementwisePass
    : public autopar::impl::FuseElementwisePassBase<FuseElementwisePass> {
  using Base::Base;

  void runOnOperation() override {
    // Elementwise consumers of flattened depthwise planes first, in program
    // order, so that a chain of them moves onto the wide domain link by link.
    {
      SmallVector<linalg::GenericOp> generics;
      getOperation().walk(
          [&](linalg::GenericOp generic) { generics.push_back(generic); });
      IRRewriter rewriter(&getContext());
      for (linalg::GenericOp generic : generics)
        (void)sinkFlatPlaneViews(rewriter, generic);
      SmallVector<tensor::ExtractSliceOp> slices;
      getOperation().walk(
          [&](tensor::ExtractSliceOp slice) { slices.push_back(slice); });
      for (tensor::ExtractSliceOp slice : slices)
        (void)copyFlatPlaneOutput(rewriter, slice);
    }

    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(patterns, shouldFuse);
    // A long chain can take a sweep of the greedy driver per link (a chain
    // of 16 adds whose intermediates each have two uses took more than the
    // driver's default of 10 sweeps). Each fusion removes a generic, so
    // twice their number of sweeps, and at least the default, bounds it.
    int64_t numGenerics = 0;
    getOperation()->walk([&](linalg::GenericOp) { ++numGenerics; });
    GreedyRewriteConfig fusionConfig;
    fusionConfig.setMaxIterations(std::max<int64_t>(10, 2 * numGenerics + 2));
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     fusionConfig))) {
      getOperation().emitError("elementwise fusion did not converge");
      return signalPassFailure();
    }

    // A zero (or lowest-value) padding of an elementwise result that has no
    // other use (a convolution's or pooling's input): the producer writes
    // into the interior of the filled, padded tensor
    // (`linalg::populateFuseTensorPadWithProducerLinalgOpPatterns`), so that
    // the pad's copy of the whole tensor goes.
    SmallVector<Operation *> pads, producers;
    getOperation().walk([&](tensor::PadOp pad) {
      auto producer = pad.getSource().getDefiningOp<linalg::GenericOp>();
      if (producer && producer->hasOneUse() &&
          producer.getNumParallelLoops() == producer.getNumLoops() &&
          pad.getConstantPaddingValue()) {
        pads.push_back(pad);
        producers.push_back(producer);
      }
    });
    RewritePatternSet padPatterns(&getContext());
    linalg::populateFuseTensorPadWithProducerLinalgOpPatterns(padPatterns);
    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingOps);
    if (failed(applyOpPatternsGreedily(pads, std::move(padPatterns), config)))
      return signalPassFailure();
    // The pattern computes a copy of the producer into the padded tensor.
    for (Operation *producer : producers)
      if (producer->use_empty())
        producer->erase();

    // The padded tensors those producers write into: fill the border only.
    SmallVector<linalg::FillOp> fills;
    getOperation().walk([&](linalg::FillOp fill) { fills.push_back(fill); });
    IRRewriter rewriter(&getContext());
    for (linalg::FillOp fill : fills)
      (void)fillBorderOnly(rewriter, fill);
  }
};

} // namespace
