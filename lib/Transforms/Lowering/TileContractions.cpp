//===- TileContractions.cpp - tile and vectorize linalg.mmt4d ---*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements autopar-tile-contractions: each linalg.mmt4d on tensors
// becomes loops over its outer tiles around one vector.contract of the
// register tile whose accumulator stays in registers across the reduction
// loop (a bf16 x bf16 tile becomes dot products of bf16 pairs,
// x86vector.avx512.dot, where the ISA has them); linalg.pack and
// linalg.unpack become pad/reshape/transpose.
//
//===----------------------------------------------------------------------===//

#include "autopar/Transforms/Lowering/PackedWeights.h"
#include "autopar/Transforms/Lowering/Passes.h"

#include "VectorCleanup.h"

#include "autopar/Target/Target.h"

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
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

#include "llvm/ADT/SmallBitVector.h"

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
/// `batched`: the op has a leading batch dimension. A `linalg.contract`
/// marked `autopar.register_tile` has the loops (M1, N1, m0, n0, K1, k0).
/// Returns the tiled op.
/// `panelsOnly`: stop after the `scf.forall` (AMX tiles, see
/// autopar-amx-contractions, loop over M1 and K1 themselves).
FailureOr<Operation *> tileMmt4d(RewriterBase &rewriter, linalg::LinalgOp op,
                                 bool batched, bool panelsOnly = false) {
  MLIRContext *ctx = rewriter.getContext();
  SmallVector<int64_t> panelSizes = {0, 1, 0, 0, 0, 0};
  SmallVector<int64_t> tileSizes = {1, 0, 1, 0, 0, 0};
  if (op->hasAttr(kRegisterTileAttrName)) {
    // Loops (M1, N1, m0, n0, K1, k0).
    panelSizes = {0, 1, 0, 0, 0, 0};
    tileSizes = {1, 0, 0, 0, 1, 0};
  } else if (batched) {
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

  if (panelsOnly)
    return outer->tiledOps.front();
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

/// The elements a `vector.transfer_read` of a register tile reads, as one
/// 1-D vector, when they are contiguous: the read covers the whole last
/// dimension of its source, and its vector's dimensions but the last two are
/// 1. The source is viewed with its last two dimensions collapsed (read from
/// the whole tensor when the read is of a slice of it with the same last
/// dimension, so that the view is of contiguous memory, not a copy of the
/// slice). A 2-D read would unroll into one small load per row, which LLVM
/// does not merge (through an extension, or into a dot product's operand).
std::optional<Value> readContiguousTile(RewriterBase &rewriter,
                                        vector::TransferReadOp read) {
  auto vectorType = read.getVectorType();
  auto source = dyn_cast<RankedTensorType>(read.getBase().getType());
  int64_t rank = vectorType.getRank();
  if (!source || rank < 2 || source.getRank() < rank || read.getMask() ||
      !read.getPermutationMap().isMinorIdentity() ||
      !llvm::all_of(read.getInBoundsValues(), [](bool b) { return b; }) ||
      source.isDynamicDim(source.getRank() - 1) ||
      source.getShape().back() != vectorType.getShape().back() ||
      llvm::any_of(vectorType.getShape().drop_back(2),
                   [](int64_t size) { return size != 1; }))
    return std::nullopt;
  Location loc = read.getLoc();
  Value base = read.getBase();
  SmallVector<Value> indices(read.getIndices());
  if (auto slice = base.getDefiningOp<tensor::ExtractSliceOp>()) {
    RankedTensorType whole = slice.getSourceType();
    if (whole.getRank() == source.getRank() && slice.hasUnitStride() &&
        whole.getShape().back() == source.getShape().back()) {
      for (auto [index, offset] : llvm::zip(indices, slice.getMixedOffsets()))
        index = arith::AddIOp::create(
            rewriter, loc, index,
            getValueOrCreateConstantIndexOp(rewriter, loc, offset));
      base = slice.getSource();
    }
  }
  int64_t baseRank = cast<RankedTensorType>(base.getType()).getRank();
  int64_t last = vectorType.getShape().back();
  SmallVector<ReassociationIndices> reassociation;
  for (int64_t i = 0; i + 2 < baseRank; ++i)
    reassociation.push_back({i});
  reassociation.push_back({baseRank - 2, baseRank - 1});
  Value collapsed =
      tensor::CollapseShapeOp::create(rewriter, loc, base, reassociation);
  // Row i, element j of the last two dimensions: i * last + j.
  Value inner = indices.pop_back_val();
  Value row = indices.pop_back_val();
  Value offset = arith::AddIOp::create(
      rewriter, loc,
      arith::MulIOp::create(
          rewriter, loc, row,
          arith::ConstantIndexOp::create(rewriter, loc, last)),
      inner);
  indices.push_back(offset);
  auto flatType = VectorType::get({vectorType.getNumElements()},
                                  vectorType.getElementType());
  return vector::TransferReadOp::create(rewriter, loc, flatType, collapsed,
                                        indices, read.getPadding(),
                                        ArrayRef<bool>{true})
      .getResult();
}

/// `value`, a vector tile, as one 1-D vector: read contiguously when it is
/// such a read (`readContiguousTile`), otherwise reshaped.
Value flattenTile(RewriterBase &rewriter, Location loc, Value value) {
  if (auto read = value.getDefiningOp<vector::TransferReadOp>())
    if (std::optional<Value> flat = readContiguousTile(rewriter, read))
      return *flat;
  auto type = cast<VectorType>(value.getType());
  return vector::ShapeCastOp::create(
      rewriter, loc,
      VectorType::get({type.getNumElements()}, type.getElementType()), value);
}

/// The f32 lanes of one `vdpbf16ps` (a zmm register).
constexpr int64_t kDotLanes = 16;

/// Rewrites the register tile of a bf16 x bf16 -> f32 `linalg.mmt4d`
/// (`lhs 1.. x m0 x 2`, `rhs 1.. x n0 x 2`, `acc 1.. x m0 x n0`, n0 a
/// multiple of 16) into dot products of bf16 pairs: per row of the tile, the
/// row's pair of A (one 32-bit word) broadcast to 16 lanes, and per 16
/// columns, one `x86vector.avx512.dot` with the 16 pairs of B into 16 f32
/// accumulators. Fails (leaving the contraction alone) on any other form.
LogicalResult rewriteToBf16Dot(RewriterBase &rewriter,
                               vector::ContractionOp contract) {
  auto lhsType = cast<VectorType>(contract.getLhs().getType());
  auto rhsType = cast<VectorType>(contract.getRhs().getType());
  auto accType = dyn_cast<VectorType>(contract.getAcc().getType());
  if (!accType || !lhsType.getElementType().isBF16() ||
      !rhsType.getElementType().isBF16() || !accType.getElementType().isF32() ||
      lhsType.getRank() < 2 || rhsType.getRank() < 2 || accType.getRank() < 2 ||
      contract.getKind() != vector::CombiningKind::ADD)
    return failure();
  SmallVector<AffineMap> maps = contract.getIndexingMapsArray();
  auto dimAt = [](AffineMap map, int64_t fromBack) -> std::optional<unsigned> {
    auto dim = dyn_cast<AffineDimExpr>(
        map.getResult(map.getNumResults() - 1 - fromBack));
    if (!dim)
      return std::nullopt;
    return dim.getPosition();
  };
  std::optional<unsigned> dimM = dimAt(maps[0], 1), dimK = dimAt(maps[0], 0),
                          dimN = dimAt(maps[1], 1), dimK2 = dimAt(maps[1], 0),
                          dimM2 = dimAt(maps[2], 1), dimN2 = dimAt(maps[2], 0);
  if (!dimM || !dimK || !dimN || dimK != dimK2 || dimM != dimM2 ||
      dimN != dimN2 ||
      !vector::isReductionIterator(contract.getIteratorTypes()[*dimK]))
    return failure();
  auto units = [](VectorType type) {
    return llvm::all_of(type.getShape().drop_back(2),
                        [](int64_t size) { return size == 1; });
  };
  int64_t m0 = lhsType.getShape().end()[-2], k0 = lhsType.getShape().back(),
          n0 = rhsType.getShape().end()[-2];
  if (!units(lhsType) || !units(rhsType) || !units(accType) || k0 != 2 ||
      rhsType.getShape().back() != k0 || n0 % kDotLanes != 0 ||
      accType.getShape().end()[-2] != m0 || accType.getShape().back() != n0)
    return failure();

  Location loc = contract.getLoc();
  rewriter.setInsertionPoint(contract);
  Type bf16 = lhsType.getElementType();
  Type f32 = accType.getElementType();
  Type i32 = rewriter.getI32Type();
  // A: m0 pairs, one 32-bit word per row.
  Value lhsWords =
      vector::BitCastOp::create(rewriter, loc, VectorType::get({m0}, i32),
                                flattenTile(rewriter, loc, contract.getLhs()));
  // B: n0 pairs, 16 per vector.
  Value rhsFlat = flattenTile(rewriter, loc, contract.getRhs());
  SmallVector<Value> rhsParts;
  for (int64_t j = 0; j < n0; j += kDotLanes)
    rhsParts.push_back(vector::ExtractStridedSliceOp::create(
        rewriter, loc, rhsFlat, ArrayRef<int64_t>{j * k0},
        ArrayRef<int64_t>{kDotLanes * k0}, ArrayRef<int64_t>{1}));
  auto rowType = VectorType::get({n0}, f32);
  auto partType = VectorType::get({kDotLanes}, f32);
  auto pairsType = VectorType::get({kDotLanes * k0}, bf16);
  Value acc = vector::ShapeCastOp::create(
      rewriter, loc, VectorType::get({m0, n0}, f32), contract.getAcc());
  for (int64_t i = 0; i < m0; ++i) {
    Value word = vector::ExtractOp::create(rewriter, loc, lhsWords,
                                           ArrayRef<int64_t>{i});
    Value pairs = vector::BitCastOp::create(
        rewriter, loc, pairsType,
        vector::BroadcastOp::create(rewriter, loc,
                                    VectorType::get({kDotLanes}, i32), word));
    Value row =
        vector::ExtractOp::create(rewriter, loc, acc, ArrayRef<int64_t>{i});
    Value newRow = arith::ConstantOp::create(rewriter, loc, rowType,
                                             rewriter.getZeroAttr(rowType));
    for (auto [j, rhsPart] : llvm::enumerate(rhsParts)) {
      int64_t offset = static_cast<int64_t>(j) * kDotLanes;
      Value part = vector::ExtractStridedSliceOp::create(
          rewriter, loc, row, ArrayRef<int64_t>{offset},
          ArrayRef<int64_t>{kDotLanes}, ArrayRef<int64_t>{1});
      Value dot = x86vector::DotBF16Op::create(rewriter, loc, partType, part,
                                               pairs, rhsPart);
      newRow = vector::InsertStridedSliceOp::create(rewriter, loc, dot, newRow,
                                                    ArrayRef<int64_t>{offset},
                                                    ArrayRef<int64_t>{1});
    }
    acc = vector::InsertOp::create(rewriter, loc, newRow, acc,
                                   ArrayRef<int64_t>{i});
  }
  rewriter.replaceOpWithNewOp<vector::ShapeCastOp>(contract, accType, acc);
  return success();
}

/// Drops the unit iteration dimensions of `contract` (all but the last
/// reduction one) from its maps and its operands' vectors
/// (`vector.shape_cast`), when its accumulator has a unit dimension after a
/// longer one: the register tile of a `linalg.contract` whose accumulator is M1
/// x m0 x N1 x n0 reads a `m0 x 1 x n0` accumulator, which the
/// leading-unit-dimension patterns leave alone and the contraction's lowering
/// then does not see as the outer products of an `m0 x n0` tile.
LogicalResult dropInnerUnitDims(RewriterBase &rewriter,
                                vector::ContractionOp contract) {
  auto accType = dyn_cast<VectorType>(contract.getAcc().getType());
  if (!accType)
    return failure();
  ArrayRef<int64_t> accShape = accType.getShape();
  bool innerUnit = false;
  for (size_t i = 1; i < accShape.size(); ++i)
    innerUnit |= accShape[i] == 1 &&
                 llvm::any_of(accShape.take_front(i),
                              [](int64_t size) { return size != 1; });
  if (!innerUnit)
    return failure();
  SmallVector<int64_t> bounds;
  contract.getIterationBounds(bounds);
  SmallVector<vector::IteratorType> iterators =
      contract.getIteratorTypesArray();
  std::optional<unsigned> keep;
  for (unsigned d = 0; d < bounds.size(); ++d)
    if (iterators[d] == vector::IteratorType::reduction)
      keep = d;
  if (!keep)
    return failure();
  llvm::SmallBitVector dropped(bounds.size());
  for (unsigned d = 0; d < bounds.size(); ++d)
    dropped[d] = bounds[d] == 1 && d != *keep;
  if (dropped.none())
    return failure();

  Location loc = contract.getLoc();
  rewriter.setInsertionPoint(contract);
  MLIRContext *ctx = rewriter.getContext();
  SmallVector<AffineMap> maps = contract.getIndexingMapsArray();
  SmallVector<Value> operands = {contract.getLhs(), contract.getRhs(),
                                 contract.getAcc()};
  SmallVector<AffineMap> newMaps;
  for (auto [map, operand] : llvm::zip(maps, operands)) {
    auto type = cast<VectorType>(operand.getType());
    SmallVector<int64_t> shape;
    SmallVector<AffineExpr> exprs;
    for (auto [expr, size] : llvm::zip(map.getResults(), type.getShape())) {
      unsigned d = cast<AffineDimExpr>(expr).getPosition();
      if (dropped[d])
        continue;
      shape.push_back(size);
      exprs.push_back(expr);
    }
    operand = vector::ShapeCastOp::create(
        rewriter, loc, VectorType::get(shape, type.getElementType()), operand);
    newMaps.push_back(
        compressDims(AffineMap::get(map.getNumDims(), 0, exprs, ctx), dropped));
  }
  SmallVector<Attribute> newIterators;
  for (unsigned d = 0; d < bounds.size(); ++d)
    if (!dropped[d])
      newIterators.push_back(vector::IteratorTypeAttr::get(ctx, iterators[d]));
  auto newContract = vector::ContractionOp::create(
      rewriter, loc, operands[0], operands[1], operands[2],
      rewriter.getAffineMapArrayAttr(newMaps),
      rewriter.getArrayAttr(newIterators), contract.getKind());
  rewriter.replaceOpWithNewOp<vector::ShapeCastOp>(contract, accType,
                                                   newContract.getResult());
  return success();
}

/// Whether `op`, a static (batch_)mmt4d, has the form that
/// autopar-amx-contractions computes on AMX tiles: bf16 x bf16 -> f32 with
/// m0 = 1, k0 = 2 and n0 a multiple of 16.
bool isAmxContraction(linalg::LinalgOp op) {
  auto lhs = cast<ShapedType>(op->getOperand(0).getType());
  auto rhs = cast<ShapedType>(op->getOperand(1).getType());
  auto acc = cast<ShapedType>(op->getOperand(2).getType());
  return lhs.getElementType().isBF16() && rhs.getElementType().isBF16() &&
         acc.getElementType().isF32() && lhs.getShape().end()[-2] == 1 &&
         lhs.getShape().back() == 2 && rhs.getShape().back() == 2 &&
         rhs.getShape().end()[-2] % 16 == 0;
}

/// Starts the register tiles of a tiled contraction whose accumulator is a
/// constant fill (the zeros of a `linalg.mmt4d`'s output) from that constant
/// in registers, and leaves its output uninitialized: the fill, a pass over
/// the whole output before the contraction, goes. `forall` is the panel loop
/// of tileMmt4d after the accumulator's read and write left the reduction
/// loop: its shared output, initialized by the fill, is only sliced per
/// panel and written back; the slice is the init of the loop over M1 tiles,
/// whose iteration reads the accumulator tile (one `vector.transfer_read`)
/// and writes it back at the same indices, the loop's induction variable
/// among them (each tile is read before anything writes it). Returns whether
/// it was rewritten.
bool startFromFillInRegisters(RewriterBase &rewriter, scf::ForallOp forall) {
  if (forall.getNumResults() != 1)
    return false;
  OpOperand &output = forall.getOutputsMutable()[0];
  auto fill = output.get().getDefiningOp<linalg::FillOp>();
  if (!fill || !fill.hasPureTensorSemantics())
    return false;
  auto value = fill.getDpsInputs().front().getDefiningOp<arith::ConstantOp>();
  if (!value)
    return false;
  BlockArgument shared = forall.getRegionIterArgs().front();
  tensor::ExtractSliceOp panel;
  for (Operation *user : shared.getUsers()) {
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(user); slice && !panel) {
      panel = slice;
      continue;
    }
    if (!isa<tensor::ParallelInsertSliceOp>(user))
      return false;
  }
  if (!panel || !panel->hasOneUse())
    return false;
  auto loop = dyn_cast<scf::ForOp>(*panel->getUsers().begin());
  if (!loop || loop.getNumRegionIterArgs() != 1 ||
      loop.getInitArgs().front() != panel.getResult())
    return false;
  BlockArgument tiles = loop.getRegionIterArgs().front();
  vector::TransferReadOp read;
  vector::TransferWriteOp write;
  for (Operation *user : tiles.getUsers()) {
    if (auto r = dyn_cast<vector::TransferReadOp>(user); r && !read) {
      read = r;
      continue;
    }
    if (auto w = dyn_cast<vector::TransferWriteOp>(user);
        w && !write && w.getBase() == tiles) {
      write = w;
      continue;
    }
    return false;
  }
  if (!read || !write || read.getMask() || write.getMask() ||
      read.getIndices() != write.getIndices() ||
      !llvm::is_contained(read.getIndices(), loop.getInductionVar()) ||
      !write->hasOneUse() || !isa<scf::YieldOp>(*write->getUsers().begin()))
    return false;
  auto element = dyn_cast<FloatType>(value.getType());
  if (!element || read.getVectorType().getElementType() != element)
    return false;
  rewriter.setInsertionPoint(read);
  auto splat = DenseElementsAttr::get(read.getVectorType(),
                                      cast<FloatAttr>(value.getValue()));
  rewriter.replaceOpWithNewOp<arith::ConstantOp>(read, splat);
  rewriter.modifyOpInPlace(forall,
                           [&] { output.assign(fill.getDpsInits().front()); });
  if (fill->use_empty())
    rewriter.eraseOp(fill);
  return true;
}

struct TileContractionsPass
    : public autopar::impl::TileContractionsPassBase<TileContractionsPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    MLIRContext *ctx = &getContext();
    IRRewriter rewriter(ctx);
    std::optional<CpuIsa> target = parseCpuIsa(isa);
    if (!target) {
      func.emitError() << "autopar-tile-contractions: unknown isa '" << isa
                       << "' (expected " << getCpuIsaNames() << ")";
      return signalPassFailure();
    }
    bool hasBf16Dot = getBf16DotTile(*target).has_value();

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
      if (llvm::isa<linalg::Mmt4DOp, linalg::BatchMmt4DOp>(op.getOperation()) ||
          (llvm::isa<linalg::ContractOp>(op.getOperation()) &&
           op->hasAttr(kRegisterTileAttrName) && op.getNumLoops() == 6))
        contractions.push_back(op);
    });
    for (linalg::LinalgOp op : contractions) {
      if (!op.hasPureTensorSemantics() ||
          !llvm::all_of(op->getOperandTypes(), [](Type type) {
            return cast<ShapedType>(type).hasStaticShape();
          }))
        continue;
      // bf16 x bf16 on AMX: column panels only, the rest after
      // bufferization (AMX tiles load from and store to buffers).
      bool amx = hasAmxTiles(*target) && isAmxContraction(op);
      FailureOr<Operation *> tile = tileMmt4d(
          rewriter, op, llvm::isa<linalg::BatchMmt4DOp>(op.getOperation()),
          /*panelsOnly=*/amx);
      if (failed(tile)) {
        op.emitOpError() << "cannot be tiled to its register tile";
        return signalPassFailure();
      }
      if (amx) {
        ++numAmxPanels;
        continue;
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
    // Register tiles of accumulators with inner unit dimensions
    // (`linalg.contract` of a pointwise convolution) as m0 x n0 tiles.
    SmallVector<vector::ContractionOp> f32Contracts;
    func.walk([&](vector::ContractionOp contract) {
      f32Contracts.push_back(contract);
    });
    for (vector::ContractionOp contract : f32Contracts)
      (void)dropInnerUnitDims(rewriter, contract);

    // A register tile of two bf16 operands (autopar-pack-contractions packs
    // both in bf16 pairs for the ISA's dot product): dot products of bf16
    // pairs into the f32 accumulator where the ISA has them, otherwise (a
    // forced ISA without them) both operands extended to f32 in registers.
    SmallVector<vector::ContractionOp> bf16Contracts;
    func.walk([&](vector::ContractionOp contract) {
      auto lhsType = cast<VectorType>(contract.getLhs().getType());
      auto rhsType = cast<VectorType>(contract.getRhs().getType());
      if (lhsType.getElementType().isBF16() &&
          rhsType.getElementType().isBF16())
        bf16Contracts.push_back(contract);
    });
    for (vector::ContractionOp contract : bf16Contracts) {
      if (hasBf16Dot && succeeded(rewriteToBf16Dot(rewriter, contract))) {
        ++numDotBf16;
        continue;
      }
      rewriter.setInsertionPoint(contract);
      Location loc = contract.getLoc();
      Type f32 = rewriter.getF32Type();
      auto extend = [&](Value v) {
        auto type = cast<VectorType>(v.getType());
        return arith::ExtFOp::create(rewriter, loc, type.clone(f32), v)
            .getResult();
      };
      Value lhs = extend(contract.getLhs()), rhs = extend(contract.getRhs());
      rewriter.modifyOpInPlace(contract, [&] {
        contract.getLhsMutable().assign(lhs);
        contract.getRhsMutable().assign(rhs);
      });
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
      // contiguous elements: read them as one 1-D vector, extend, reshape.
      auto read = rhs.getDefiningOp<vector::TransferReadOp>();
      std::optional<Value> flat;
      if (read && rhsType.getShape().back() == 1)
        flat = readContiguousTile(rewriter, read);
      if (flat) {
        auto flatType = cast<VectorType>(flat->getType());
        Value extended =
            arith::ExtFOp::create(rewriter, loc, flatType.clone(f32), *flat);
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

    // Accumulators that start from a constant fill: from the constant in
    // registers, without the fill.
    SmallVector<scf::ForallOp> panels;
    func.walk([&](scf::ForallOp forall) { panels.push_back(forall); });
    for (scf::ForallOp forall : panels)
      (void)startFromFillInRegisters(rewriter, forall);
  }
};

} // namespace
