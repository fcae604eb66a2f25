//===- ChunkParallelLoops.cpp - thread the loops of top-level linalg ops --===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements autopar-chunk-parallel-loops: each top-level linalg op
// on static tensors with enough work (elementwise and normalization
// generics, pooling and depthwise-convolution windows, im2col copies,
// Winograd transforms, the transposes of lowered packs, reductions along
// their parallel loops) is tiled along one parallel loop into a fixed number
// of chunks, an `scf.forall` whose iterations become an OpenMP work-sharing
// loop. The packed contractions are threaded by autopar-tile-contractions.
//
//===----------------------------------------------------------------------===//

#include "autopar/Transforms/Lowering/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/TilingInterface.h"

#include "llvm/Support/Debug.h"

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

/// The chunks of `op` (static loop ranges `ranges`): the number of
/// iterations of its whole loop nest is its work; each chunk gets at least
/// `minChunkWork` of them, and there are at most `maxChunks`, at least 2.
/// The chunks split one parallel loop evenly (its range divided by the
/// number of chunks: every chunk has the same static shape); the innermost
/// loop only into multiples of kWidestLanes. The most chunks win (the
/// smallest imbalance for any small number of threads), then the outermost
/// loop (contiguous chunks). None when the work is below 2 x minChunkWork.
std::optional<Chunking>
chooseChunking(linalg::LinalgOp op, int64_t minChunkWork, int64_t maxChunks) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  int64_t work = 1;
  for (int64_t range : ranges) {
    if (ShapedType::isDynamic(range))
      return std::nullopt;
    work *= range;
  }
  if (minChunkWork < 1 || work < 2 * minChunkWork)
    return std::nullopt;
  std::optional<Chunking> best;
  int64_t innermost = static_cast<int64_t>(ranges.size()) - 1;
  for (int64_t loop = 0; loop <= innermost; ++loop) {
    if (iterators[loop] != utils::IteratorType::parallel || ranges[loop] < 2)
      continue;
    for (int64_t chunks = std::min(maxChunks, ranges[loop]); chunks >= 2;
         --chunks) {
      if (ranges[loop] % chunks != 0 || work / chunks < minChunkWork)
        continue;
      if (loop == innermost && (ranges[loop] / chunks) % kWidestLanes != 0)
        continue;
      if (!best || chunks > best->chunks)
        best = Chunking{loop, chunks};
      break;
    }
  }
  return best;
}

/// Rewrites `pad`, a `tensor.pad` of static shapes with a constant value
/// outside any loop, whose result has at least `minElements` elements, into
/// linalg ops that can be chunked: a `linalg.fill` of the padded tensor and a
/// `linalg.copy` of the source into its interior (a `tensor.extract_slice`
/// of the fill, inserted back). Bufferized, this is the same fill and copy as
/// the pad's own bufferization, in place, but as linalg ops (chunked here,
/// vectorized later) rather than a sequential fill and a strided
/// `memref.copy` (scalar loops). Returns whether it was rewritten.
bool decomposePad(RewriterBase &rewriter, tensor::PadOp pad,
                  int64_t minElements) {
  RankedTensorType source = pad.getSourceType();
  RankedTensorType result = pad.getResultType();
  Value value = pad.getConstantPaddingValue();
  if (!value || !source.hasStaticShape() || !result.hasStaticShape() ||
      result.getNumElements() < minElements)
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
    MLIRContext *ctx = &getContext();
    IRRewriter rewriter(ctx);
    // Pads with enough elements to be chunked: a fill and a copy.
    SmallVector<tensor::PadOp> pads;
    getOperation().walk([&](tensor::PadOp pad) { pads.push_back(pad); });
    for (tensor::PadOp pad : pads)
      if (decomposePad(rewriter, pad, 2 * minChunkWork))
        ++numPads;

    SmallVector<linalg::LinalgOp> candidates;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (isTopLevelCandidate(op))
        candidates.push_back(op);
    });
    for (linalg::LinalgOp op : candidates) {
      std::optional<Chunking> chunking =
          chooseChunking(op, minChunkWork, maxChunks);
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
