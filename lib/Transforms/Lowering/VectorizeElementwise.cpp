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
#include "mlir/Interfaces/TilingInterface.h"

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
  return succeeded(linalg::vectorizeOpPrecondition(op));
}

/// The longest run of innermost loops that is contiguous in every operand
/// (as one dimension, or absent).
ReassociationIndices getInnerContiguousLoops(linalg::LinalgOp op) {
  int64_t numLoops = op.getNumLoops();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  ReassociationIndices group = {numLoops - 1};
  for (int64_t first = numLoops - 2; first >= 0; --first) {
    ReassociationIndices candidate;
    for (int64_t d = first; d < numLoops; ++d)
      candidate.push_back(d);
    if (!linalg::areDimSequencesPreserved(maps, {candidate}))
      break;
    group = candidate;
  }
  return group;
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
    getOperation().walk([&](linalg::LinalgOp op) {
      if (isCandidate(op))
        candidates.push_back(op);
    });
    bool vectorizedAny = false;
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
      // Whole vectors only (no masks): a loop the lanes do not divide is
      // left to the scalar loops.
      if (ranges.back() % lanes != 0)
        continue;

      SmallVector<int64_t> tileSizes(ranges.size(), 1);
      tileSizes.back() = lanes;
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
        if (cast<linalg::LinalgOp>(tile).getNumLoops() != 1)
          continue;
      }
      rewriter.setInsertionPoint(tile);
      FailureOr<linalg::VectorizationResult> vectorized =
          linalg::vectorize(rewriter, tile, {lanes});
      if (failed(vectorized))
        continue;
      rewriter.replaceOp(tile, vectorized->replacements);
      vectorizedAny = true;
      ++numVectorized;
    }
    // 1-D transfers (the vector lowering unrolls n-D ones only partially).
    if (vectorizedAny && failed(simplifyVectors(getOperation())))
      return signalPassFailure();
  }
};

} // namespace
