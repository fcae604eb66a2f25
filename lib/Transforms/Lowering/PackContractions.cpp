//===- PackContractions.cpp - data-tile matmuls into mmt4d -------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements autopar-pack-contractions: f32 matmuls and gemms of a
// device program become linalg.pack + linalg.mmt4d + linalg.unpack with the
// register tile of the target ISA, and weights that only feed such
// contractions take the packed layout (written packed by the driver), and
// packWeightForMmt4d, the driver's side of that contract.
//
//===----------------------------------------------------------------------===//

#include "autopar/Transforms/Lowering/PackedWeights.h"
#include "autopar/Transforms/Lowering/Passes.h"

#include "autopar/Dialect/Autopar/IR/Autopar.h"
#include "autopar/Target/Target.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/Support/Debug.h"

#include <cstring>
#include <optional>

#define DEBUG_TYPE "autopar-pack-contractions"

namespace mlir::autopar {
#define GEN_PASS_DEF_PACKCONTRACTIONSPASS
#include "autopar/Transforms/Lowering/Passes.h.inc"
} // namespace mlir::autopar

using namespace mlir;
using namespace mlir::autopar;

void mlir::autopar::packWeightForMmt4d(const char *src, int64_t k, int64_t n,
                                       bool transposed, int64_t n0, int64_t k0,
                                       size_t elementSize, char *dst) {
  int64_t n1 = (n + n0 - 1) / n0, k1 = (k + k0 - 1) / k0;
  for (int64_t bn = 0; bn < n1; ++bn)
    for (int64_t bk = 0; bk < k1; ++bk)
      for (int64_t i = 0; i < n0; ++i)
        for (int64_t j = 0; j < k0; ++j) {
          int64_t row = bk * k0 + j, col = bn * n0 + i;
          char *out = dst + (((bn * k1 + bk) * n0 + i) * k0 + j) * elementSize;
          if (row >= k || col >= n) {
            std::memset(out, 0, elementSize);
            continue;
          }
          int64_t index = transposed ? col * k + row : row * n + col;
          std::memcpy(out, src + index * elementSize, elementSize);
        }
}

namespace {

/// A contraction `alpha * A * op(B) (+ beta * bias)` that data tiling covers:
/// A is M x K after folding its batch dimensions into the rows, B is K x N
/// (N x K when `transposedB`).
struct Contraction {
  Operation *op;
  Value a, b, bias;
  /// The type of the unpacked right operand.
  RankedTensorType bType;
  bool transposedB = false;
  double alpha = 1.0, beta = 1.0;
};

bool isStaticF32(Value value, int64_t minRank, int64_t maxRank) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && type.hasStaticShape() && type.getElementType().isF32() &&
         type.getRank() >= minRank && type.getRank() <= maxRank;
}

std::optional<Contraction> matchContraction(Operation *op) {
  if (auto matmul = dyn_cast<MatMulOp>(op)) {
    if (!isStaticF32(matmul.getA(), 2, 8) || !isStaticF32(matmul.getB(), 2, 2) ||
        !isStaticF32(matmul.getResult(), 2, 8))
      return std::nullopt;
    return Contraction{op, matmul.getA(), matmul.getB(), Value(),
                       cast<RankedTensorType>(matmul.getB().getType())};
  }
  if (auto gemm = dyn_cast<GemmOp>(op)) {
    if (gemm.getTransA() || !isStaticF32(gemm.getA(), 2, 2) ||
        !isStaticF32(gemm.getB(), 2, 2) ||
        !isStaticF32(gemm.getResult(), 2, 2) ||
        (gemm.getC() && !isStaticF32(gemm.getC(), 0, 2)))
      return std::nullopt;
    Contraction c{op, gemm.getA(), gemm.getB(), gemm.getC(),
                  cast<RankedTensorType>(gemm.getB().getType())};
    c.transposedB = gemm.getTransB();
    c.alpha = gemm.getAlpha().convertToDouble();
    c.beta = gemm.getBeta().convertToDouble();
    return c;
  }
  return std::nullopt;
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// `linalg.pack` of `source` into a new tensor of `destShape`, padded with
/// zeros when a tile does not divide its dimension.
Value createPack(OpBuilder &b, Location loc, Value source,
                 ArrayRef<int64_t> destShape, ArrayRef<int64_t> innerDimsPos,
                 ArrayRef<int64_t> innerTiles, ArrayRef<int64_t> outerPerm) {
  auto type = cast<RankedTensorType>(source.getType());
  Type elementType = type.getElementType();
  Value dest = tensor::EmptyOp::create(b, loc, destShape, elementType);
  std::optional<Value> padding;
  for (auto [pos, tile] : llvm::zip(innerDimsPos, innerTiles))
    if (type.getDimSize(pos) % tile != 0)
      padding = arith::ConstantOp::create(b, loc, b.getZeroAttr(elementType));
  return linalg::PackOp::create(
             b, loc, source, dest, innerDimsPos,
             getAsIndexOpFoldResult(b.getContext(), innerTiles), padding,
             outerPerm)
      .getResult();
}

/// The packed type of the right operand: N1 x K1 x n0 x k0.
RankedTensorType getPackedRhsType(RankedTensorType bType, bool transposed,
                                  ContractionTile tile) {
  int64_t k = bType.getDimSize(transposed ? 1 : 0);
  int64_t n = bType.getDimSize(transposed ? 0 : 1);
  return RankedTensorType::get(
      {ceilDiv(n, tile.n0), ceilDiv(k, tile.k0), tile.n0, tile.k0},
      bType.getElementType());
}

/// Packs the right operand per call.
Value packRhs(OpBuilder &b, Location loc, Value rhs, bool transposed,
              ContractionTile tile) {
  auto type = cast<RankedTensorType>(rhs.getType());
  RankedTensorType packed = getPackedRhsType(type, transposed, tile);
  if (transposed)
    return createPack(b, loc, rhs, packed.getShape(), {0, 1},
                      {tile.n0, tile.k0}, {});
  return createPack(b, loc, rhs, packed.getShape(), {1, 0}, {tile.n0, tile.k0},
                    {1, 0});
}

/// `alpha * acc + beta * bias` with the bias broadcast to acc's M x N shape.
Value createGemmEpilogue(OpBuilder &b, Location loc, Value acc,
                         const Contraction &c) {
  auto type = cast<RankedTensorType>(acc.getType());
  MLIRContext *ctx = b.getContext();
  Type f32 = type.getElementType();
  SmallVector<Value> inputs = {acc};
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(2)};
  if (c.bias) {
    auto biasType = cast<RankedTensorType>(c.bias.getType());
    SmallVector<AffineExpr> exprs;
    int64_t offset = 2 - biasType.getRank();
    for (int64_t i = 0; i < biasType.getRank(); ++i) {
      int64_t dim = offset + i;
      exprs.push_back(biasType.getDimSize(i) == 1 && type.getDimSize(dim) != 1
                          ? getAffineConstantExpr(0, ctx)
                          : getAffineDimExpr(dim, ctx));
    }
    inputs.push_back(c.bias);
    maps.push_back(AffineMap::get(2, 0, exprs, ctx));
  }
  maps.push_back(b.getMultiDimIdentityMap(2));
  Value init = tensor::EmptyOp::create(b, loc, type.getShape(), f32);
  SmallVector<utils::IteratorType> iterators(2, utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{type}, inputs, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value result = args[0];
        if (c.alpha != 1.0)
          result = arith::MulFOp::create(
              nb, nloc, result,
              arith::ConstantOp::create(nb, nloc, nb.getF32FloatAttr(c.alpha)));
        if (c.bias) {
          Value bias = args[1];
          if (c.beta != 1.0)
            bias = arith::MulFOp::create(
                nb, nloc, bias,
                arith::ConstantOp::create(nb, nloc,
                                          nb.getF32FloatAttr(c.beta)));
          result = arith::AddFOp::create(nb, nloc, result, bias);
        }
        linalg::YieldOp::create(nb, nloc, result);
      });
  return generic.getResult(0);
}

/// Replaces the contraction by pack + mmt4d + unpack; `packedRhs` is the
/// right operand already packed (a packed weight), or null.
void rewriteContraction(const Contraction &c, Value packedRhs,
                        ContractionTile tile) {
  OpBuilder b(c.op);
  Location loc = c.op->getLoc();
  auto resultType = cast<RankedTensorType>(c.op->getResult(0).getType());
  auto aType = cast<RankedTensorType>(c.a.getType());
  Type f32 = aType.getElementType();

  // Batch dimensions of A fold into the rows.
  Value a = c.a;
  if (aType.getRank() > 2) {
    SmallVector<ReassociationIndices> reassociation(2);
    for (int64_t i = 0; i + 1 < aType.getRank(); ++i)
      reassociation[0].push_back(i);
    reassociation[1].push_back(aType.getRank() - 1);
    a = tensor::CollapseShapeOp::create(b, loc, a, reassociation);
  }
  auto a2Type = cast<RankedTensorType>(a.getType());
  int64_t m = a2Type.getDimSize(0), k = a2Type.getDimSize(1);
  int64_t n = c.bType.getDimSize(c.transposedB ? 0 : 1);
  int64_t m1 = ceilDiv(m, tile.m0), n1 = ceilDiv(n, tile.n0),
          k1 = ceilDiv(k, tile.k0);

  Value packedLhs = createPack(b, loc, a, {m1, k1, tile.m0, tile.k0}, {0, 1},
                               {tile.m0, tile.k0}, {});
  if (!packedRhs)
    packedRhs = packRhs(b, loc, c.b, c.transposedB, tile);
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(f32));
  Value accEmpty =
      tensor::EmptyOp::create(b, loc, {m1, n1, tile.m0, tile.n0}, f32);
  Value acc = linalg::FillOp::create(b, loc, ValueRange{zero},
                                     ValueRange{accEmpty})
                  .getResult(0);
  auto accType = cast<RankedTensorType>(acc.getType());
  acc = linalg::Mmt4DOp::create(b, loc, TypeRange{accType},
                                ValueRange{packedLhs, packedRhs},
                                ValueRange{acc})
            .getResult(0);
  Value out = tensor::EmptyOp::create(b, loc, {m, n}, f32);
  Value result =
      linalg::UnPackOp::create(b, loc, acc, out, {0, 1},
                               getAsIndexOpFoldResult(b.getContext(),
                                                      {tile.m0, tile.n0}))
          .getResult();
  if (isa<GemmOp>(c.op) && (c.bias || c.alpha != 1.0))
    result = createGemmEpilogue(b, loc, result, c);
  if (resultType.getRank() > 2) {
    SmallVector<ReassociationIndices> reassociation(2);
    for (int64_t i = 0; i + 1 < resultType.getRank(); ++i)
      reassociation[0].push_back(i);
    reassociation[1].push_back(resultType.getRank() - 1);
    result = tensor::ExpandShapeOp::create(b, loc, resultType, result,
                                           reassociation);
  }
  c.op->getResult(0).replaceAllUsesWith(result);
  c.op->erase();
}

/// A matmul of two activations with the same batch dimensions (attention's
/// `Q K^T` and `P V`): both operands rank >= 3, f32, static, no broadcast.
bool isBatchedMatmul(MatMulOp op) {
  if (!isStaticF32(op.getA(), 3, 8) || !isStaticF32(op.getB(), 3, 8) ||
      !isStaticF32(op.getResult(), 3, 8))
    return false;
  auto aType = cast<RankedTensorType>(op.getA().getType());
  auto bType = cast<RankedTensorType>(op.getB().getType());
  return aType.getRank() == bType.getRank() &&
         aType.getShape().drop_back(2) == bType.getShape().drop_back(2);
}

/// Collapses the batch dimensions of a rank >= 3 tensor into one.
Value collapseBatch(OpBuilder &b, Location loc, Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  int64_t rank = type.getRank();
  if (rank == 3)
    return value;
  SmallVector<ReassociationIndices> reassociation(1);
  for (int64_t i = 0; i + 2 < rank; ++i)
    reassociation[0].push_back(i);
  reassociation.push_back({rank - 2});
  reassociation.push_back({rank - 1});
  return tensor::CollapseShapeOp::create(b, loc, value, reassociation);
}

/// Replaces a batched matmul by per-call packs of both operands,
/// `linalg.batch_mmt4d` and an unpack.
void rewriteBatchedMatmul(MatMulOp op, ContractionTile tile) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto resultType = cast<RankedTensorType>(op.getType());
  Type f32 = resultType.getElementType();
  Value a = collapseBatch(b, loc, op.getA());
  Value rhs = collapseBatch(b, loc, op.getB());
  auto aType = cast<RankedTensorType>(a.getType());
  auto bType = cast<RankedTensorType>(rhs.getType());
  int64_t batch = aType.getDimSize(0), m = aType.getDimSize(1),
          k = aType.getDimSize(2), n = bType.getDimSize(2);
  int64_t m1 = ceilDiv(m, tile.m0), n1 = ceilDiv(n, tile.n0),
          k1 = ceilDiv(k, tile.k0);
  Value packedLhs =
      createPack(b, loc, a, {batch, m1, k1, tile.m0, tile.k0}, {1, 2},
                 {tile.m0, tile.k0}, {});
  Value packedRhs =
      createPack(b, loc, rhs, {batch, n1, k1, tile.n0, tile.k0}, {2, 1},
                 {tile.n0, tile.k0}, {0, 2, 1});
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(f32));
  Value accEmpty = tensor::EmptyOp::create(
      b, loc, {batch, m1, n1, tile.m0, tile.n0}, f32);
  Value acc = linalg::FillOp::create(b, loc, ValueRange{zero},
                                     ValueRange{accEmpty})
                  .getResult(0);
  acc = linalg::BatchMmt4DOp::create(b, loc, TypeRange{acc.getType()},
                                     ValueRange{packedLhs, packedRhs},
                                     ValueRange{acc})
            .getResult(0);
  Value out = tensor::EmptyOp::create(b, loc, {batch, m, n}, f32);
  Value result =
      linalg::UnPackOp::create(b, loc, acc, out, {1, 2},
                               getAsIndexOpFoldResult(b.getContext(),
                                                      {tile.m0, tile.n0}))
          .getResult();
  if (resultType.getRank() > 3) {
    SmallVector<ReassociationIndices> reassociation(1);
    for (int64_t i = 0; i + 2 < resultType.getRank(); ++i)
      reassociation[0].push_back(i);
    reassociation.push_back({resultType.getRank() - 2});
    reassociation.push_back({resultType.getRank() - 1});
    result = tensor::ExpandShapeOp::create(b, loc, resultType, result,
                                           reassociation);
  }
  op.getResult().replaceAllUsesWith(result);
  op.erase();
}

struct PackContractionsPass
    : public autopar::impl::PackContractionsPassBase<PackContractionsPass> {
  using Base::Base;

  void runOnOperation() override {
    std::optional<CpuIsa> target = parseCpuIsa(isa);
    if (!target) {
      getOperation().emitError()
          << "autopar-pack-contractions: unknown isa '" << isa
          << "' (expected auto, avx512, avx2 or generic)";
      return signalPassFailure();
    }
    ContractionTile tile = getContractionTile(*target);

    llvm::MapVector<Operation *, Contraction> contractions;
    SmallVector<MatMulOp> batched;
    getOperation().walk([&](Operation *op) {
      if (std::optional<Contraction> c = matchContraction(op))
        contractions.insert({op, *c});
      else if (auto matmul = dyn_cast<MatMulOp>(op);
               matmul && isBatchedMatmul(matmul))
        batched.push_back(matmul);
    });
    for (MatMulOp matmul : batched) {
      rewriteBatchedMatmul(matmul, tile);
      ++numContractions;
    }

    // Weights whose every use (of every op of the name) is the right operand
    // of a data-tiled contraction, with one orientation, take the packed type.
    llvm::StringMap<Value> packedWeights;
    if (packWeights) {
      llvm::MapVector<StringRef, SmallVector<WeightOp>> weights;
      getOperation().walk(
          [&](WeightOp op) { weights[op.getName()].push_back(op); });
      for (auto &[name, ops] : weights) {
        std::optional<bool> transposed;
        bool packable = true;
        for (WeightOp op : ops)
          for (OpOperand &use : op.getResult().getUses()) {
            auto it = contractions.find(use.getOwner());
            if (it == contractions.end() || use.getOperandNumber() != 1 ||
                (transposed && *transposed != it->second.transposedB)) {
              packable = false;
              break;
            }
            transposed = it->second.transposedB;
          }
        if (!packable || !transposed)
          continue;
        // Packing at compile time is a permutation of the weight only when
        // the tiles divide it; padding would grow the weight file beyond the
        // shard that the plan accounts for, so such a weight is packed per
        // call.
        auto type = cast<RankedTensorType>(ops.front().getType());
        if (type.getDimSize(*transposed ? 0 : 1) % tile.n0 != 0 ||
            type.getDimSize(*transposed ? 1 : 0) % tile.k0 != 0)
          continue;
        for (WeightOp op : ops) {
          auto type = cast<RankedTensorType>(op.getType());
          OpBuilder b(op);
          auto packed = WeightOp::create(
              b, op.getLoc(), getPackedRhsType(type, *transposed, tile),
              op.getName());
          packed->setDiscardableAttrs(op->getDiscardableAttrDictionary());
          packed->setAttr(kPackedTilesAttrName,
                          b.getDenseI64ArrayAttr({tile.n0, tile.k0}));
          packed->setAttr(kPackedSourceTypeAttrName, TypeAttr::get(type));
          if (*transposed)
            packed->setAttr(kPackedTransposedAttrName, b.getUnitAttr());
          packedWeights[name] = packed.getResult();
          ++numPackedWeights;
          for (OpOperand &use : op.getResult().getUses())
            contractions.find(use.getOwner())->second.b = packed.getResult();
        }
      }
    }

    for (auto &[op, c] : contractions) {
      Value packedRhs;
      if (auto weight = c.b.getDefiningOp<WeightOp>())
        if (weight->hasAttr(kPackedTilesAttrName))
          packedRhs = c.b;
      // Operands as they are now: one may be the result of a contraction
      // rewritten before (a chain of matmuls), replaced since matching.
      c.a = op->getOperand(0);
      if (!packedRhs)
        c.b = op->getOperand(1);
      if (c.bias)
        c.bias = op->getOperand(2);
      rewriteContraction(c, packedRhs, tile);
      ++numContractions;
    }
    // The unpacked weight ops have no uses left.
    getOperation().walk([&](WeightOp op) {
      if (op.getResult().use_empty() && !op->hasAttr(kPackedTilesAttrName) &&
          packedWeights.count(op.getName()))
        op.erase();
    });
  }
};

} // namespace
