//===- PackContractions.cpp - data-tile matmuls into mmt4d ------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements autopar-pack-contractions: f32 matmuls, gemms and
// ungrouped convolutions (as an im2col product) of a device program become
// linalg.pack + linalg.mmt4d + linalg.unpack with the register tile of the
// target ISA, and weights that only feed such contractions take the packed
// layout (written packed by the driver), and packWeightForMmt4d, the driver's
// side of that contract.
//
//===----------------------------------------------------------------------===//

#include "autopar/Analysis/ConvTiling.h"
#include "autopar/Analysis/DataTiling.h"
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

#include <array>
#include <cstring>
#include <optional>
#include <tuple>
#include <vector>

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

void mlir::autopar::packWeightForWinograd(const float *src, int64_t m,
                                          int64_t c, int64_t n0, float *dst) {
  // U = G g G^T per (output channel, input channel), G = [1 0 0; 1/2 1/2 1/2;
  // 1/2 -1/2 1/2; 0 0 1]: tap (a, b) of U is matrix a * 4 + b, M x C.
  static constexpr float kG[4][3] = {
      {1.0f, 0.0f, 0.0f}, {0.5f, 0.5f, 0.5f}, {0.5f, -0.5f, 0.5f}, {0, 0, 1}};
  std::vector<float> taps(static_cast<size_t>(16 * m * c));
  for (int64_t o = 0; o < m; ++o)
    for (int64_t i = 0; i < c; ++i) {
      const float *g = src + (o * c + i) * 9;
      float gt[4][3]; // G g
      for (int64_t a = 0; a < 4; ++a)
        for (int64_t v = 0; v < 3; ++v)
          gt[a][v] =
              kG[a][0] * g[v] + kG[a][1] * g[3 + v] + kG[a][2] * g[6 + v];
      for (int64_t a = 0; a < 4; ++a)
        for (int64_t b = 0; b < 4; ++b)
          taps[((a * 4 + b) * m + o) * c + i] =
              gt[a][0] * kG[b][0] + gt[a][1] * kG[b][1] + gt[a][2] * kG[b][2];
    }
  int64_t tapSize = ((m + n0 - 1) / n0) * n0 * c;
  for (int64_t t = 0; t < 16; ++t)
    packWeightForMmt4d(reinterpret_cast<const char *>(taps.data() + t * m * c),
                       c, m, /*transposed=*/true, n0, /*k0=*/1, sizeof(float),
                       reinterpret_cast<char *>(dst + t * tapSize));
}

namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

//===----------------------------------------------------------------------===//
// Winograd F(2x2, 3x3)
//===----------------------------------------------------------------------===//

/// Float additions and subtractions of the Winograd transforms' bodies.
struct WinogradArith {
  OpBuilder &b;
  Location loc;
  Value add(Value l, Value r) {
    return arith::AddFOp::create(b, loc, l, r).getResult();
  }
  Value sub(Value l, Value r) {
    return arith::SubFOp::create(b, loc, l, r).getResult();
  }
};

Value getStorageSource(Value value);

/// Whether `conv` can take the Winograd form: its shape qualifies
/// (isWinogradShape), its input and weight are stored in f32, and its
/// weight is an `autopar.weight` (transformed at compile time).
bool isWinogradCandidate(ConvOp conv) {
  auto xType = cast<RankedTensorType>(conv.getInput().getType());
  auto wType = cast<RankedTensorType>(conv.getWeight().getType());
  if (xType.getRank() != 4 ||
      !isWinogradShape(xType.getDimSize(1), wType.getDimSize(0),
                       conv.getGroup(), wType.getShape().drop_front(2),
                       conv.getStrides(), conv.getDilations()))
    return false;
  return getStorageSource(conv.getInput()) == conv.getInput() &&
         getStorageSource(conv.getWeight()) == conv.getWeight() &&
         conv.getWeight().getDefiningOp<WeightOp>();
}

/// A is M x K after folding its batch dimensions into the rows, B is K x N
/// (N x K when `transposedB`). For a convolution, A is the im2col matrix of
/// the input (one row per output position, one column per (channel, kernel
/// offset)) and B the weight [M, C, kernel...] viewed as N x K.
struct Contraction {
  Operation *op;
  Value a, b, bias;
  /// The type of the unpacked right operand.
  RankedTensorType bType;
  bool transposedB = false;
  double alpha = 1.0, beta = 1.0;
  /// A convolution computed as `W (M x K) * cols^T (K x P)`: the weight is
  /// the packed left operand (tiles of m0 output channels) and the output
  /// positions are the columns, so that the packs and the epilogue move
  /// whole rows of positions (see rewriteConvolution).
  bool weightIsLhs = false;
  /// Both operands in bf16, packed in pairs along K (k0 = 2) for dot
  /// products of bf16 pairs into f32 (`getBf16DotTile`).
  bool dotBf16 = false;
  /// A convolution computed in the Winograd form (isWinogradConvolution),
  /// with its weight transformed at compile time.
  std::optional<WinogradGeometry> winograd;
};

/// The tile a packed weight of `c` is laid out with, as a right operand
/// (N1 x K1 x n0 x k0): a convolution's weight on the left takes m0 rows per
/// tile, so its "n0" is m0.
ContractionTile getWeightTile(const Contraction &c, ContractionTile tile) {
  if (c.weightIsLhs)
    return {tile.m0, tile.m0, tile.k0};
  return tile;
}

/// K and N of the right operand `type`: K x N, or N x K... when `transposed`
/// (the dimensions after the first are K, as in a convolution's weight).
std::pair<int64_t, int64_t> getRhsKN(RankedTensorType type, bool transposed) {
  if (!transposed)
    return {type.getDimSize(0), type.getDimSize(1)};
  int64_t k = 1;
  for (int64_t size : type.getShape().drop_front())
    k *= size;
  return {k, type.getDimSize(0)};
}

/// The bf16 or f16 value that `value` converts to f32 (autopar-lower-precision
/// stores weights and activations in the lower type), or `value` itself: the
/// packs read the stored type and `linalg.mmt4d` takes lower-type operands
/// with an f32 accumulator.
Value getStorageSource(Value value) {
  auto cast = value.getDefiningOp<CastOp>();
  if (!cast || !cast.getType().getElementType().isF32())
    return value;
  Type source = cast.getInput().getType().getElementType();
  if (!source.isBF16() && !source.isF16())
    return value;
  return cast.getInput();
}

/// Whether the operands `a` and `b` (as the contraction reads them) are each
/// stored in bf16 or f32, at least one in bf16: the contraction can take
/// both in bf16 for the dot-product tile (an f32 operand is rounded per call).
bool isBf16Contraction(Value a, Value b) {
  Type ta = getElementTypeOrSelf(getStorageSource(a).getType());
  Type tb = getElementTypeOrSelf(getStorageSource(b).getType());
  auto ok = [](Type t) { return t.isBF16() || t.isF32(); };
  return ok(ta) && ok(tb) && (ta.isBF16() || tb.isBF16());
}

bool isStaticF32(Value value, int64_t minRank, int64_t maxRank) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && type.hasStaticShape() && type.getElementType().isF32() &&
         type.getRank() >= minRank && type.getRank() <= maxRank;
}

std::optional<Contraction> matchContraction(Operation *op) {
  if (auto matmul = dyn_cast<MatMulOp>(op)) {
    if (!isDataTiledProduct(op))
      return std::nullopt;
    return Contraction{op, matmul.getA(), matmul.getB(), Value(),
                       cast<RankedTensorType>(matmul.getB().getType())};
  }
  if (auto gemm = dyn_cast<GemmOp>(op)) {
    if (!isDataTiledProduct(op))
      return std::nullopt;
    Contraction c{op, gemm.getA(), gemm.getB(), gemm.getC(),
                  cast<RankedTensorType>(gemm.getB().getType())};
    c.transposedB = isTransposedRhs(op);
    c.alpha = gemm.getAlpha().convertToDouble();
    c.beta = gemm.getBeta().convertToDouble();
    return c;
  }
  if (auto conv = dyn_cast<ConvOp>(op)) {
    // Grouped (depthwise) convolutions are not one product; they keep the
    // direct lowering.
    if (conv.getGroup() != 1 || !isStaticF32(conv.getInput(), 3, 8) ||
        !isStaticF32(conv.getResult(), 3, 8) ||
        !isStaticF32(conv.getWeight(), 3, 8) ||
        (conv.getBias() && !isStaticF32(conv.getBias(), 1, 1)))
      return std::nullopt;
    Contraction c{op, conv.getInput(), conv.getWeight(), conv.getBias(),
                  cast<RankedTensorType>(conv.getWeight().getType())};
    c.transposedB = true;
    return c;
  }
  return std::nullopt;
}

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
  auto [k, n] = getRhsKN(bType, transposed);
  return RankedTensorType::get(getPackedShape(n, k, tile.n0, tile.k0),
                               bType.getElementType());
}

/// Packs the right operand per call.
Value packRhs(OpBuilder &b, Location loc, Value rhs, bool transposed,
              ContractionTile tile) {
  auto type = cast<RankedTensorType>(rhs.getType());
  if (type.getRank() > 2) {
    // A convolution's weight [N, C, kernel...] is N x K.
    assert(transposed && "only an N x K... right operand has rank > 2");
    SmallVector<ReassociationIndices> reassociation = {{0}, {}};
    for (int64_t i = 1; i < type.getRank(); ++i)
      reassociation[1].push_back(i);
    rhs = tensor::CollapseShapeOp::create(b, loc, rhs, reassociation);
    type = cast<RankedTensorType>(rhs.getType());
  }
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

/// `packed` converted elementwise to `elementType` (extended or rounded to
/// nearest even), or itself when it has that type.
Value convertPacked(OpBuilder &b, Location loc, Value packed,
                    Type elementType) {
  auto type = cast<RankedTensorType>(packed.getType());
  if (type.getElementType() == elementType)
    return packed;
  bool extend = type.getElementType().getIntOrFloatBitWidth() <
                elementType.getIntOrFloatBitWidth();
  Value init = tensor::EmptyOp::create(b, loc, type.getShape(), elementType);
  SmallVector<utils::IteratorType> iterators(type.getRank(),
                                             utils::IteratorType::parallel);
  AffineMap identity = b.getMultiDimIdentityMap(type.getRank());
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, ValueRange{packed},
             ValueRange{init}, ArrayRef<AffineMap>{identity, identity},
             iterators,
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               Value converted =
                   extend
                       ? arith::ExtFOp::create(nb, nloc, elementType, args[0])
                             .getResult()
                       : arith::TruncFOp::create(nb, nloc, elementType, args[0])
                             .getResult();
               linalg::YieldOp::create(nb, nloc, converted);
             })
      .getResult(0);
}

/// The packed left operand of a register tile in f32: bf16/f16 tiles are
/// extended once per call (M x K conversions against M x N x K products), so
/// that the tile's rows broadcast f32 scalars straight from memory; the right
/// operand (the weight, read as vectors) keeps the lower type and is extended
/// in registers.
Value extendPackedLhs(OpBuilder &b, Location loc, Value packed) {
  return convertPacked(b, loc, packed, b.getF32Type());
}

/// The packed operands of a contraction: for the dot-product tile
/// (`dotBf16`), both in bf16 (an f32 activation is rounded once per call,
/// after its pack); otherwise the left one extended to f32.
std::pair<Value, Value> convertPackedOperands(OpBuilder &b, Location loc,
                                              Value lhs, Value rhs,
                                              bool dotBf16) {
  if (!dotBf16)
    return {extendPackedLhs(b, loc, lhs), rhs};
  Type bf16 = b.getBF16Type();
  return {convertPacked(b, loc, lhs, bf16), convertPacked(b, loc, rhs, bf16)};
}

/// `linalg.mmt4d` of the packed operands (M1 x K1 x m0 x k0 and
/// N1 x K1 x n0 x k0) into a zero-filled M1 x N1 x m0 x n0 accumulator;
/// both bf16 for the dot-product tile (`dotBf16`).
Value buildMmt4d(OpBuilder &b, Location loc, Value packedLhs, Value packedRhs,
                 bool dotBf16 = false) {
  std::tie(packedLhs, packedRhs) =
      convertPackedOperands(b, loc, packedLhs, packedRhs, dotBf16);
  auto lhsType = cast<RankedTensorType>(packedLhs.getType());
  auto rhsType = cast<RankedTensorType>(packedRhs.getType());
  // f32 accumulation, also of bf16/f16 operands.
  Type f32 = b.getF32Type();
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(f32));
  Value accEmpty =
      tensor::EmptyOp::create(b, loc,
                              {lhsType.getDimSize(0), rhsType.getDimSize(0),
                               lhsType.getDimSize(2), rhsType.getDimSize(2)},
                              f32);
  Value acc =
      linalg::FillOp::create(b, loc, ValueRange{zero}, ValueRange{accEmpty})
          .getResult(0);
  return linalg::Mmt4DOp::create(b, loc, TypeRange{acc.getType()},
                                 ValueRange{packedLhs, packedRhs},
                                 ValueRange{acc})
      .getResult(0);
}

/// `linalg.mmt4d` of the packed operands, unpacked to M x N.
Value buildPackedProduct(OpBuilder &b, Location loc, Value packedLhs,
                         Value packedRhs, int64_t m, int64_t n,
                         ContractionTile tile, bool dotBf16) {
  Value acc = buildMmt4d(b, loc, packedLhs, packedRhs, dotBf16);
  Type f32 = cast<RankedTensorType>(acc.getType()).getElementType();
  Value out = tensor::EmptyOp::create(b, loc, {m, n}, f32);
  return linalg::UnPackOp::create(
             b, loc, acc, out, {0, 1},
             getAsIndexOpFoldResult(b.getContext(), {tile.m0, tile.n0}))
      .getResult();
}

/// Replaces the matmul or gemm by pack + mmt4d + unpack; `packedRhs` is the
/// right operand already packed (a packed weight), or null.
void rewriteContraction(const Contraction &c, Value packedRhs,
                        ContractionTile tile) {
  OpBuilder b(c.op);
  Location loc = c.op->getLoc();
  auto resultType = cast<RankedTensorType>(c.op->getResult(0).getType());
  auto aType = cast<RankedTensorType>(c.a.getType());

  // Batch dimensions of A fold into the rows.
  Value a = getStorageSource(c.a);
  if (aType.getRank() > 2) {
    SmallVector<ReassociationIndices> reassociation(2);
    for (int64_t i = 0; i + 1 < aType.getRank(); ++i)
      reassociation[0].push_back(i);
    reassociation[1].push_back(aType.getRank() - 1);
    a = tensor::CollapseShapeOp::create(b, loc, a, reassociation);
  }
  auto a2Type = cast<RankedTensorType>(a.getType());
  int64_t m = a2Type.getDimSize(0), k = a2Type.getDimSize(1);
  int64_t n = getRhsKN(c.bType, c.transposedB).second;
  Value packedLhs =
      createPack(b, loc, a, getPackedShape(m, k, tile.m0, tile.k0), {0, 1},
                 {tile.m0, tile.k0}, {});
  if (!packedRhs)
    packedRhs = packRhs(b, loc, getStorageSource(c.b), c.transposedB, tile);
  Value result =
      buildPackedProduct(b, loc, packedLhs, packedRhs, m, n, tile, c.dotBf16);
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

/// The shapes of a convolution's im2col product: its shape and the rows of
/// its packed matrix (autopar/Analysis/ConvTiling.h, which the planner's
/// memory model reads too).
struct Im2colGeometry : ConvGeometry {
  ConvShape shape;
  int64_t batch, channels, spatial;
  SmallVector<int64_t> in, out, kernel, strides, dilations;
};

Im2colGeometry getIm2colGeometry(ConvOp conv, ContractionTile tile) {
  Im2colGeometry g;
  g.shape = getConvShape(conv);
  static_cast<ConvGeometry &>(g) = getConvGeometry(g.shape, tile.m0);
  g.batch = g.shape.batch;
  g.channels = g.shape.channels;
  g.spatial = g.shape.getSpatialRank();
  g.in = g.shape.in;
  g.out = g.shape.out;
  g.kernel = g.shape.kernel;
  g.strides = g.shape.strides;
  g.dilations = g.shape.dilations;
  return g;
}

/// Zero-pads `x` by `low` and `high` per dimension, when any is non-zero.
Value padWithZeros(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> low,
                   ArrayRef<int64_t> high) {
  if (llvm::all_of(low, [](int64_t v) { return v == 0; }) &&
      llvm::all_of(high, [](int64_t v) { return v == 0; }))
    return x;
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape(type.getShape());
  for (size_t i = 0; i < shape.size(); ++i)
    shape[i] += low[i] + high[i];
  MLIRContext *ctx = b.getContext();
  Value zero =
      arith::ConstantOp::create(b, loc, b.getZeroAttr(type.getElementType()));
  return tensor::PadOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), x,
      getAsIndexOpFoldResult(ctx, low), getAsIndexOpFoldResult(ctx, high),
      zero);
}

/// A copy `linalg.generic` over the loops of `resultShape` (identity output
/// map) reading `source` through `sourceMap`.
Value buildCopy(OpBuilder &b, Location loc, Value source, AffineMap sourceMap,
                ArrayRef<int64_t> resultShape) {
  Type f32 = cast<RankedTensorType>(source.getType()).getElementType();
  Value init = tensor::EmptyOp::create(b, loc, resultShape, f32);
  SmallVector<utils::IteratorType> iterators(resultShape.size(),
                                             utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, ValueRange{source},
             ValueRange{init},
             ArrayRef<AffineMap>{sourceMap,
                                 b.getMultiDimIdentityMap(resultShape.size())},
             iterators,
             [](OpBuilder &nb, Location nloc, ValueRange args) {
               linalg::YieldOp::create(nb, nloc, args[0]);
             })
      .getResult(0);
}

/// Collapses `value` by `groups` of consecutive dimensions.
Value collapseGroups(OpBuilder &b, Location loc, Value value,
                     ArrayRef<int64_t> groupSizes) {
  SmallVector<ReassociationIndices> reassociation;
  int64_t next = 0;
  for (int64_t size : groupSizes) {
    reassociation.emplace_back();
    for (int64_t i = 0; i < size; ++i)
      reassociation.back().push_back(next++);
  }
  return tensor::CollapseShapeOp::create(b, loc, value, reassociation);
}

/// The packed im2col matrix of a convolution's input, P1 x K x m0 x 1 (the
/// register tiles have k0 = 1), written by one copy `linalg.generic` from
/// the zero-padded input: no unpacked im2col matrix is materialized. The
/// copy writes P1 x K x m0 (its innermost loop runs over the m0 positions
/// of a tile, which a unit stride reads contiguously, so that
/// autopar-vectorize-elementwise copies them as vectors); the unit k0
/// dimension is added by a reshape.
Value packConvInput(OpBuilder &b, Location loc, ConvOp conv,
                    const Im2colGeometry &g, ContractionTile tile) {
  MLIRContext *ctx = b.getContext();
  Value x = getStorageSource(conv.getInput());
  int64_t m0 = tile.m0, s = g.spatial;
  auto dim = [&](int64_t d) { return getAffineDimExpr(d, ctx); };
  // The zero padding the copy reads (ConvTiling.h: the memory model counts
  // the padded copy).
  ConvInputPadding padding = getConvInputPadding(g.shape, g, m0);

  if (g.rows == ConvRows::Pointwise) {
    // X [C, positions], padded to rowTiles * m0 positions.
    SmallVector<ReassociationIndices> reassociation = {{0, 1}, {}};
    for (int64_t i = 0; i < s; ++i)
      reassociation[1].push_back(2 + i);
    Value flat = tensor::CollapseShapeOp::create(b, loc, x, reassociation);
    flat = padWithZeros(b, loc, flat, padding.low, padding.high);
    // Loops: p1, c, i, j.
    AffineMap map = AffineMap::get(4, 0, {dim(1), dim(0) * m0 + dim(2)}, ctx);
    return buildCopy(b, loc, flat, map, {g.rowTiles, g.channels, m0, 1});
  }

  // P1 x K x m0 -> P1 x K x m0 x 1.
  auto addUnitK0 = [&](Value packed) -> Value {
    auto type = cast<RankedTensorType>(packed.getType());
    SmallVector<int64_t> shape(type.getShape());
    shape.push_back(1);
    return tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get(shape, type.getElementType()), packed,
        SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
  };

  x = padWithZeros(b, loc, x, padding.low, padding.high);
  if (g.rows == ConvRows::PaddedLines) {
    // Loops: n, out[0..s-2], line tile, c, kernel..., i.
    int64_t numLoops = 2 * s + 3;
    int64_t cLoop = s + 1, iLoop = 2 * s + 2;
    SmallVector<AffineExpr> exprs = {dim(0), dim(cLoop)};
    for (int64_t t = 0; t < s; ++t) {
      AffineExpr o = t + 1 < s ? dim(1 + t) : dim(s) * m0 + dim(iLoop);
      exprs.push_back(o * g.strides[t] + dim(cLoop + 1 + t) * g.dilations[t]);
    }
    SmallVector<int64_t> shape = {g.batch};
    llvm::append_range(shape, ArrayRef<int64_t>(g.out).drop_back());
    shape.push_back(g.lineTiles);
    shape.push_back(g.channels);
    llvm::append_range(shape, g.kernel);
    shape.push_back(m0);
    Value packed =
        buildCopy(b, loc, x, AffineMap::get(numLoops, 0, exprs, ctx), shape);
    return addUnitK0(collapseGroups(b, loc, packed, {s + 1, s + 1, 1}));
  }

  // Flat: row p = p1 * m0 + i is position (n, out...) in row-major order;
  // rows past the last position read the zeros of padded images.
  int64_t positions = g.shape.getPositions();
  // Loops: p1, c, kernel..., i.
  int64_t numLoops = s + 3;
  AffineExpr p = dim(0) * m0 + dim(s + 2);
  SmallVector<AffineExpr> exprs = {p.floorDiv(positions), dim(1)};
  int64_t stride = positions;
  for (int64_t t = 0; t < s; ++t) {
    stride /= g.out[t];
    AffineExpr o = p.floorDiv(stride) % g.out[t];
    exprs.push_back(o * g.strides[t] + dim(2 + t) * g.dilations[t]);
  }
  SmallVector<int64_t> shape = {g.rowTiles, g.channels};
  llvm::append_range(shape, g.kernel);
  shape.push_back(m0);
  Value packed =
      buildCopy(b, loc, x, AffineMap::get(numLoops, 0, exprs, ctx), shape);
  return addUnitK0(collapseGroups(b, loc, packed, {1, s + 1, 1}));
}

/// Replaces `conv` by one `linalg.generic` over its result's loops (n, m,
/// out...) that reads `source` through `sourceMap` and adds the bias (by
/// channel m) when `hasBias`: the epilogue of both GEMM forms of a
/// convolution.
void replaceConvWithEpilogue(OpBuilder &b, ConvOp conv, Value source,
                             AffineMap sourceMap, bool hasBias) {
  Location loc = conv.getLoc();
  MLIRContext *ctx = b.getContext();
  auto yType = cast<RankedTensorType>(conv.getType());
  int64_t rank = yType.getRank();
  SmallVector<Value> inputs = {source};
  SmallVector<AffineMap> maps = {sourceMap};
  if (hasBias) {
    inputs.push_back(conv.getBias());
    maps.push_back(AffineMap::get(rank, 0, {getAffineDimExpr(1, ctx)}, ctx));
  }
  maps.push_back(b.getMultiDimIdentityMap(rank));
  Value init =
      tensor::EmptyOp::create(b, loc, yType.getShape(), yType.getElementType());
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{yType}, inputs, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value result = args[0];
        if (hasBias)
          result = arith::AddFOp::create(nb, nloc, result, args[1]);
        linalg::YieldOp::create(nb, nloc, result);
      });
  conv.getResult().replaceAllUsesWith(generic.getResult(0));
  conv.erase();
}

/// The width of the column tiles with which rewritePointwiseConvolutionDirect
/// computes the pointwise convolution `conv` (ConvRows::Pointwise) for the
/// register tile `tile` (weight on the left), if it can: f32 input and
/// weight, output channels a multiple of m0, and positions a multiple of n0
/// or, failing that, of n0 / 2 (28x28 = 784 positions: 49 tiles of 16), so
/// that no tile is padded.
std::optional<int64_t> getDirectPointwiseColumns(ConvOp conv,
                                                 Value packedWeight,
                                                 ContractionTile tile) {
  auto xType =
      cast<RankedTensorType>(getStorageSource(conv.getInput()).getType());
  if (!xType.getElementType().isF32() ||
      (packedWeight && !cast<RankedTensorType>(packedWeight.getType())
                            .getElementType()
                            .isF32()) ||
      !getElementTypeOrSelf(getStorageSource(conv.getWeight()).getType())
           .isF32())
    return std::nullopt;
  return mlir::autopar::getDirectPointwiseColumns(getConvShape(conv), tile);
}

/// Replaces a pointwise convolution of one image (1x1 kernel, unit strides,
/// no padding; getDirectPointwiseColumns) by a `linalg.contract` that
/// reads the input X [C, positions] in place, viewed as
/// K x P1 x n0 x 1, and accumulates into the output itself, viewed as
/// M1 x m0 x P1 x n0 and initialized with the bias: loops (m1, p1, m0, n0, k,
/// k0), with the weight packed as the left operand of `linalg.mmt4d`
/// (M1 x K x m0 x 1). autopar-tile-contractions tiles and vectorizes it to
/// the same register tile as an mmt4d (marked `autopar.register_tile`); the
/// n0 positions of a tile are contiguous in X and in the output, so neither
/// the input's pack nor the accumulator's unpack (two transposes of the
/// activations) is needed.
void rewritePointwiseConvolutionDirect(const Contraction &c, Value packedWeight,
                                       ContractionTile tile) {
  auto conv = cast<ConvOp>(c.op);
  OpBuilder b(conv);
  Location loc = conv.getLoc();
  MLIRContext *ctx = b.getContext();
  auto yType = cast<RankedTensorType>(conv.getType());
  Type f32 = yType.getElementType();
  int64_t m0 = tile.m0, n0 = tile.n0;
  int64_t channelsOut = yType.getDimSize(1);
  Value input = getStorageSource(conv.getInput());
  auto xType = cast<RankedTensorType>(input.getType());
  int64_t channels = xType.getDimSize(1);
  int64_t positions = xType.getNumElements() / channels;
  int64_t m1 = channelsOut / m0, p1 = positions / n0;
  if (!packedWeight)
    packedWeight = packRhs(b, loc, getStorageSource(c.b), /*transposed=*/true,
                           getWeightTile(c, tile));

  // X [1, C, spatial...] as K x P1 x n0 x 1 (reshapes, no copy).
  SmallVector<ReassociationIndices> flatten = {{0, 1}, {}};
  for (int64_t i = 2; i < xType.getRank(); ++i)
    flatten[1].push_back(i);
  Value flat = tensor::CollapseShapeOp::create(b, loc, input, flatten);
  Value cols = tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get({channels, p1, n0, 1}, f32), flat,
      SmallVector<ReassociationIndices>{{0}, {1, 2, 3}});

  // The accumulator M1 x m0 x P1 x n0, the bias broadcast (or zeros).
  auto accType = RankedTensorType::get({m1, m0, p1, n0}, f32);
  Value accEmpty = tensor::EmptyOp::create(b, loc, accType.getShape(), f32);
  auto dim = [&](int64_t d) { return getAffineDimExpr(d, ctx); };
  Value acc;
  if (c.bias) {
    Value bias = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get({m1, m0}, f32), c.bias,
        SmallVector<ReassociationIndices>{{0, 1}});
    SmallVector<utils::IteratorType> iterators(4,
                                               utils::IteratorType::parallel);
    acc =
        linalg::GenericOp::create(
            b, loc, TypeRange{accType}, ValueRange{bias}, ValueRange{accEmpty},
            ArrayRef<AffineMap>{AffineMap::get(4, 0, {dim(0), dim(1)}, ctx),
                                b.getMultiDimIdentityMap(4)},
            iterators,
            [](OpBuilder &nb, Location nloc, ValueRange args) {
              linalg::YieldOp::create(nb, nloc, args[0]);
            })
            .getResult(0);
  } else {
    Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(f32));
    acc = linalg::FillOp::create(b, loc, ValueRange{zero}, ValueRange{accEmpty})
              .getResult(0);
  }

  // Loops (m1, p1, m0, n0, k, k0): the register tile's dimensions after the
  // tiled ones, so that its vectors have only leading unit dimensions.
  auto product = linalg::ContractOp::create(
      b, loc, TypeRange{accType}, ValueRange{packedWeight, cols},
      ValueRange{acc},
      b.getAffineMapArrayAttr(
          {AffineMap::get(6, 0, {dim(0), dim(4), dim(2), dim(5)}, ctx),
           AffineMap::get(6, 0, {dim(4), dim(1), dim(3), dim(5)}, ctx),
           AffineMap::get(6, 0, {dim(0), dim(2), dim(1), dim(3)}, ctx)}));
  product->setAttr(kRegisterTileAttrName, b.getDenseI64ArrayAttr({m0, n0, 1}));

  // M1 x m0 x P1 x n0 -> [1, M, spatial...]: the output, in place.
  Value matrix = collapseGroups(b, loc, product.getResult(0), {2, 2});
  SmallVector<ReassociationIndices> toOutput = {{0, 1}, {}};
  for (int64_t i = 2; i < yType.getRank(); ++i)
    toOutput[1].push_back(i);
  Value result = tensor::ExpandShapeOp::create(b, loc, yType, matrix, toOutput);
  conv.getResult().replaceAllUsesWith(result);
  conv.erase();
}

/// Replaces an ungrouped convolution by the product `W (M x K) * cols^T`:
/// the weight is the packed left operand (M1 x K x m0 x 1, packed at compile
/// time when it is a weight), the im2col matrix is packed as the right
/// operand (P1 x K x n0 x 1: tiles of n0 output positions), and the
/// accumulator M1 x P1 x m0 x n0 holds rows of n0 consecutive positions of
/// one channel. The epilogue is then a transpose that keeps those rows
/// (M1 x m0 x P1 x n0, vectorized along them), a reshape to the output's
/// channels x positions, and one elementwise generic that adds the bias and
/// moves the batch dimension first. A pointwise input is packed the same way
/// (a transpose keeping rows of positions); other inputs are gathered by the
/// copy of packConvInput.
void rewriteConvolutionWeightLhs(const Contraction &c, Value packedWeight,
                                 ContractionTile tile) {
  auto conv = cast<ConvOp>(c.op);
  OpBuilder b(conv);
  Location loc = conv.getLoc();
  MLIRContext *ctx = b.getContext();
  auto yType = cast<RankedTensorType>(conv.getType());
  Type f32 = yType.getElementType();
  int64_t rank = yType.getRank(), s = rank - 2;
  int64_t m0 = tile.m0, n0 = tile.n0;
  int64_t channelsOut = yType.getDimSize(1);
  // The positions take the right operand's tiles: packConvInput's "rows".
  ContractionTile columns = {n0, n0, tile.k0};
  Im2colGeometry g = getIm2colGeometry(conv, columns);

  if (g.rows == ConvRows::Pointwise)
    if (std::optional<int64_t> columns =
            getDirectPointwiseColumns(conv, packedWeight, tile))
      return rewritePointwiseConvolutionDirect(c, packedWeight,
                                               {tile.m0, *columns, tile.k0});

  Value packedCols;
  if (g.rows == ConvRows::Pointwise) {
    // X [C, positions] padded to P1 * n0, as P1 x C x n0 x 1.
    SmallVector<ReassociationIndices> reassociation = {{0, 1}, {}};
    for (int64_t i = 0; i < s; ++i)
      reassociation[1].push_back(2 + i);
    Value input = getStorageSource(conv.getInput());
    Type stored = cast<RankedTensorType>(input.getType()).getElementType();
    Value flat = tensor::CollapseShapeOp::create(b, loc, input, reassociation);
    int64_t positions = cast<RankedTensorType>(flat.getType()).getDimSize(1);
    flat = padWithZeros(b, loc, flat, {0, 0}, {0, g.rowTiles * n0 - positions});
    Value rows = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get({g.channels, g.rowTiles, n0}, stored),
        flat, SmallVector<ReassociationIndices>{{0}, {1, 2}});
    Value init =
        tensor::EmptyOp::create(b, loc, {g.rowTiles, g.channels, n0}, stored);
    Value transposed =
        linalg::TransposeOp::create(b, loc, rows, init, {1, 0, 2})
            .getResult()[0];
    packedCols = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get({g.rowTiles, g.channels, n0, 1}, stored),
        transposed, SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
  } else {
    packedCols = packConvInput(b, loc, conv, g, columns);
  }
  if (!packedWeight)
    packedWeight = packRhs(b, loc, getStorageSource(c.b), /*transposed=*/true,
                           getWeightTile(c, tile));
  Value acc = buildMmt4d(b, loc, packedWeight, packedCols);

  // M1 x P1 x m0 x n0 -> (M1 m0) x (P1 n0): channels x padded positions.
  auto accType = cast<RankedTensorType>(acc.getType());
  int64_t m1 = accType.getDimSize(0), p1 = accType.getDimSize(1);
  Value rowsInit = tensor::EmptyOp::create(b, loc, {m1, m0, p1, n0}, f32);
  Value rows = linalg::TransposeOp::create(b, loc, acc, rowsInit, {0, 2, 1, 3})
                   .getResult()[0];
  Value matrix = collapseGroups(b, loc, rows, {2, 2});

  // Channels x (n, out...), as in the output but with the batch second.
  SmallVector<int64_t> viewShape = {channelsOut, g.batch};
  llvm::append_range(viewShape, g.out);
  Value view;
  auto sliceTo = [&](Value source, ArrayRef<int64_t> sizes) {
    int64_t r = sizes.size();
    return tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get(sizes, f32), source, ValueRange{},
        ValueRange{}, ValueRange{},
        b.getDenseI64ArrayAttr(SmallVector<int64_t>(r, 0)),
        b.getDenseI64ArrayAttr(sizes),
        b.getDenseI64ArrayAttr(SmallVector<int64_t>(r, 1)));
  };
  if (g.rows == ConvRows::PaddedLines) {
    // Positions (n, out[0..s-2], line tile, i): expand, then drop the
    // padding of each line and of the channels.
    SmallVector<int64_t> padded = {m1 * m0, g.batch};
    llvm::append_range(padded, ArrayRef<int64_t>(g.out).drop_back());
    padded.push_back(g.lineTiles * n0);
    SmallVector<ReassociationIndices> reassociation = {{0}, {}};
    for (int64_t i = 1; i < static_cast<int64_t>(padded.size()); ++i)
      reassociation[1].push_back(i);
    Value expanded = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get(padded, f32), matrix, reassociation);
    view = sliceTo(expanded, viewShape);
  } else {
    int64_t positions = g.batch;
    for (int64_t size : g.out)
      positions *= size;
    Value sliced = sliceTo(matrix, {channelsOut, positions});
    SmallVector<ReassociationIndices> reassociation = {{0}, {}};
    for (int64_t i = 1; i < static_cast<int64_t>(viewShape.size()); ++i)
      reassociation[1].push_back(i);
    view = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get(viewShape, f32), sliced, reassociation);
  }

  // Loops n, m, out...: y = view[m, n, out...] (+ bias[m]).
  auto dim = [&](int64_t d) { return getAffineDimExpr(d, ctx); };
  SmallVector<AffineExpr> viewExprs = {dim(1), dim(0)};
  for (int64_t t = 0; t < s; ++t)
    viewExprs.push_back(dim(2 + t));
  replaceConvWithEpilogue(b, conv, view,
                          AffineMap::get(rank, 0, viewExprs, ctx),
                          static_cast<bool>(c.bias));
}

/// Replaces an ungrouped convolution by the im2col product
/// `cols (P x K) * W^T (K x M)`: the packed im2col matrix, `linalg.mmt4d`
/// with the packed weight, then one `linalg.generic` that reads the
/// accumulator tiles in NCHW... order and adds the bias (no unpack).
void rewriteConvolution(const Contraction &c, Value packedRhs,
                        ContractionTile tile) {
  auto conv = cast<ConvOp>(c.op);
  OpBuilder b(conv);
  Location loc = conv.getLoc();
  MLIRContext *ctx = b.getContext();
  auto yType = cast<RankedTensorType>(conv.getType());
  int64_t rank = yType.getRank(), s = rank - 2;
  Im2colGeometry g = getIm2colGeometry(conv, tile);

  Value packedLhs = packConvInput(b, loc, conv, g, tile);
  if (!packedRhs)
    packedRhs =
        packRhs(b, loc, getStorageSource(c.b), /*transposed=*/true, tile);
  Value acc = buildMmt4d(b, loc, packedLhs, packedRhs);

  // Loops: n, m, out...; the accumulator is [row tiles, N1, m0, n0].
  auto dim = [&](int64_t d) { return getAffineDimExpr(d, ctx); };
  AffineExpr rowTile, rowInTile;
  if (g.rows == ConvRows::PaddedLines) {
    AffineExpr line = dim(0);
    for (int64_t t = 0; t + 1 < s; ++t)
      line = line * g.out[t] + dim(2 + t);
    rowTile = line * g.lineTiles + dim(rank - 1).floorDiv(tile.m0);
    rowInTile = dim(rank - 1) % tile.m0;
  } else {
    AffineExpr p = dim(0);
    for (int64_t t = 0; t < s; ++t)
      p = p * g.out[t] + dim(2 + t);
    rowTile = p.floorDiv(tile.m0);
    rowInTile = p % tile.m0;
  }
  replaceConvWithEpilogue(b, conv, acc,
                          AffineMap::get(rank, 0,
                                         {rowTile, dim(1).floorDiv(tile.n0),
                                          rowInTile, dim(1) % tile.n0},
                                         ctx),
                          static_cast<bool>(c.bias));
}

/// The Winograd form of `conv` when it can take it (isWinogradCandidate) and
/// it pays (getWinogradForm, autopar/Analysis/ConvTiling.h).
std::optional<WinogradGeometry>
isWinogradConvolution(ConvOp conv, bool weightIsLhs, ContractionTile tile) {
  if (!isWinogradCandidate(conv))
    return std::nullopt;
  return getWinogradForm(getConvShape(conv), weightIsLhs, tile);
}

/// The type of a weight transformed and packed for the Winograd form
/// (getWinogradWeightShape, packWeightForWinograd).
RankedTensorType getWinogradWeightType(RankedTensorType weightType,
                                       int64_t channelTile) {
  return RankedTensorType::get(getWinogradWeightShape(weightType.getDimSize(0),
                                                      weightType.getDimSize(1),
                                                      channelTile),
                               weightType.getElementType());
}

/// Replaces `conv` by its Winograd form F(2x2, 3x3) (Lavin and Gray),
/// `Y = A^T [(G g G^T) . (B^T d B)] A` per 4 x 4 input tile d and 2 x 2
/// output tile:
/// - the input transform: one `linalg.generic` reads the 16 stride-2 views
///   of the zero-padded input (one per position of the 4 x 4 tile) and
///   writes the 16 taps V_t = (B^T d B)_t, each already in the packed layout
///   of an mmt4d operand (T1 x C x P0 x 1, tiles of P0 positions);
/// - 16 `linalg.mmt4d`s of the taps of the transformed weight
///   (`packedWeight`, 16 x M1 x C x Q0 x 1, written by the driver) and V_t;
/// - the output transform: one `linalg.generic` reads the 16 accumulators
///   and writes the four outputs (i, j) of each tile, Y_ij = (A^T M A)_ij;
/// - one `linalg.generic` per output row parity interleaves the four into
///   NCHW and adds the bias, on the grid of whole 2 x 2 tiles (an odd output
///   is then copied out of it).
void rewriteWinogradConvolution(const Contraction &c, Value packedWeight) {
  const WinogradGeometry &g = *c.winograd;
  auto conv = cast<ConvOp>(c.op);
  OpBuilder b(conv);
  Location loc = conv.getLoc();
  MLIRContext *ctx = b.getContext();
  Type f32 = b.getF32Type();
  auto dim = [&](int64_t d) { return getAffineDimExpr(d, ctx); };
  auto map = [&](int64_t numDims, ArrayRef<int64_t> dims) {
    SmallVector<AffineExpr> exprs;
    for (int64_t d : dims)
      exprs.push_back(dim(d));
    return AffineMap::get(numDims, 0, exprs, ctx);
  };
  auto parallel = [](int64_t n) {
    return SmallVector<utils::IteratorType>(n, utils::IteratorType::parallel);
  };
  int64_t n = g.batch, ch = g.channels, lines = g.linesPerTile,
          blocks = g.blocksPerLine, width = g.lineWidth;
  int64_t lineGroups = g.paddedTilesH / lines;
  int64_t p0 = g.positionTile, q0 = g.channelTile;
  int64_t m1 = ceilDiv(g.channelsOut, q0), t1 = g.getRowTiles();
  int64_t gridW = blocks * width;

  // The input, zero-padded to the 4 x 4 tiles of the padded grid (2 x 2
  // outputs each, overlapping by 2).
  Value x = conv.getInput();
  auto xType = cast<RankedTensorType>(x.getType());
  int64_t rows = 2 * g.paddedTilesH + 2, cols = 2 * gridW + 2;
  x = padWithZeros(b, loc, x, {0, 0, g.padTop, g.padLeft},
                   {0, 0, rows - xType.getDimSize(2) - g.padTop,
                    cols - xType.getDimSize(3) - g.padLeft});

  // The even and odd columns apart (Xd [N, C, rows, 2, cols / 2], one copy
  // whose innermost loop reads at stride 2: LLVM's loop vectorizer loads
  // whole vectors and shuffles them), so that the views of the tiles'
  // columns 2 tw + s are contiguous: Xd[.., s % 2, tw + s / 2].
  Value deinterleaved = buildCopy(
      b, loc, x,
      AffineMap::get(5, 0, {dim(0), dim(1), dim(2), dim(4) * 2 + dim(3)}, ctx),
      {n, ch, rows, 2, cols / 2});

  // Input transform. Loops (n, line group, block, c, line, i): tile
  // (line group * lines + line, block * width + i).
  auto viewType = RankedTensorType::get({n, ch, g.paddedTilesH, gridW}, f32);
  auto gridType =
      RankedTensorType::get({n, ch, lineGroups, lines, blocks, width}, f32);
  SmallVector<Value> views;
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t s = 0; s < 4; ++s) {
      Value view = tensor::ExtractSliceOp::create(
          b, loc, viewType, deinterleaved, ValueRange{}, ValueRange{},
          ValueRange{}, b.getDenseI64ArrayAttr({0, 0, r, s % 2, s / 2}),
          b.getDenseI64ArrayAttr({n, ch, g.paddedTilesH, 1, gridW}),
          b.getDenseI64ArrayAttr({1, 1, 2, 1, 1}));
      views.push_back(tensor::ExpandShapeOp::create(
          b, loc, gridType, view,
          SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}, {4, 5}}));
    }
  SmallVector<int64_t> tapShape = {n, lineGroups, blocks, ch, lines, width};
  SmallVector<Value> tapInits;
  for (int64_t t = 0; t < kWinogradTaps; ++t)
    tapInits.push_back(tensor::EmptyOp::create(b, loc, tapShape, f32));
  SmallVector<AffineMap> inputMaps(views.size(), map(6, {0, 3, 1, 4, 2, 5}));
  inputMaps.append(kWinogradTaps, b.getMultiDimIdentityMap(6));
  auto inputTransform = linalg::GenericOp::create(
      b, loc, ValueRange(tapInits).getTypes(), views, tapInits, inputMaps,
      parallel(6), [&](OpBuilder &nb, Location nl, ValueRange args) {
        WinogradArith fp{nb, nl};
        auto add = [&](Value l, Value r) { return fp.add(l, r); };
        auto sub = [&](Value l, Value r) { return fp.sub(l, r); };
        // B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], rows then columns.
        auto transform = [&](Value d0, Value d1, Value d2, Value d3) {
          return std::array<Value, 4>{sub(d0, d2), add(d1, d2), sub(d2, d1),
                                      sub(d1, d3)};
        };
        std::array<std::array<Value, 4>, 4> columns; // [s][a]
        for (int64_t s = 0; s < 4; ++s)
          columns[s] =
              transform(args[s], args[4 + s], args[8 + s], args[12 + s]);
        SmallVector<Value> taps(kWinogradTaps);
        for (int64_t a = 0; a < 4; ++a) {
          std::array<Value, 4> row = transform(columns[0][a], columns[1][a],
                                               columns[2][a], columns[3][a]);
          for (int64_t bb = 0; bb < 4; ++bb)
            taps[a * 4 + bb] = row[bb];
        }
        linalg::YieldOp::create(nb, nl, taps);
      });

  // The 16 products, M1 x T1 x Q0 x P0 (weight on the left) or
  // T1 x M1 x P0 x Q0.
  auto weightType = cast<RankedTensorType>(packedWeight.getType());
  auto tapWeightType = RankedTensorType::get(weightType.getShape().drop_front(),
                                             weightType.getElementType());
  SmallVector<Value> accs;
  for (int64_t t = 0; t < kWinogradTaps; ++t) {
    Value v = collapseGroups(b, loc, inputTransform.getResult(t), {3, 1, 2});
    v = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get({t1, ch, p0, 1}, f32), v,
        SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
    SmallVector<OpFoldResult> offsets(5, b.getIndexAttr(0)),
        strides(5, b.getIndexAttr(1));
    offsets[0] = b.getIndexAttr(t);
    SmallVector<OpFoldResult> sizes =
        getAsIndexOpFoldResult(ctx, weightType.getShape());
    sizes[0] = b.getIndexAttr(1);
    Value u = tensor::ExtractSliceOp::create(
        b, loc, tapWeightType, packedWeight, offsets, sizes, strides);
    Value acc =
        g.weightIsLhs ? buildMmt4d(b, loc, u, v) : buildMmt4d(b, loc, v, u);
    // Expanded so that the output transform's loops need no division.
    if (g.weightIsLhs)
      acc = tensor::ExpandShapeOp::create(
          b, loc,
          RankedTensorType::get({m1, n, lineGroups, blocks, q0, lines, width},
                                f32),
          acc, SmallVector<ReassociationIndices>{{0}, {1, 2, 3}, {4}, {5, 6}});
    else
      acc = tensor::ExpandShapeOp::create(
          b, loc,
          RankedTensorType::get({n, lineGroups, blocks, m1, lines, width, q0},
                                f32),
          acc, SmallVector<ReassociationIndices>{{0, 1, 2}, {3}, {4, 5}, {6}});
    accs.push_back(acc);
  }

  // Output transform. Loops (n, m1, q, line group, line, block, i); the
  // four outputs Y_ij of a tile, each N x M1 Q0 x padded grid.
  SmallVector<int64_t> outShape = {n, m1, q0, lineGroups, lines, blocks, width};
  SmallVector<Value> outInits;
  for (int64_t t = 0; t < 4; ++t)
    outInits.push_back(tensor::EmptyOp::create(b, loc, outShape, f32));
  SmallVector<AffineMap> outMaps(kWinogradTaps,
                                 g.weightIsLhs ? map(7, {1, 0, 3, 5, 2, 4, 6})
                                               : map(7, {0, 3, 5, 1, 4, 6, 2}));
  outMaps.append(4, b.getMultiDimIdentityMap(7));
  auto outputTransform = linalg::GenericOp::create(
      b, loc, ValueRange(outInits).getTypes(), accs, outInits, outMaps,
      parallel(7), [&](OpBuilder &nb, Location nl, ValueRange args) {
        WinogradArith fp{nb, nl};
        auto add = [&](Value l, Value r) { return fp.add(l, r); };
        auto sub = [&](Value l, Value r) { return fp.sub(l, r); };
        // A^T = [1 1 1 0; 0 1 -1 -1], along the columns then the rows.
        auto transform = [&](Value m0, Value m1, Value m2, Value m3) {
          return std::array<Value, 2>{add(add(m0, m1), m2),
                                      sub(sub(m1, m2), m3)};
        };
        std::array<std::array<Value, 2>, 4> rowsOut; // [a][j]
        for (int64_t a = 0; a < 4; ++a)
          rowsOut[a] = transform(args[a * 4], args[a * 4 + 1], args[a * 4 + 2],
                                 args[a * 4 + 3]);
        SmallVector<Value> outs(4);
        for (int64_t j = 0; j < 2; ++j) {
          std::array<Value, 2> column = transform(rowsOut[0][j], rowsOut[1][j],
                                                  rowsOut[2][j], rowsOut[3][j]);
          outs[j] = column[0];
          outs[2 + j] = column[1];
        }
        linalg::YieldOp::create(nb, nl, outs);
      });

  // Y[n, m, 2 th + i, 2 tw + j] = Y_ij[n, m, th, tw] (+ bias[m]), on the
  // grid of whole 2 x 2 tiles: an odd output is computed one row or column
  // larger and copied out of it (ConvBuffers::evenOutput), so that every
  // row is written by the same vector loop.
  auto yType = cast<RankedTensorType>(conv.getType());
  int64_t m = g.channelsOut;
  int64_t th = g.tilesH, tw = g.tilesW, evenW = 2 * tw;
  SmallVector<Value> inputs;
  for (int64_t t = 0; t < 4; ++t) {
    Value out =
        collapseGroups(b, loc, outputTransform.getResult(t), {1, 2, 2, 2});
    SmallVector<int64_t> sizes = {n, m, th, tw};
    if (sizes != cast<RankedTensorType>(out.getType()).getShape())
      out = tensor::ExtractSliceOp::create(
          b, loc, RankedTensorType::get(sizes, f32), out, ValueRange{},
          ValueRange{}, ValueRange{}, b.getDenseI64ArrayAttr({0, 0, 0, 0}),
          b.getDenseI64ArrayAttr(sizes), b.getDenseI64ArrayAttr({1, 1, 1, 1}));
    inputs.push_back(out);
  }
  // The selection of Y_ij by the parity of the output column: a body whose
  // innermost loop `j` LLVM unrolls (two iterations), leaving one vector
  // loop that stores the two outputs of each tile interleaved.
  auto body = [&](OpBuilder &nb, Location nl, ValueRange args) {
    Value index = linalg::IndexOp::create(nb, nl, 4);
    Value zero = arith::ConstantIndexOp::create(nb, nl, 0);
    Value colEven =
        arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::eq, index, zero);
    Value result = arith::SelectOp::create(nb, nl, colEven, args[0], args[1]);
    if (c.bias)
      result = arith::AddFOp::create(nb, nl, result, args[2]);
    linalg::YieldOp::create(nb, nl, result);
  };

  // Y as N x M x TH x 2 x 2TW; its rows of parity i (a strided view of
  // whole rows) are written in place by one generic each, loops
  // (n, m, th, tw, j) over them viewed as N x M x TH x TW x 2.
  auto halvesType = RankedTensorType::get({n, m, th, 2, evenW}, f32);
  auto rowsType = RankedTensorType::get({n, m, th, evenW}, f32);
  auto pairsType = RankedTensorType::get({n, m, th, tw, 2}, f32);
  Value y = tensor::EmptyOp::create(b, loc, halvesType.getShape(), f32);
  SmallVector<OpFoldResult> sizes =
      getAsIndexOpFoldResult(ctx, {n, m, th, 1, evenW});
  SmallVector<OpFoldResult> strides(5, b.getIndexAttr(1));
  for (int64_t i = 0; i < 2; ++i) {
    SmallVector<OpFoldResult> offsets(5, b.getIndexAttr(0));
    offsets[3] = b.getIndexAttr(i);
    Value rows = tensor::ExtractSliceOp::create(b, loc, rowsType, y, offsets,
                                                sizes, strides);
    Value pairs = tensor::ExpandShapeOp::create(
        b, loc, pairsType, rows,
        SmallVector<ReassociationIndices>{{0}, {1}, {2}, {3, 4}});
    SmallVector<Value> rowInputs = {inputs[2 * i], inputs[2 * i + 1]};
    SmallVector<AffineMap> rowMaps(2, map(5, {0, 1, 2, 3}));
    if (c.bias) {
      rowInputs.push_back(c.bias);
      rowMaps.push_back(map(5, {1}));
    }
    rowMaps.push_back(b.getMultiDimIdentityMap(5));
    auto row = linalg::GenericOp::create(b, loc, TypeRange{pairsType},
                                         rowInputs, ValueRange{pairs}, rowMaps,
                                         parallel(5), body);
    Value written = tensor::CollapseShapeOp::create(
        b, loc, rowsType, row.getResult(0),
        SmallVector<ReassociationIndices>{{0}, {1}, {2}, {3, 4}});
    y = tensor::InsertSliceOp::create(b, loc, written, y, offsets, sizes,
                                      strides);
  }
  auto evenType = RankedTensorType::get({n, m, 2 * th, evenW}, f32);
  Value result = tensor::CollapseShapeOp::create(
      b, loc, evenType, y,
      SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}, {4}});
  if (evenType != yType) {
    Value view = tensor::ExtractSliceOp::create(
        b, loc, yType, result, ValueRange{}, ValueRange{}, ValueRange{},
        b.getDenseI64ArrayAttr({0, 0, 0, 0}),
        b.getDenseI64ArrayAttr(yType.getShape()),
        b.getDenseI64ArrayAttr({1, 1, 1, 1}));
    // A linalg.copy, which the canonicalizer keeps (an identity generic
    // would fold away, leaving the result a view of the larger buffer).
    Value init = tensor::EmptyOp::create(b, loc, yType.getShape(), f32);
    result = linalg::CopyOp::create(b, loc, ValueRange{view}, ValueRange{init})
                 .getResult(0);
  }
  conv.getResult().replaceAllUsesWith(result);
  conv.erase();
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
/// `linalg.batch_mmt4d` and an unpack; both packed operands in bf16 with
/// `dotBf16` (the dot-product tile).
void rewriteBatchedMatmul(MatMulOp op, ContractionTile tile, bool dotBf16) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto resultType = cast<RankedTensorType>(op.getType());
  Type f32 = resultType.getElementType();
  Value a = collapseBatch(b, loc, getStorageSource(op.getA()));
  Value rhs = collapseBatch(b, loc, getStorageSource(op.getB()));
  auto aType = cast<RankedTensorType>(a.getType());
  auto bType = cast<RankedTensorType>(rhs.getType());
  int64_t batch = aType.getDimSize(0), m = aType.getDimSize(1),
          k = aType.getDimSize(2), n = bType.getDimSize(2);
  int64_t m1 = ceilDiv(m, tile.m0), n1 = ceilDiv(n, tile.n0),
          k1 = ceilDiv(k, tile.k0);
  Value packedLhs = createPack(b, loc, a, {batch, m1, k1, tile.m0, tile.k0},
                               {1, 2}, {tile.m0, tile.k0}, {});
  Value packedRhs = createPack(b, loc, rhs, {batch, n1, k1, tile.n0, tile.k0},
                               {2, 1}, {tile.n0, tile.k0}, {0, 2, 1});
  std::tie(packedLhs, packedRhs) =
      convertPackedOperands(b, loc, packedLhs, packedRhs, dotBf16);
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(f32));
  Value accEmpty =
      tensor::EmptyOp::create(b, loc, {batch, m1, n1, tile.m0, tile.n0}, f32);
  Value acc =
      linalg::FillOp::create(b, loc, ValueRange{zero}, ValueRange{accEmpty})
          .getResult(0);
  acc = linalg::BatchMmt4DOp::create(b, loc, TypeRange{acc.getType()},
                                     ValueRange{packedLhs, packedRhs},
                                     ValueRange{acc})
            .getResult(0);
  Value out = tensor::EmptyOp::create(b, loc, {batch, m, n}, f32);
  Value result = linalg::UnPackOp::create(
                     b, loc, acc, out, {1, 2},
                     getAsIndexOpFoldResult(b.getContext(), {tile.m0, tile.n0}))
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

/// The uses of `weight`'s value by ops other than conversions to f32: those
/// of the conversion's result when the weight is stored in bf16 or f16
/// (autopar-lower-precision).
SmallVector<OpOperand *> getContractionUses(WeightOp weight) {
  SmallVector<OpOperand *> uses;
  for (OpOperand &use : weight.getResult().getUses()) {
    auto cast = dyn_cast<CastOp>(use.getOwner());
    if (cast && getStorageSource(cast.getResult()) == weight.getResult()) {
      for (OpOperand &castUse : cast.getResult().getUses())
        uses.push_back(&castUse);
      continue;
    }
    uses.push_back(&use);
  }
  return uses;
}

struct PackContractionsPass
    : public autopar::impl::PackContractionsPassBase<PackContractionsPass> {
  using Base::Base;

  void runOnOperation() override {
    std::optional<CpuIsa> target = parseCpuIsa(isa);
    if (!target) {
      getOperation().emitError()
          << "autopar-pack-contractions: unknown isa '" << isa << "' (expected "
          << getCpuIsaNames() << ")";
      return signalPassFailure();
    }
    ContractionTile tile = getContractionTile(*target);
    // bf16 matmuls and gemms take the dot-product tile where the ISA has
    // one (convolutions keep the f32 tile: their im2col copy writes k0 = 1).
    std::optional<ContractionTile> dotTile = getBf16DotTile(*target);
    auto tileOf = [&](const Contraction &c) {
      return c.dotBf16 ? *dotTile : tile;
    };

    llvm::MapVector<Operation *, Contraction> contractions;
    SmallVector<MatMulOp> batched;
    getOperation().walk([&](Operation *op) {
      std::optional<Contraction> c = matchContraction(op);
      // The packed im2col copy writes tiles of one column (k0 = 1, as every
      // ISA's register tile has).
      if (c && (!llvm::isa<ConvOp>(op) || tile.k0 == 1)) {
        // A convolution puts its weight on the left when its output
        // channels fill the m0-row tiles (at most a sixteenth of padding).
        if (auto conv = dyn_cast<ConvOp>(op)) {
          c->weightIsLhs = isWeightLhsConvolution(getConvShape(conv), tile);
          // The Winograd form needs the weight transformed by the driver.
          if (winograd && packWeights)
            c->winograd = isWinogradConvolution(conv, c->weightIsLhs, tile);
        } else {
          c->dotBf16 = dotTile && isBf16Contraction(c->a, c->b);
        }
        contractions.insert({op, *c});
      } else if (auto matmul = dyn_cast<MatMulOp>(op);
                 matmul && isBatchedMatmul(matmul))
        batched.push_back(matmul);
    });
    for (MatMulOp matmul : batched) {
      bool dot = dotTile && isBf16Contraction(matmul.getA(), matmul.getB());
      rewriteBatchedMatmul(matmul, dot ? *dotTile : tile, dot);
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
        std::optional<bool> transposed, lhs, dot, wino;
        bool packable = true;
        for (WeightOp op : ops)
          for (OpOperand *use : getContractionUses(op)) {
            auto it = contractions.find(use->getOwner());
            if (it == contractions.end() || use->getOperandNumber() != 1) {
              packable = false;
              break;
            }
            const Contraction &c = it->second;
            bool cLhs = c.winograd ? c.winograd->weightIsLhs : c.weightIsLhs;
            if ((transposed && *transposed != c.transposedB) ||
                (lhs && *lhs != cLhs) || (dot && *dot != c.dotBf16) ||
                (wino && *wino != c.winograd.has_value())) {
              packable = false;
              break;
            }
            transposed = c.transposedB;
            lhs = cLhs;
            dot = c.dotBf16;
            wino = c.winograd.has_value();
          }
        if (!packable || !transposed)
          continue;
        // Packed as a right operand with the tile of its side.
        ContractionTile weightTile =
            *lhs ? ContractionTile{tile.m0, tile.m0, tile.k0}
                 : (*dot ? *dotTile : tile);
        // Where the tiles do not divide the weight, its packed file holds
        // zero padding beyond the shard that the plan accounts for: allowed
        // up to a sixteenth more (an LM head of 50257 columns, 1000
        // classes), otherwise the weight is packed per call.
        auto [k, n] = getRhsKN(cast<RankedTensorType>(ops.front().getType()),
                               *transposed);
        if (!isCompileTimePackingPaddingAllowed(k, n, weightTile))
          continue;
        for (WeightOp op : ops) {
          auto type = cast<RankedTensorType>(op.getType());
          OpBuilder b(op);
          auto packed = WeightOp::create(
              b, op.getLoc(),
              *wino ? getWinogradWeightType(type, weightTile.n0)
                    : getPackedRhsType(type, *transposed, weightTile),
              op.getName());
          packed->setDiscardableAttrs(op->getDiscardableAttrDictionary());
          if (*wino)
            packed->setAttr(kWinogradAttrName, b.getUnitAttr());
          packed->setAttr(
              kPackedTilesAttrName,
              b.getDenseI64ArrayAttr({weightTile.n0, weightTile.k0}));
          packed->setAttr(kPackedSourceTypeAttrName, TypeAttr::get(type));
          if (*transposed)
            packed->setAttr(kPackedTransposedAttrName, b.getUnitAttr());
          packedWeights[name] = packed.getResult();
          ++numPackedWeights;
          for (OpOperand *use : getContractionUses(op))
            contractions.find(use->getOwner())->second.b = packed.getResult();
        }
      }
    }

    for (auto &[op, c] : contractions) {
      Value packedRhs;
      if (auto weight = c.b.getDefiningOp<WeightOp>())
        if (weight->hasAttr(kPackedTilesAttrName))
          packedRhs = c.b;
      // A Winograd convolution whose weight could not be transformed
      // (another use of it) keeps the im2col product.
      if (c.winograd && (!packedRhs || !packedRhs.getDefiningOp()->hasAttr(
                                           kWinogradAttrName)))
        c.winograd.reset();
      if (c.winograd) {
        if (c.bias)
          c.bias = op->getOperand(2);
        rewriteWinogradConvolution(c, packedRhs);
        ++numContractions;
        ++numWinograd;
        continue;
      }
      // Operands as they are now: one may be the result of a contraction
      // rewritten before (a chain of matmuls), replaced since matching.
      c.a = op->getOperand(0);
      if (!packedRhs)
        c.b = op->getOperand(1);
      if (c.bias)
        c.bias = op->getOperand(2);
      if (llvm::isa<ConvOp>(op))
        c.weightIsLhs ? rewriteConvolutionWeightLhs(c, packedRhs, tile)
                      : rewriteConvolution(c, packedRhs, tile);
      else
        rewriteContraction(c, packedRhs, tileOf(c));
      ++numContractions;
    }
    // The unpacked weight ops have no uses left (but conversions to f32 of
    // lower-precision weights, dead now).
    getOperation().walk([&](CastOp op) {
      if (op.getResult().use_empty() && op.getInput().getDefiningOp<WeightOp>())
        op.erase();
    });
    getOperation().walk([&](WeightOp op) {
      if (op.getResult().use_empty() && !op->hasAttr(kPackedTilesAttrName) &&
          packedWeights.count(op.getName()))
        op.erase();
    });
  }
};

} // namespace
