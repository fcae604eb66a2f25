//===- TileContractions.cpp - tile and vectorize linalg.mmt4d ---*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements autopar-tile-contractions: each linalg.mmt4d on tensors
// becomes loops over its outer tiles around one vector.contract of the
// register tile whose accumulator stays in registers across the reduction
// loop; linalg.pack and linalg.unpack become pad/reshape/transpose.
//
//===----------------------------------------------------------------------===//

#include "autopar/Transforms/Lowering/Passes.h"

#include "VectorCleanup.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

namespace mlir::autopar {
#define GEN_PASS_DEF_TILECONTRACTIONSPASS
#include "autopar/Transforms/Lowering/Passes.h.inc"
} // namespace mlir::autopar

using namespace mlir;
using namespace mlir::autopar;

namespace {

/// Tiles a (batch_)mmt4d to one register tile per iteration: a parallel
/// `scf.forall` over the batch and N1 (outermost, so that one packed column
/// panel of B stays in cache while the rows of A stream past it; its
/// iterations become threads), then loops over M1 and the reduction K1.
/// `batched`: the op has a leading batch dimension. Returns the tiled op.
FailureOr<Operation *> tileMmt4d(RewriterBase &rewriter, linalg::LinalgOp op,
                                 bool batched) {
  MLIRContext *ctx = rewriter.getContext();
  SmallVector<int64_t> panelSizes = {0, 1, 0, 0, 0, 0};
  SmallVector<int64_t> tileSizes = {1, 0, 1, 0, 0, 0};
  if (batched) {
    panelSizes.insert(panelSizes.begin(), 1);
    tileSizes.insert(tileSizes.begin(), 0);
  }
  scf::SCFTilingOptions panels;
  panels.setTileSizes(getAsIndexOpFoldResult(ctx, panelSizes));
  panels.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTilingResult> outer = scf::tileUsingSCF(
      rewriter, cast<TilingInterface>(op.getOperation()), panels);
  if (failed(outer) || outer->tiledOps.size() != 1)
    return failure();
  rewriter.replaceOp(op, outer->replacements);

  auto panel = cast<TilingInterface>(outer->tiledOps.front());
  scf::SCFTilingOptions tiles;
  tiles.setTileSizes(getAsIndexOpFoldResult(ctx, tileSizes));
  rewriter.setInsertionPoint(panel);
  FailureOr<scf::SCFTilingResult> inner =
      scf::tileUsingSCF(rewriter, panel, tiles);
  if (failed(inner) || inner->tiledOps.size() != 1)
    return failure();
  rewriter.replaceOp(panel, inner->replacements);
  return inner->tiledOps.front();
}

struct TileContractionsPass
    : public autopar::impl::TileContractionsPassBase<TileContractionsPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    MLIRContext *ctx = &getContext();
    IRRewriter rewriter(ctx);

    // Packs and unpacks: pad + expand_shape + transpose, and transpose +
    // collapse_shape + extract_slice.
    SmallVector<linalg::PackOp> packs;
    SmallVector<linalg::UnPackOp> unpacks;
    func.walk([&](Operation *op) {
      if (auto pack = dyn_cast<linalg::PackOp>(op))
        packs.push_back(pack);
      else if (auto unpack = dyn_cast<linalg::UnPackOp>(op))
        unpacks.push_back(unpack);
    });
    for (linalg::PackOp pack : packs) {
      rewriter.setInsertionPoint(pack);
      if (failed(linalg::lowerPack(rewriter, pack))) {
        pack.emitOpError() << "cannot be lowered to pad, reshape and transpose";
        return signalPassFailure();
      }
    }
    for (linalg::UnPackOp unpack : unpacks) {
      rewriter.setInsertionPoint(unpack);
      if (failed(linalg::lowerUnPack(rewriter, unpack))) {
        unpack.emitOpError()
            << "cannot be lowered to transpose, reshape and slice";
        return signalPassFailure();
      }
    }

    // Register tiles, vectorized.
    SmallVector<linalg::LinalgOp> contractions;
    func.walk([&](linalg::LinalgOp op) {
      if (isa<linalg::Mmt4DOp, linalg::BatchMmt4DOp>(op.getOperation()))
        contractions.push_back(op);
    });
    for (linalg::LinalgOp op : contractions) {
      if (!op.hasPureTensorSemantics() ||
          !llvm::all_of(op->getOperandTypes(), [](Type type) {
            return cast<ShapedType>(type).hasStaticShape();
          }))
        continue;
      FailureOr<Operation *> tile =
          tileMmt4d(rewriter, op, isa<linalg::BatchMmt4DOp>(op.getOperation()));
      if (failed(tile)) {
        op.emitOpError() << "cannot be tiled to its register tile";
        return signalPassFailure();
      }
      rewriter.setInsertionPoint(*tile);
      FailureOr<linalg::VectorizationResult> vectorized =
          linalg::vectorize(rewriter, *tile, /*inputVectorSizes=*/{},
                            /*inputScalableVecDims=*/{},
                            /*vectorizeNDExtract=*/false,
                            /*flatten1DDepthwiseConv=*/false,
                            /*assumeDynamicDimsMatchVecSizes=*/false,
                            /*createNamedContraction=*/true);
      if (failed(vectorized)) {
        (*tile)->emitOpError() << "cannot be vectorized";
        return signalPassFailure();
      }
      rewriter.replaceOp(*tile, vectorized->replacements);
      ++numTiled;
    }
    // A register tile of an f32 left operand and a bf16/f16 right operand
    // (autopar-pack-contractions extends the packed left operand of
    // lower-precision contractions once per call): the right operand's
    // vector is extended to f32 in registers, as vector.contract takes one
    // operand element type.
    func.walk([&](vector::ContractionOp contract) {
      auto lhsType = cast<VectorType>(contract.getLhs().getType());
      auto rhsType = cast<VectorType>(contract.getRhs().getType());
      if (lhsType.getElementType() == rhsType.getElementType() ||
          !lhsType.getElementType().isF32())
        return;
      rewriter.setInsertionPoint(contract);
      Location loc = contract.getLoc();
      Type f32 = lhsType.getElementType();
      Value rhs = contract.getRhs();
      // An n0 x 1 tile of the packed right operand (k0 = 1) is n0
      // contiguous elements: read them as one 1-D vector along the n0
      // dimension (the 2-D read unrolls into n0 one-element loads, which
      // LLVM does not merge through the extension), extend, reshape.
      auto read = rhs.getDefiningOp<vector::TransferReadOp>();
      auto source =
          read ? dyn_cast<RankedTensorType>(read.getBase().getType()) : nullptr;
      // The one dimension of the tile longer than 1 (n0), when the last is 1.
      std::optional<int64_t> longDim;
      for (auto [i, size] : llvm::enumerate(rhsType.getShape()))
        if (size != 1)
          longDim = longDim ? -1 : static_cast<int64_t>(i);
      if (source && longDim && *longDim >= 0 &&
          *longDim + 2 == rhsType.getRank() && rhsType.getShape().back() == 1 &&
          source.getRank() >= rhsType.getRank() &&
          source.getShape().back() == 1 && !read.getMask() &&
          read.getPermutationMap().isMinorIdentity() &&
          llvm::all_of(read.getInBoundsValues(), [](bool b) { return b; })) {
        int64_t rank = source.getRank();
        auto flatType = VectorType::get({rhsType.getDimSize(*longDim)},
                                        rhsType.getElementType());
        // Read from the whole packed operand when the read is of a tile
        // slice (its last two dimensions whole), so that collapsing them is
        // a view of contiguous memory, not a copy of the slice.
        Value base = read.getBase();
        SmallVector<Value> indices(read.getIndices());
        if (auto slice = base.getDefiningOp<tensor::ExtractSliceOp>()) {
          RankedTensorType whole = slice.getSourceType();
          if (whole.getRank() == rank && slice.hasUnitStride() &&
              whole.getShape().take_back(2) == source.getShape().take_back(2)) {
            for (auto [index, offset] :
                 llvm::zip(indices, slice.getMixedOffsets()))
              index = arith::AddIOp::create(
                  rewriter, loc, index,
                  getValueOrCreateConstantIndexOp(rewriter, loc, offset));
            base = slice.getSource();
          }
        }
        SmallVector<ReassociationIndices> reassociation;
        for (int64_t i = 0; i + 2 < rank; ++i)
          reassociation.push_back({i});
        reassociation.push_back({rank - 2, rank - 1});
        Value collapsed =
            tensor::CollapseShapeOp::create(rewriter, loc, base, reassociation);
        indices.pop_back();
        Value flat = vector::TransferReadOp::create(
            rewriter, loc, flatType, collapsed, indices, read.getPadding(),
            ArrayRef<bool>{true});
        Value extended =
            arith::ExtFOp::create(rewriter, loc, flatType.clone(f32), flat);
        rhs = vector::ShapeCastOp::create(rewriter, loc, rhsType.clone(f32),
                                          extended);
      } else {
        rhs = arith::ExtFOp::create(rewriter, loc, rhsType.clone(f32), rhs);
      }
      rewriter.modifyOpInPlace(contract,
                               [&] { contract.getRhsMutable().assign(rhs); });
    });

    // Reading through slices folds into the transfers; the accumulator's
    // read and write leave the reduction loop (it is carried in registers
    // there); then unit dimensions go, so that the contraction is
    // m0 x n0 x k0 and lowers to outer products (one broadcast FMA per row).
    if (failed(simplifyVectors(func)))
      return signalPassFailure();
    SmallVector<scf::ForOp> loops;
    func.walk([&](scf::ForOp loop) { loops.push_back(loop); });
    for (scf::ForOp loop : loops) {
      rewriter.setInsertionPoint(loop);
      (void)hoistLoopInvariantSubsets(rewriter,
                                      cast<LoopLikeOpInterface>(*loop));
    }
    if (failed(simplifyVectors(func)))
      return signalPassFailure();
  }
};

} // namespace
