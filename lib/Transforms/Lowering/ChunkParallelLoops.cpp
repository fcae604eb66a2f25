//===- ChunkParallelLoops.cpp - thread the loops of top-level linalg ops --===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements autopar-chunk-parallel-loops: each top-level linalg op
// on static tensors whose work (LoopWork.h: FLOPs and bytes moved) fills two
// threads (elementwise and normalization generics, pooling and
// depthwise-convolution windows, im2col copies, Winograd transforms, the
// transposes of lowered packs, reductions along their parallel loops) is
// tiled along one parallel loop into a fixed number of chunks, an
// `scf.forall` whose iterations become an OpenMP work-sharing loop. The
// packed contractions are threaded by autopar-tile-contractions.
//
//===----------------------------------------------------------------------===//

#include "autopar/Transforms/Lowering/Passes.h"

#include "autopar/Transforms/Lowering/LoopWork.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/TilingInterface.h"

#include "llvm/Support/Debug.h"
#include "llvm/Support/MathExtras.h"

#define DEBUG_TYPE "autopar-chunk-parallel-loops"

namespace mlir::autopar {
#define GEN_PASS_DEF_CHUNKPARALLELLOOPSPASS
#include "autopar/Transforms/Lowering/Passes.h.inc"
} // namespace mlir::autopar

using namespace mlir;
using namespace mlir::autopar;

namespace {

/// The widest f32 vector (AVX-512: 16 lanes). A chunk of an op's innermost
/// loop keeps a multiple of it, so that autopar-vectorize-elementwise still
/// divides the chunk into whole vectors on every ISA.
constexpr int64_t kWidestLanes = 16;

/// How an op is split: `chunks` chunks of its loop `loop`.
struct Chunking {
  int64_t loop;
  int64_t chunks;
};

/// Whether `op` is a linalg op on static tensors outside any loop (a loop's
/// body is already run by one thread of a parallel loop, or repeated by a
/// sequential one whose iterations are each too small to split).
bool isTopLevelCandidate(linalg::LinalgOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumParallelLoops() == 0 ||
      !isa<TilingInterface>(op.getOperation()))
    return false;
  if (!llvm::all_of(op->getOperandTypes(), [](Type type) {
        auto shaped = dyn_cast<ShapedType>(type);
        return !shaped || shaped.hasStaticShape();
      }))
    return false;
  for (Operation *parent = op->getParentOp();
       parent && !isa<FunctionOpInterface>(parent);
       parent = parent->getParentOp())
    if (isa<LoopLikeOpInterface>(parent))
      return false;
  return true;
}

/// Index points at most that isTilingExact evaluates per indexing
/// expression (beyond, the loop is not chunked): a fraction of a
/// millisecond each.
constexpr int64_t kMaxCheckedPoints = int64_t(1) << 18;

/// The value of `expr`, an affine expression without symbols, at the loop
/// indices `dims` (floordiv, ceildiv and mod as in MLIR: rounding down, up,
/// and a non-negative remainder).
int64_t evaluate(AffineExpr expr, ArrayRef<int64_t> dims) {
  switch (expr.getKind()) {
  case AffineExprKind::Constant:
    return cast<AffineConstantExpr>(expr).getValue();
  case AffineExprKind::DimId:
    return dims[cast<AffineDimExpr>(expr).getPosition()];
  case AffineExprKind::SymbolId:
    llvm_unreachable("expressions with symbols are not evaluated");
  default:
    break;
  }
  auto binary = cast<AffineBinaryOpExpr>(expr);
  int64_t lhs = evaluate(binary.getLHS(), dims);
  int64_t rhs = evaluate(binary.getRHS(), dims);
  switch (expr.getKind()) {
  case AffineExprKind::Add:
    return lhs + rhs;
  case AffineExprKind::Mul:
    return lhs * rhs;
  case AffineExprKind::FloorDiv:
    return llvm::divideFloorSigned(lhs, rhs);
  case AffineExprKind::CeilDiv:
    return llvm::divideCeilSigned(lhs, rhs);
  case AffineExprKind::Mod:
    return (lhs % rhs + rhs) % rhs;
  default:
    llvm_unreachable("not a binary affine expression");
  }
}

/// Whether `expr` is linear in the loop indices: sums of loop indices times
/// constants and constants, without floordiv, ceildiv or mod (which
/// AffineExpr::isPureAffine allows by constants).
bool isLinear(AffineExpr expr) {
  bool linear = expr.isPureAffine();
  expr.walk([&](AffineExpr inner) {
    linear &= inner.getKind() != AffineExprKind::FloorDiv &&
              inner.getKind() != AffineExprKind::CeilDiv &&
              inner.getKind() != AffineExprKind::Mod;
  });
  return linear;
}

/// Whether tiling `op` (static loop ranges `ranges`) along `loop` by
/// `tileSize` reads and writes every operand where the whole op does.
/// Linalg's tiling (computeSliceParameters, through TilingInterface) slices
/// each operand dimension at e(tile offsets) - e(0) of its indexing
/// expression e, of size e(last index of the tile) + 1 (the whole range of
/// every loop but the tiled one), and leaves e to index the slice with the
/// tile's own indices, from 0. That is exact for a linear e, but not for a
/// floordiv or mod:
/// - of the tiled loop, unless the tiles align with the divisors: the rows
///   p of a flat im2col copy read position (p floordiv 31, p mod 31) of a
///   31 x 31 output, and a tile of 61 rows from row 61 reads its position
///   (1, 30) at (0, 0) of the slice that starts there;
/// - of any loop, when e is largest elsewhere than at the last index: m mod
///   16 for m < 1000 has the slice size 999 mod 16 + 1 = 8, but reads 16.
/// Each non-linear e is checked at every point of the loops it uses (at most
/// kMaxCheckedPoints, or the loop is refused): 0 <= e(i) <= e(last index)
/// at each index i of a tile, and, when e uses the tiled loop, e(offset + i)
/// = e(offset) - e(0) + e(i) for each tile offset.
bool isTilingExact(linalg::LinalgOp op, ArrayRef<int64_t> ranges, int64_t loop,
                   int64_t tileSize) {
  for (AffineMap map : op.getIndexingMapsArray()) {
    for (AffineExpr expr : map.getResults()) {
      if (isLinear(expr))
        continue;
      if (map.getNumSymbols() != 0 || !expr.isPureAffine())
        return false;
      SmallVector<int64_t> used;
      int64_t points = 1;
      for (int64_t d = 0, numDims = map.getNumDims(); d < numDims; ++d)
        if (expr.isFunctionOfDim(d)) {
          used.push_back(d);
          points *= ranges[d];
          if (points > kMaxCheckedPoints)
            return false;
        }
      bool tiled = expr.isFunctionOfDim(loop);
      SmallVector<int64_t> index(map.getNumDims(), 0);
      int64_t atZero = evaluate(expr, index);
      for (int64_t d : used)
        index[d] = (d == loop ? tileSize : ranges[d]) - 1;
      int64_t last = evaluate(expr, index);
      // Every point of the used loops, odometer-wise.
      SmallVector<int64_t> point(map.getNumDims(), 0);
      SmallVector<int64_t> inTile(map.getNumDims(), 0);
      SmallVector<int64_t> atOffset(map.getNumDims(), 0);
      for (int64_t n = 0; n < points; ++n) {
        int64_t offset = tiled ? point[loop] - point[loop] % tileSize : 0;
        llvm::copy(point, inTile.begin());
        inTile[loop] -= offset;
        int64_t local = evaluate(expr, inTile);
        if (local < 0 || local > last)
          return false;
        if (tiled) {
          atOffset[loop] = offset;
          if (evaluate(expr, point) !=
              evaluate(expr, atOffset) - atZero + local)
            return false;
        }
        for (int64_t d : llvm::reverse(used)) {
          if (++point[d] < ranges[d])
            break;
          point[d] = 0;
        }
      }
    }
  }
  return true;
}

/// Which ops have work for more than one thread: those whose work fills two
/// threads of `minFlopsPerThread` equivalent FLOPs each
/// (LoopWork::getEquivalentFlops with `flopsPerByte`), as
/// autopar-size-thread-teams decides for the loop of their chunks; every op
/// when `minFlopsPerThread` is 0.
struct ThreadGrain {
  uint64_t minFlopsPerThread;
  uint64_t flopsPerByte;

  bool fillsTwoThreads(const LoopWork &work) const {
    return minFlopsPerThread == 0 ||
           getThreadsFilled(/*iterations=*/2, work, minFlopsPerThread,
                            flopsPerByte) >= 2;
  }
};

/// The chunks of `op`: none unless its work (estimateLinalgWork) fills two
/// threads of `grain`. The chunks split one parallel loop evenly (its range
/// divided by the number of chunks: every chunk has the same static shape),
/// each with at least `minChunkWork` iterations of the op's loop nest, at
/// most `maxChunks` of them and at least 2, and tile the op exactly
/// (isTilingExact); the innermost loop only into multiples of kWidestLanes.
/// The most chunks win (the smallest imbalance
/// for any small number of threads), then the outermost loop (contiguous
/// chunks).
std::optional<Chunking> chooseChunking(linalg::LinalgOp op,
                                       const ThreadGrain &grain,
                                       int64_t minChunkWork,
                                       int64_t maxChunks) {
  std::optional<LoopWork> work = estimateLinalgWork(op);
  if (!work || !grain.fillsTwoThreads(*work))
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  int64_t iterations = 1;
  for (int64_t range : ranges)
    iterations *= range;
  std::optional<Chunking> best;
  int64_t innermost = static_cast<int64_t>(ranges.size()) - 1;
  for (int64_t loop = 0; loop <= innermost; ++loop) {
    if (iterators[loop] != utils::IteratorType::parallel || ranges[loop] < 2)
      continue;
    for (int64_t chunks = std::min(maxChunks, ranges[loop]); chunks >= 2;
         --chunks) {
      if (ranges[loop] % chunks != 0 || iterations / chunks < minChunkWork)
        continue;
      if (loop == innermost && (ranges[loop] / chunks) % kWidestLanes != 0)
        continue;
      if (!isTilingExact(op, ranges, loop, ranges[loop] / chunks))
        continue;
      if (!best || chunks > best->chunks)
        best = Chunking{loop, chunks};
      break;
    }
  }
  return best;
}

/// Rewrites `pad`, a `tensor.pad` of static shapes with a constant value
/// outside any loop, whose result has at least `minElements` elements and
/// whose fill and copy (the result written, the source read) fill two
/// threads of `grain`, into
/// linalg ops that can be chunked: a `linalg.fill` of the padded tensor and a
/// `linalg.copy` of the source into its interior (a `tensor.extract_slice`
/// of the fill, inserted back). Bufferized, this is the same fill and copy as
/// the pad's own bufferization, in place, but as linalg ops (chunked here,
/// vectorized later) rather than a sequential fill and a strided
/// `memref.copy` (scalar loops). Returns whether it was rewritten.
bool decomposePad(RewriterBase &rewriter, tensor::PadOp pad,
                  int64_t minElements, const ThreadGrain &grain) {
  RankedTensorType source = pad.getSourceType();
  RankedTensorType result = pad.getResultType();
  Value value = pad.getConstantPaddingValue();
  if (!value || !source.hasStaticShape() || !result.hasStaticShape() ||
      result.getNumElements() < minElements)
    return false;
  uint64_t elementBytes = llvm::divideCeil(result.getElementTypeBitWidth(), 8);
  LoopWork work;
  work.addBytes(pad.getResult(),
                elementBytes * static_cast<uint64_t>(result.getNumElements()));
  work.addBytes(pad.getSource(),
                elementBytes * static_cast<uint64_t>(source.getNumElements()));
  if (!grain.fillsTwoThreads(work))
    return false;
  for (Operation *parent = pad->getParentOp();
       parent && !isa<FunctionOpInterface>(parent);
       parent = parent->getParentOp())
    if (isa<LoopLikeOpInterface>(parent))
      return false;
  Location loc = pad.getLoc();
  rewriter.setInsertionPoint(pad);
  // The value may be defined in the pad's body (a constant there).
  if (value.getParentRegion() == &pad.getRegion())
    value = rewriter.clone(*value.getDefiningOp())->getResult(0);
  Value empty = tensor::EmptyOp::create(rewriter, loc, result.getShape(),
                                        result.getElementType());
  Value filled =
      linalg::FillOp::create(rewriter, loc, value, empty).getResult(0);
  SmallVector<OpFoldResult> offsets = pad.getMixedLowPad();
  SmallVector<OpFoldResult> sizes =
      getAsIndexOpFoldResult(rewriter.getContext(), source.getShape());
  SmallVector<OpFoldResult> strides(source.getRank(), rewriter.getIndexAttr(1));
  Value interior = tensor::ExtractSliceOp::create(rewriter, loc, source, filled,
                                                  offsets, sizes, strides);
  Value copied =
      linalg::CopyOp::create(rewriter, loc, pad.getSource(), interior)
          .getResult(0);
  rewriter.replaceOpWithNewOp<tensor::InsertSliceOp>(pad, copied, filled,
                                                     offsets, sizes, strides);
  return true;
}

struct ChunkParallelLoopsPass
    : public autopar::impl::ChunkParallelLoopsPassBase<ChunkParallelLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (minChunkWork < 1 || maxChunks < 2) {
      getOperation().emitError()
          << "autopar-chunk-parallel-loops: min-chunk-work must be at least "
             "1 and max-chunks at least 2, got: "
          << minChunkWork.getValue() << " and " << maxChunks.getValue();
      return signalPassFailure();
    }
    if (minFlopsPerThread < 0 || flopsPerByte < 0) {
      getOperation().emitError()
          << "autopar-chunk-parallel-loops: min-flops-per-thread and "
             "flops-per-byte must not be negative, got: "
          << minFlopsPerThread.getValue() << " and " << flopsPerByte.getValue();
      return signalPassFailure();
    }
    ThreadGrain grain{static_cast<uint64_t>(minFlopsPerThread.getValue()),
                      static_cast<uint64_t>(flopsPerByte.getValue())};
    MLIRContext *ctx = &getContext();
    IRRewriter rewriter(ctx);
    // Pads with enough elements to be chunked: a fill and a copy.
    SmallVector<tensor::PadOp> pads;
    getOperation().walk([&](tensor::PadOp pad) { pads.push_back(pad); });
    for (tensor::PadOp pad : pads)
      if (decomposePad(rewriter, pad, 2 * minChunkWork, grain))
        ++numPads;

    SmallVector<linalg::LinalgOp> candidates;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (isTopLevelCandidate(op))
        candidates.push_back(op);
    });
    for (linalg::LinalgOp op : candidates) {
      std::optional<Chunking> chunking =
          chooseChunking(op, grain, minChunkWork, maxChunks);
      if (!chunking) {
        ++numSequential;
        continue;
      }
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      SmallVector<int64_t> tileSizes(ranges.size(), 0);
      tileSizes[chunking->loop] = ranges[chunking->loop] / chunking->chunks;
      scf::SCFTilingOptions options;
      options.setTileSizes(getAsIndexOpFoldResult(ctx, tileSizes));
      options.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
      rewriter.setInsertionPoint(op);
      FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
          rewriter, cast<TilingInterface>(op.getOperation()), options);
      if (failed(tiled)) {
        // The op stays whole and sequential: correct, only slower.
        LLVM_DEBUG(llvm::dbgs() << "cannot tile " << op << "\n");
        ++numSequential;
        continue;
      }
      LLVM_DEBUG(llvm::dbgs()
                 << "chunked loop " << chunking->loop << " of " << op->getName()
                 << " into " << chunking->chunks << "\n");
      rewriter.replaceOp(op, tiled->replacements);
      ++numChunked;
    }
  }
};

} // namespace
