//===- VectorizeElementwise.cpp - vectorize elementwise linalg ops -------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements autopar-vectorize-elementwise: linalg ops whose loops
// are all parallel (elementwise generics, transposes, copies) have their
// innermost contiguous loops collapsed into one, which is tiled by the vector
// width of the target ISA and vectorized by MLIR's linalg vectorizer.
//
//===----------------------------------------------------------------------===//

#include "autopar/Transforms/Lowering/Passes.h"

#include "autopar/Target/Target.h"

#include "VectorCleanup.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/SmallBitVector.h"

namespace mlir::autopar {
#define GEN_PASS_DEF_VECTORIZEELEMENTWISEPASS
#include "autopar/Transforms/Lowering/Passes.h.inc"
} // namespace mlir::autopar

using namespace mlir;
using namespace mlir::autopar;

namespace {

/// An all-parallel linalg op on static tensors that the vectorizer accepts.
bool isCandidate(linalg::LinalgOp op) {
  if (!isa<linalg::GenericOp, linalg::TransposeOp, linalg::CopyOp>(
          op.getOperation()))
    return false;
  if (!op.hasPureTensorSemantics() || op.getNumLoops() == 0 ||
      op.getNumLoops() != op.getNumParallelLoops())
    return false;
  // Static shapes, and whole bytes per element: a vector of i1 loads packed
  // bits, while a buffer of i1 holds one byte per element.
  if (!llvm::all_of(op->getOperandTypes(), [](Type type) {
        auto shaped = dyn_cast<ShapedType>(type);
        if (!shaped)
          return true;
        unsigned bits = shaped.getElementTypeBitWidth();
        return shaped.hasStaticShape() && bits >= 8 && bits % 8 == 0;
      }))
    return false;
  // A body reading its loop indices (the counter-based random numbers)
  // vectorizes into index vectors that MLIR 22 fails to translate to LLVM
  // (`vector<[16]xi64>` to `vector<16xindex>`): it stays scalar.
  if (!op.getBlock()->getOps<linalg::IndexOp>().empty())
    return false;
  return succeeded(linalg::vectorizeOpPrecondition(op));
}

/// Whether the dimensions `first`..`last` of the tensor `value` are
/// contiguous in the buffer it will live in: through `tensor.extract_slice`s
/// (a depthwise convolution's window views of its padded input, a result
/// written into the interior of a padded tensor), each slice takes whole
/// dimensions `first + 1`..`last` at unit stride. Collapsing a run that is
/// not contiguous makes bufferization copy the slice into a new buffer.
bool isContiguousRun(Value value, int64_t first, int64_t last) {
  while (auto slice = value.getDefiningOp<tensor::ExtractSliceOp>()) {
    RankedTensorType source = slice.getSourceType();
    if (source.getRank() != slice.getResultType().getRank())
      return false;
    for (int64_t d = first; d <= last; ++d) {
      std::optional<int64_t> stride =
          getConstantIntValue(slice.getMixedStrides()[d]);
      std::optional<int64_t> size =
          getConstantIntValue(slice.getMixedSizes()[d]);
      if (!stride || *stride != 1 || !size ||
          (d > first && *size != source.getDimSize(d)))
        return false;
    }
    value = slice.getSource();
  }
  return true;
}

/// Whether an operand of `op` is a `tensor.extract_slice` (through others)
/// with a stride other than 1 along its last dimension: a vector of it is a
/// gather.
bool hasStridedInnermost(linalg::LinalgOp op) {
  for (Value operand : op->getOperands()) {
    while (auto slice = operand.getDefiningOp<tensor::ExtractSliceOp>()) {
      if (slice.getMixedStrides().empty())
        break;
      std::optional<int64_t> stride =
          getConstantIntValue(slice.getMixedStrides().back());
      if (!stride || *stride != 1)
        return true;
      operand = slice.getSource();
    }
  }
  return false;
}

/// Whether every operand of `op` that is a `tensor.extract_slice` (through
/// others) steps along its last dimension by 1 or 2 in all, and at least one
/// by 2: its vectors are read as contiguous vectors of twice the lanes and a
/// shuffle (readStrideTwoAsShuffle).
bool hasStrideTwoInnermost(linalg::LinalgOp op) {
  bool two = false;
  for (Value operand : op->getOperands()) {
    int64_t total = 1;
    while (auto slice = operand.getDefiningOp<tensor::ExtractSliceOp>()) {
      if (slice.getMixedStrides().empty())
        break;
      std::optional<int64_t> stride =
          getConstantIntValue(slice.getMixedStrides().back());
      if (!stride)
        return false;
      total *= *stride;
      operand = slice.getSource();
    }
    if (total != 1 && total != 2)
      return false;
    two |= total == 2;
  }
  return two;
}

/// The longest run of innermost loops that is contiguous in every operand
/// (as one dimension, or absent), and in the buffer each operand reads
/// (isContiguousRun).
ReassociationIndices getInnerContiguousLoops(linalg::LinalgOp op) {
  int64_t numLoops = op.getNumLoops();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  auto contiguousInBuffers = [&](const ReassociationIndices &loops) {
    for (OpOperand &operand : op->getOpOperands()) {
      AffineMap map = op.getMatchingIndexingMap(&operand);
      SmallVector<int64_t> dims;
      for (auto [position, expr] : llvm::enumerate(map.getResults()))
        if (auto dim = dyn_cast<AffineDimExpr>(expr))
          if (llvm::is_contained(loops, dim.getPosition()))
            dims.push_back(position);
      if (dims.size() > 1 &&
          !isContiguousRun(operand.get(), *llvm::min_element(dims),
                           *llvm::max_element(dims)))
        return false;
    }
    return true;
  };
  ReassociationIndices group = {numLoops - 1};
  for (int64_t first = numLoops - 2; first >= 0; --first) {
    ReassociationIndices candidate;
    for (int64_t d = first; d < numLoops; ++d)
      candidate.push_back(d);
    if (!linalg::areDimSequencesPreserved(maps, {candidate}) ||
        !contiguousInBuffers(candidate))
      break;
    group = candidate;
  }
  return group;
}

/// A loop of a gather copy along which the input's last index advances by
/// `step` (1 or 2) per iteration (getGatherLoop).
struct GatherLoop {
  int64_t loop;
  int64_t step;
};

/// Whether `expr` is a sum of loop indices times non-negative constants and
/// a non-negative constant: its largest value over a loop nest is at the
/// loops' last iterations.
static bool isNonDecreasing(AffineExpr expr) {
  if (isa<AffineDimExpr>(expr))
    return true;
  if (auto constant = dyn_cast<AffineConstantExpr>(expr))
    return constant.getValue() >= 0;
  auto binary = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!binary)
    return false;
  if (expr.getKind() == AffineExprKind::Add)
    return isNonDecreasing(binary.getLHS()) && isNonDecreasing(binary.getRHS());
  if (expr.getKind() == AffineExprKind::Mul) {
    auto factor = dyn_cast<AffineConstantExpr>(binary.getRHS());
    return factor && factor.getValue() >= 0 && isNonDecreasing(binary.getLHS());
  }
  return false;
}

/// The loop along which `op`, a copy that gathers its input through affine
/// expressions (the packed im2col copy of a convolution, whose input map is
/// not a projected permutation), reads vectors of `lanes` elements: the
/// innermost loop of more than one iteration (later loops have one), which
/// the lanes divide, which only the input's last dimension reads, at unit
/// stride (whole vectors) or at stride 2 (a stride-2 convolution: vectors
/// of twice the lanes, whose even elements are kept; then the loop must be
/// the innermost and the map's expressions non-decreasing, so that the
/// last read's bound is known). Maps with divisions (the flat im2col rows)
/// do not qualify.
std::optional<GatherLoop> getGatherLoop(linalg::GenericOp op, int64_t lanes) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInputs() != 1 ||
      op.getNumDpsInits() != 1 || op.getNumLoops() != op.getNumParallelLoops())
    return std::nullopt;
  Block &body = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  if (body.getOperations().size() != 1 || yield.getNumOperands() != 1 ||
      yield.getOperand(0) != body.getArgument(0))
    return std::nullopt;
  for (Type type : op->getOperandTypes()) {
    auto shaped = dyn_cast<RankedTensorType>(type);
    if (!shaped || !shaped.hasStaticShape() ||
        shaped.getElementTypeBitWidth() % 8 != 0)
      return std::nullopt;
  }
  AffineMap inputMap = op.getIndexingMapsArray()[0];
  if (!op.getIndexingMapsArray()[1].isIdentity() ||
      inputMap.isProjectedPermutation() || inputMap.getNumResults() == 0)
    return std::nullopt;
  for (AffineExpr expr : inputMap.getResults()) {
    bool divides = false;
    expr.walk([&](AffineExpr e) {
      divides |= e.getKind() == AffineExprKind::FloorDiv ||
                 e.getKind() == AffineExprKind::CeilDiv ||
                 e.getKind() == AffineExprKind::Mod;
    });
    if (divides)
      return std::nullopt;
  }
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t loop = static_cast<int64_t>(ranges.size()) - 1;
  while (loop >= 0 && ranges[loop] == 1)
    --loop;
  if (loop < 0 || ranges[loop] % lanes != 0)
    return std::nullopt;
  MLIRContext *ctx = op.getContext();
  AffineExpr d = getAffineDimExpr(loop, ctx);
  ArrayRef<AffineExpr> results = inputMap.getResults();
  for (AffineExpr expr : results.drop_back())
    if (expr.isFunctionOfDim(loop))
      return std::nullopt;
  // The last index advances by one per iteration of the loop.
  AffineExpr step =
      simplifyAffineExpr(results.back().replace(d, d + 1) - results.back(),
                         inputMap.getNumDims(), 0);
  auto constant = dyn_cast<AffineConstantExpr>(step);
  if (!constant)
    return std::nullopt;
  if (constant.getValue() == 1)
    return GatherLoop{loop, 1};
  if (constant.getValue() != 2 || loop + 1 != inputMap.getNumDims() ||
      !llvm::all_of(results, isNonDecreasing))
    return std::nullopt;
  return GatherLoop{loop, 2};
}

/// Tiles `op` by `tileSizes` (0: the whole loop), drops the unit loops of
/// the tile and vectorizes it when one loop is left, with `vectorSizes`
/// (empty: the loop's static range). Fails, leaving what was rewritten,
/// when a step does not apply.
static LogicalResult tileToVector(RewriterBase &rewriter, linalg::LinalgOp op,
                                  ArrayRef<int64_t> tileSizes,
                                  ArrayRef<int64_t> vectorSizes) {
  scf::SCFTilingOptions options;
  options.setTileSizes(getAsIndexOpFoldResult(op.getContext(), tileSizes));
  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
      rewriter, cast<TilingInterface>(op.getOperation()), options);
  if (failed(tiled) || tiled->tiledOps.size() != 1)
    return failure();
  rewriter.replaceOp(op, tiled->replacements);
  auto tile = cast<linalg::GenericOp>(tiled->tiledOps.front());
  linalg::ControlDropUnitDims control;
  control.rankReductionStrategy =
      linalg::ControlDropUnitDims::RankReductionStrategy::ExtractInsertSlice;
  rewriter.setInsertionPoint(tile);
  FailureOr<linalg::DropUnitDimsResult> dropped =
      linalg::dropUnitDims(rewriter, tile, control);
  if (failed(dropped))
    return failure();
  rewriter.replaceOp(tile, dropped->replacements);
  auto row = cast<linalg::LinalgOp>(dropped->resultOp.getOperation());
  if (row.getNumLoops() != 1 ||
      failed(linalg::vectorizeOpPrecondition(row, vectorSizes)))
    return failure();
  rewriter.setInsertionPoint(row);
  FailureOr<linalg::VectorizationResult> vectorized =
      linalg::vectorize(rewriter, row, vectorSizes);
  if (failed(vectorized))
    return failure();
  rewriter.replaceOp(row, vectorized->replacements);
  return success();
}

/// Vectorizes a contiguous gather copy (getGatherLoop, unit step): tiled by
/// one iteration of every loop and `lanes` of `loop`, each tile, with its
/// unit loops dropped, is a copy of `lanes` contiguous elements that MLIR's
/// vectorizer turns into one vector read and write.
LogicalResult vectorizeGatherCopy(RewriterBase &rewriter, linalg::GenericOp op,
                                  int64_t loop, int64_t lanes) {
  SmallVector<int64_t> tileSizes(op.getNumLoops(), 1);
  tileSizes[loop] = lanes;
  return tileToVector(rewriter, op, tileSizes, {lanes});
}

/// Vectorizes a gather copy whose innermost loop reads its input's last
/// dimension at stride 2 (getGatherLoop; the packed im2col copy of a
/// stride-2 convolution): loops over every other loop and over `lanes`
/// iterations of the innermost one, each reading `2 x lanes` contiguous
/// elements with one `vector.transfer_read`, keeping the even ones with a
/// `vector.shuffle` and writing them with one `vector.transfer_write`. A
/// vector of the strided elements would be a gather (one load per lane).
/// The read is in bounds when the last one ends inside the input (the
/// im2col copy pads one more column for it), and masked otherwise.
LogicalResult vectorizeStrideTwoGather(RewriterBase &rewriter,
                                       linalg::GenericOp op, int64_t lanes) {
  Location loc = op.getLoc();
  MLIRContext *ctx = op.getContext();
  AffineMap inputMap = op.getIndexingMapsArray()[0];
  Value input = op.getDpsInputOperand(0)->get();
  Value init = op.getDpsInitOperand(0)->get();
  auto inputType = cast<RankedTensorType>(input.getType());
  Type element = inputType.getElementType();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t numLoops = ranges.size();
  SmallVector<int64_t> last;
  for (int64_t range : ranges)
    last.push_back(range - 1);
  // The last vector reads up to one element past the last element copied.
  bool inBounds =
      inputMap.compose(last).back() + 1 < inputType.getShape().back();

  rewriter.setInsertionPoint(op);
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  SmallVector<Value> lbs(numLoops, zero), ubs, steps;
  for (int64_t d = 0; d < numLoops; ++d) {
    ubs.push_back(arith::ConstantIndexOp::create(rewriter, loc, ranges[d]));
    steps.push_back(arith::ConstantIndexOp::create(
        rewriter, loc, d + 1 == numLoops ? lanes : 1));
  }
  auto wideType = VectorType::get({2 * lanes}, element);
  SmallVector<int64_t> evens;
  for (int64_t i = 0; i < lanes; ++i)
    evens.push_back(2 * i);
  Value padding =
      arith::ConstantOp::create(rewriter, loc, rewriter.getZeroAttr(element));
  scf::LoopNest nest = scf::buildLoopNest(
      rewriter, loc, lbs, ubs, steps, ValueRange{init},
      [&](OpBuilder &b, Location l, ValueRange ivs,
          ValueRange iterArgs) -> scf::ValueVector {
        SmallVector<Value> indices;
        for (unsigned i = 0; i < inputMap.getNumResults(); ++i)
          indices.push_back(affine::AffineApplyOp::create(
              b, l, inputMap.getSubMap({i}), ivs));
        Value wide = vector::TransferReadOp::create(
            b, l, wideType, input, indices, padding, ArrayRef<bool>{inBounds});
        Value kept = vector::ShuffleOp::create(b, l, wide, wide, evens);
        Value written = vector::TransferWriteOp::create(
                            b, l, kept, iterArgs[0], ivs,
                            AffineMap::getMinorIdentityMap(numLoops, 1, ctx),
                            ArrayRef<bool>{true})
                            .getResult();
        return {written};
      });
  rewriter.replaceOp(op, nest.results);
  return success();
}

/// Whether `op` reduces f32 values along its innermost loop only (softmax's
/// max and sum, layer norm's mean and variance), into f32 or f64
/// accumulators (sums of f32 accumulate in f64): every other loop parallel,
/// static shapes, one init that the parallel loops index in order, inputs
/// read along the reduced loop in their last dimension (or not at all, as a
/// broadcast mean), and at least two vectors to reduce per row.
bool isInnerReduction(linalg::GenericOp op, int64_t lanes) {
  int64_t numLoops = op.getNumLoops();
  if (!op.hasPureTensorSemantics() || op.getNumDpsInits() != 1 ||
      numLoops < 2 || op.getNumReductionLoops() != 1 ||
      !linalg::isReductionIterator(op.getIteratorTypesArray().back()))
    return false;
  for (OpOperand &operand : op->getOpOperands()) {
    auto shaped = dyn_cast<RankedTensorType>(operand.get().getType());
    if (!shaped || !shaped.hasStaticShape())
      return false;
    Type element = shaped.getElementType();
    if (!element.isF32() && !(element.isF64() && op.isDpsInit(&operand)))
      return false;
  }
  MLIRContext *ctx = op.getContext();
  SmallVector<AffineExpr> rows;
  for (int64_t d = 0; d + 1 < numLoops; ++d)
    rows.push_back(getAffineDimExpr(d, ctx));
  if (op.getMatchingIndexingMap(op.getDpsInitOperand(0)) !=
      AffineMap::get(numLoops, 0, rows, ctx))
    return false;
  AffineExpr reduced = getAffineDimExpr(numLoops - 1, ctx);
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    if (!map.isProjectedPermutation(/*allowZeroInResults=*/false) ||
        (map.isFunctionOfDim(numLoops - 1) &&
         map.getResults().back() != reduced))
      return false;
  }
  return op.getStaticLoopRanges().back() >= 2 * lanes;
}

/// Vectorizes an inner reduction (isInnerReduction) with `lanes` partial
/// results per row: the whole vectors of the reduced loop are split off
/// (linalg::splitOp; the remainder stays scalar and continues from their
/// result), their reduction is split into `lanes` interleaved partial
/// reductions (linalg::splitReduction, inner dimension parallel), which are
/// tiled by one vector and vectorized (each vector of a row is combined
/// with the row's vector of `lanes` accumulators), and the `lanes` partial
/// results are combined by a scalar reduction.
LogicalResult vectorizeInnerReduction(RewriterBase &rewriter,
                                      linalg::GenericOp op, int64_t lanes) {
  int64_t last = op.getNumLoops() - 1;
  int64_t range = op.getStaticLoopRanges().back();
  linalg::LinalgOp whole = op;
  if (range % lanes != 0) {
    rewriter.setInsertionPoint(op);
    auto [vectors, remainder] =
        linalg::splitOp(rewriter, cast<TilingInterface>(op.getOperation()),
                        last, rewriter.getIndexAttr(range / lanes * lanes));
    if (!vectors || !remainder)
      return failure();
    whole = cast<linalg::LinalgOp>(vectors.getOperation());
  }
  rewriter.setInsertionPoint(whole);
  FailureOr<linalg::SplitReductionResult> split =
      linalg::splitReduction(rewriter, whole, [&](linalg::LinalgOp) {
        return linalg::SplitReductionOptions{lanes, static_cast<unsigned>(last),
                                             /*innerParallel=*/true};
      });
  if (failed(split))
    return failure();
  linalg::LinalgOp partial = split->splitLinalgOp;
  // Loops: the parallel ones, the reduction by vectors, the lanes; the
  // tile is one vector, added to the accumulators of its row.
  SmallVector<int64_t> tileSizes(partial.getNumLoops(), 1);
  tileSizes.back() = 0;
  // Static shapes: the vector shape is the loop range (no masks).
  return tileToVector(rewriter, partial, tileSizes, {});
}

/// Rewrites a 1-D `vector.transfer_read` (in bounds, minor identity) of a
/// view that steps by 2 along its last dimension (a stride-2 window view of
/// a convolution's or pooling's padded input, through the unit-stride slices
/// of the tiling) into one contiguous read of twice the lanes from the
/// viewed tensor and a `vector.shuffle` of its even lanes: a vector of the
/// view would otherwise be a gather, one load per lane. The wide read is in
/// bounds when the strided slice ends at least one element before its
/// source's last dimension does (offset + 2 x size <= source size), and
/// padded (masked) otherwise. Returns whether `read` was rewritten.
bool readStrideTwoAsShuffle(RewriterBase &rewriter,
                            vector::TransferReadOp read) {
  VectorType vectorType = read.getVectorType();
  if (vectorType.getRank() != 1 || read.getMask() ||
      !read.getPermutationMap().isMinorIdentity() ||
      !read.getInBoundsValues().front())
    return false;
  // The chain of slices first (no IR is created unless it qualifies).
  int64_t total = 1;
  for (Value view = read.getBase();
       auto slice = view.getDefiningOp<tensor::ExtractSliceOp>();
       view = slice.getSource()) {
    int64_t last = slice.getSourceType().getRank() - 1;
    if (slice.getDroppedDims().test(last) ||
        !llvm::all_of(slice.getMixedStrides(), [](OpFoldResult stride) {
          std::optional<int64_t> value = getConstantIntValue(stride);
          return value && *value >= 1;
        }))
      return false;
    total *= *getConstantIntValue(slice.getMixedStrides()[last]);
  }
  if (total != 2)
    return false;

  Location loc = read.getLoc();
  rewriter.setInsertionPoint(read);
  Value base = read.getBase();
  SmallVector<Value> indices(read.getIndices());
  int64_t stride = 1;
  bool inBounds = true;
  auto constant = [&](OpFoldResult value) {
    return getValueOrCreateConstantIndexOp(rewriter, loc, value);
  };
  while (auto slice = base.getDefiningOp<tensor::ExtractSliceOp>()) {
    RankedTensorType source = slice.getSourceType();
    int64_t last = source.getRank() - 1;
    llvm::SmallBitVector dropped = slice.getDroppedDims();
    if (dropped.test(last))
      return false;
    std::optional<int64_t> lastStride =
        getConstantIntValue(slice.getMixedStrides()[last]);
    if (!lastStride || *lastStride < 1)
      return false;
    if (*lastStride != 1) {
      std::optional<int64_t> offset =
          getConstantIntValue(slice.getMixedOffsets()[last]);
      std::optional<int64_t> size =
          getConstantIntValue(slice.getMixedSizes()[last]);
      inBounds &= offset && size && !source.isDynamicDim(last) &&
                  *offset + *lastStride * *size <= source.getDimSize(last);
    }
    stride *= *lastStride;
    SmallVector<Value> sourceIndices;
    size_t next = 0;
    for (int64_t d = 0; d <= last; ++d) {
      Value offset = constant(slice.getMixedOffsets()[d]);
      if (dropped.test(d)) {
        sourceIndices.push_back(offset);
        continue;
      }
      Value index = indices[next++];
      std::optional<int64_t> step =
          getConstantIntValue(slice.getMixedStrides()[d]);
      if (!step)
        return false;
      if (*step != 1)
        index = rewriter.createOrFold<arith::MulIOp>(
            loc, index, arith::ConstantIndexOp::create(rewriter, loc, *step));
      sourceIndices.push_back(
          rewriter.createOrFold<arith::AddIOp>(loc, offset, index));
    }
    indices = std::move(sourceIndices);
    base = slice.getSource();
  }
  if (stride != 2)
    return false;
  int64_t lanes = vectorType.getNumElements();
  auto wideType = VectorType::get({2 * lanes}, vectorType.getElementType());
  Value wide = vector::TransferReadOp::create(rewriter, loc, wideType, base,
                                              indices, read.getPadding(),
                                              ArrayRef<bool>{inBounds});
  SmallVector<int64_t> evens;
  for (int64_t i = 0; i < lanes; ++i)
    evens.push_back(2 * i);
  rewriter.replaceOpWithNewOp<vector::ShuffleOp>(read, wide, wide, evens);
  return true;
}

/// Output rows a window tile holds in vector registers at most, counted in
/// vectors of the ISA's width (getWindowRowTile): AVX2's 16 registers keep
/// 8 accumulators, the weight broadcast and the input rows.
constexpr int64_t kMaxWindowTileVectors = 8;

/// The number of output rows each tile of `op` computes: more than one when
/// `op` reads at least two views of one tensor (`tensor.extract_slice`s at
/// unit strides, as a depthwise convolution or a pooling reads its padded
/// input) that start on different rows (dimension rank - 2 of its loops and
/// of the views, which identity maps read): the tile's rows then share the
/// input rows their windows overlap on, each loaded once for up to
/// kernel-height products, and each weight broadcast serves every row. The
/// largest of 4, 3, 2 that divides the rows and keeps `rows x
/// ceil(width / lanes)` vectors within kMaxWindowTileVectors; 1 otherwise.
int64_t getWindowRowTile(linalg::LinalgOp op, int64_t width, int64_t lanes) {
  int64_t numLoops = op.getNumLoops();
  if (numLoops < 2)
    return 1;
  llvm::DenseMap<Value, llvm::SmallDenseSet<int64_t>> rowOffsets;
  for (OpOperand *input : op.getDpsInputOperands()) {
    auto slice = input->get().getDefiningOp<tensor::ExtractSliceOp>();
    if (!slice || !op.getMatchingIndexingMap(input).isIdentity() ||
        slice.getSourceType().getRank() != numLoops ||
        slice.getResultType().getRank() != numLoops ||
        !llvm::all_of(slice.getStaticStrides(),
                      [](int64_t stride) { return stride == 1; }))
      continue;
    int64_t offset = slice.getStaticOffsets()[numLoops - 2];
    if (!ShapedType::isDynamic(offset))
      rowOffsets[slice.getSource()].insert(offset);
  }
  if (llvm::none_of(rowOffsets,
                    [](const auto &entry) { return entry.second.size() > 1; }))
    return 1;
  int64_t rows = op.getStaticLoopRanges()[numLoops - 2];
  int64_t vectorsPerRow = llvm::divideCeil(width, lanes);
  for (int64_t tile : {4, 3, 2})
    if (rows % tile == 0 && tile * vectorsPerRow <= kMaxWindowTileVectors)
      return tile;
  return 1;
}

/// Unrolls the 2-D vector operations inside `loops` (the tiles of
/// getWindowRowTile) into one operation per row, as 1-D vectors of a row's
/// width, so that the rows' reads of the same input row are the same
/// operation (CSE).
LogicalResult
unrollWindowRows(func::FuncOp func,
                 const llvm::SmallPtrSetImpl<Operation *> &loops) {
  if (loops.empty())
    return success();
  vector::UnrollVectorOptions options;
  options.setNativeShapeFn(
      [](Operation *op) -> std::optional<SmallVector<int64_t>> {
        VectorType type;
        if (auto write = dyn_cast<vector::TransferWriteOp>(op))
          type = write.getVectorType();
        else if (op->getNumResults() == 1)
          type = dyn_cast<VectorType>(op->getResult(0).getType());
        if (!type || type.getRank() != 2 || type.getDimSize(0) == 1)
          return std::nullopt;
        return SmallVector<int64_t>{1, type.getDimSize(1)};
      });
  options.setFilterConstraint([&](Operation *op) {
    for (Operation *parent = op->getParentOp(); parent;
         parent = parent->getParentOp())
      if (loops.contains(parent))
        return success();
    return failure();
  });
  RewritePatternSet patterns(func.getContext());
  vector::populateVectorUnrollPatterns(patterns, options);
  return applyPatternsGreedily(func, std::move(patterns));
}

struct VectorizeElementwisePass
    : public autopar::impl::VectorizeElementwisePassBase<
          VectorizeElementwisePass> {
  using Base::Base;

  void runOnOperation() override {
    std::optional<CpuIsa> target = parseCpuIsa(isa);
    if (!target) {
      getOperation().emitError()
          << "autopar-vectorize-elementwise: unknown isa '" << isa
          << "' (expected " << getCpuIsaNames() << ")";
      return signalPassFailure();
    }
    int64_t lanes = getF32VectorLanes(*target);
    MLIRContext *ctx = &getContext();
    IRRewriter rewriter(ctx);

    SmallVector<linalg::LinalgOp> candidates;
    SmallVector<std::tuple<linalg::GenericOp, GatherLoop, int64_t>> gathers;
    SmallVector<linalg::GenericOp> reductions;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (isCandidate(op)) {
        candidates.push_back(op);
        return;
      }
      auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
      if (!generic)
        return;
      if (isInnerReduction(generic, lanes)) {
        reductions.push_back(generic);
        return;
      }
      // Full vectors, or half ones (AVX-512's 8-row tiles of positions).
      for (int64_t width : {lanes, lanes / 2})
        if (width >= 4)
          if (std::optional<GatherLoop> loop = getGatherLoop(generic, width)) {
            gathers.emplace_back(generic, *loop, width);
            return;
          }
    });
    bool vectorizedAny = false;
    // The loops of the window tiles of several rows (getWindowRowTile).
    llvm::SmallPtrSet<Operation *, 8> windowLoops;
    for (linalg::GenericOp op : reductions)
      if (succeeded(vectorizeInnerReduction(rewriter, op, lanes))) {
        vectorizedAny = true;
        ++numVectorized;
      }
    for (auto [op, loop, width] : gathers)
      if (succeeded(
              loop.step == 2
                  ? vectorizeStrideTwoGather(rewriter, op, width)
                  : vectorizeGatherCopy(rewriter, op, loop.loop, width))) {
        vectorizedAny = true;
        ++numVectorized;
      }
    for (linalg::LinalgOp op : candidates) {
      // One loop over the contiguous innermost elements.
      ReassociationIndices inner = getInnerContiguousLoops(op);
      // collapseOpIterationDims handles generics and copies whose maps are
      // projected permutations without constant (broadcast unit) results.
      bool collapsible =
          llvm::isa<linalg::GenericOp, linalg::CopyOp>(op.getOperation()) &&
          llvm::all_of(op.getIndexingMapsArray(), [](AffineMap map) {
            return map.isProjectedPermutation(/*allowZeroInResults=*/false);
          });
      if (inner.size() > 1 && collapsible) {
        SmallVector<ReassociationIndices> groups;
        for (int64_t d = 0; d < inner.front(); ++d)
          groups.push_back({d});
        groups.push_back(inner);
        rewriter.setInsertionPoint(op);
        FailureOr<linalg::CollapseResult> collapsed =
            linalg::collapseOpIterationDims(op, groups, rewriter);
        if (succeeded(collapsed)) {
          rewriter.replaceOp(op, collapsed->results);
          op = collapsed->collapsedOp;
        }
      }
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      // Whole vectors only (no masks): `lanes` when they divide the loop;
      // otherwise a short f32 loop (5 to 4 * lanes: rows of 56, 28, 14 or 7
      // positions that a window view keeps apart) is one vector of its
      // length, which LLVM splits into registers (a row of 56 in three
      // zmm and one ymm per operation, not seven ymm); otherwise half the
      // lanes down to 8 when they divide it; a longer loop is left to the
      // scalar loops. A read of a view that steps by 2 along the innermost
      // loop (a stride-2 window) becomes a contiguous read of twice the
      // lanes and a shuffle (readStrideTwoAsShuffle, below); other strides
      // would be a gather per vector and are left to LLVM's loop
      // vectorizer, which measured faster.
      if (hasStridedInnermost(op) && !hasStrideTwoInnermost(op))
        continue;
      int64_t width = lanes;
      if (ranges.back() % width != 0 && ranges.back() > 4 &&
          ranges.back() <= 4 * lanes &&
          llvm::all_of(op->getOperandTypes(), [](Type type) {
            return getElementTypeOrSelf(type).isF32();
          }))
        width = ranges.back();
      else if (width > 8 && ranges.back() % width != 0)
        width /= 2;
      if (ranges.back() % width != 0)
        continue;
      // Window views at unit stride: several output rows per tile.
      int64_t rows =
          hasStridedInnermost(op) ? 1 : getWindowRowTile(op, width, lanes);

      SmallVector<int64_t> tileSizes(ranges.size(), 1);
      tileSizes.back() = width;
      if (rows > 1)
        tileSizes[ranges.size() - 2] = rows;
      scf::SCFTilingOptions options;
      options.setTileSizes(getAsIndexOpFoldResult(ctx, tileSizes));
      rewriter.setInsertionPoint(op);
      FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
          rewriter, cast<TilingInterface>(op.getOperation()), options);
      if (failed(tiled) || tiled->tiledOps.size() != 1)
        continue;
      rewriter.replaceOp(op, tiled->replacements);
      Operation *tile = tiled->tiledOps.front();
      // One-dimensional vectors: the tile's unit loops are dropped through
      // rank-reducing slices (n-D transfers of leading unit dimensions are
      // not reliably unrolled by the vector lowering).
      if (ranges.size() > 1) {
        auto generic = dyn_cast<linalg::GenericOp>(tile);
        if (!generic) {
          rewriter.setInsertionPoint(tile);
          FailureOr<linalg::GenericOp> generalized =
              linalg::generalizeNamedOp(rewriter, cast<linalg::LinalgOp>(tile));
          if (failed(generalized))
            continue;
          generic = *generalized;
        }
        linalg::ControlDropUnitDims control;
        control.rankReductionStrategy = linalg::ControlDropUnitDims::
            RankReductionStrategy::ExtractInsertSlice;
        rewriter.setInsertionPoint(generic);
        FailureOr<linalg::DropUnitDimsResult> dropped =
            linalg::dropUnitDims(rewriter, generic, control);
        if (failed(dropped))
          continue;
        rewriter.replaceOp(generic, dropped->replacements);
        tile = dropped->resultOp.getOperation();
        if (cast<linalg::LinalgOp>(tile).getNumLoops() != (rows > 1 ? 2 : 1))
          continue;
      }
      SmallVector<int64_t> vectorSizes = {width};
      if (rows > 1)
        vectorSizes.insert(vectorSizes.begin(), rows);
      rewriter.setInsertionPoint(tile);
      FailureOr<linalg::VectorizationResult> vectorized =
          linalg::vectorize(rewriter, tile, vectorSizes);
      if (failed(vectorized))
        continue;
      rewriter.replaceOp(tile, vectorized->replacements);
      if (rows > 1)
        for (LoopLikeOpInterface loop : tiled->loops)
          windowLoops.insert(loop.getOperation());
      vectorizedAny = true;
      ++numVectorized;
    }
    // The rows of window tiles as 1-D vectors, then 1-D transfers (the
    // vector lowering unrolls n-D ones only partially).
    if (failed(unrollWindowRows(getOperation(), windowLoops)))
      return signalPassFailure();
    if (vectorizedAny && failed(simplifyVectors(getOperation())))
      return signalPassFailure();
    // Reads of stride-2 views (in bounds once simplified): contiguous reads
    // and shuffles.
    SmallVector<vector::TransferReadOp> reads;
    getOperation().walk([&](vector::TransferReadOp read) {
      if (read.getBase().getDefiningOp<tensor::ExtractSliceOp>())
        reads.push_back(read);
    });
    for (vector::TransferReadOp read : reads)
      (void)readStrideTwoAsShuffle(rewriter, read);
  }
};

} // namespace
