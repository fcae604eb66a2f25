//===- DataTiling.cpp - what the data tiling of a product holds -----------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "autopar/Analysis/DataTiling.h"

#include "autopar/Dialect/Autopar/IR/Autopar.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <optional>

using namespace mlir;
using namespace mlir::autopar;

static bool isStaticF32(Value value, int64_t minRank, int64_t maxRank) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && type.hasStaticShape() && type.getElementType().isF32() &&
         type.getRank() >= minRank && type.getRank() <= maxRank;
}

bool mlir::autopar::isDataTiledProduct(Operation *op) {
  if (auto matmul = dyn_cast<MatMulOp>(op))
    return isStaticF32(matmul.getA(), 2, 8) &&
           isStaticF32(matmul.getB(), 2, 2) &&
           isStaticF32(matmul.getResult(), 2, 8);
  if (auto gemm = dyn_cast<GemmOp>(op))
    return !gemm.getTransA() && isStaticF32(gemm.getA(), 2, 2) &&
           isStaticF32(gemm.getB(), 2, 2) &&
           isStaticF32(gemm.getResult(), 2, 2) &&
           (!gemm.getC() || isStaticF32(gemm.getC(), 0, 2));
  return false;
}

bool mlir::autopar::isWinogradShape(int64_t channels, int64_t channelsOut,
                                    int64_t group, ArrayRef<int64_t> kernel,
                                    ArrayRef<int64_t> strides,
                                    ArrayRef<int64_t> dilations) {
  auto ones = [](ArrayRef<int64_t> values) {
    return llvm::all_of(values, [](int64_t v) { return v == 1; });
  };
  return kernel.size() == 2 && kernel[0] == 3 && kernel[1] == 3 && group == 1 &&
         ones(strides) && ones(dilations) && channels >= kMinWinogradChannels &&
         channelsOut >= kMinWinogradChannels;
}

double mlir::autopar::getWinogradWorkRatio(int64_t outH, int64_t outW) {
  if (outH <= 0 || outW <= 0)
    return 1;
  double tiles = double((outH + 1) / 2) * double((outW + 1) / 2);
  return 16 * tiles / (9 * double(outH) * double(outW));
}

bool mlir::autopar::isTransposedRhs(Operation *op) {
  auto gemm = dyn_cast<GemmOp>(op);
  return gemm && gemm.getTransB();
}

std::array<int64_t, 4> mlir::autopar::getPackedShape(int64_t rows, int64_t cols,
                                                     int64_t rowTile,
                                                     int64_t colTile) {
  return {static_cast<int64_t>(llvm::divideCeil(rows, rowTile)),
          static_cast<int64_t>(llvm::divideCeil(cols, colTile)), rowTile,
          colTile};
}

bool mlir::autopar::isCompileTimePackingPaddingAllowed(int64_t k, int64_t n,
                                                       ContractionTile tile) {
  std::array<int64_t, 4> packed = getPackedShape(n, k, tile.n0, tile.k0);
  int64_t padded = packed[0] * packed[1] * packed[2] * packed[3];
  return (padded - n * k) * 16 <= n * k;
}

bool mlir::autopar::isPackedAtCompileTime(Value weight, ContractionTile tile) {
  std::optional<bool> transposed;
  for (OpOperand &use : weight.getUses()) {
    Operation *user = use.getOwner();
    if (use.getOperandNumber() != 1 || !isDataTiledProduct(user) ||
        (transposed && *transposed != isTransposedRhs(user)))
      return false;
    transposed = isTransposedRhs(user);
  }
  if (!transposed)
    return false;
  auto type = cast<RankedTensorType>(weight.getType());
  int64_t k = type.getDimSize(*transposed ? 1 : 0);
  int64_t n = type.getDimSize(*transposed ? 0 : 1);
  return isCompileTimePackingPaddingAllowed(k, n, tile);
}

static int64_t getElements(std::array<int64_t, 4> shape) {
  return shape[0] * shape[1] * shape[2] * shape[3];
}

PackedProductBuffers mlir::autopar::getPackedProductBuffers(
    int64_t m, int64_t n, int64_t k, ContractionTile tile, int64_t elementBytes,
    bool extendLhs, bool rhsPackedAtCompileTime, bool epilogue) {
  constexpr int64_t f32Bytes = 4;
  PackedProductBuffers b;
  std::array<int64_t, 4> lhs = getPackedShape(m, k, tile.m0, tile.k0);
  b.lhs = getElements(lhs) * elementBytes;
  // linalg.pack with a padding value is lowered as a zero-padded copy of the
  // source, then the transpose into the tiles; without padding the
  // transpose reads the source in place.
  if (m % tile.m0 != 0 || k % tile.k0 != 0)
    b.lhsPadded = b.lhs;
  if (extendLhs)
    b.lhsExtended = getElements(lhs) * f32Bytes;
  std::array<int64_t, 4> rhs = getPackedShape(n, k, tile.n0, tile.k0);
  if (!rhsPackedAtCompileTime) {
    b.rhs = getElements(rhs) * elementBytes;
    if (n % tile.n0 != 0 || k % tile.k0 != 0)
      b.rhsPadded = b.rhs;
  }
  b.accumulator = lhs[0] * rhs[0] * tile.m0 * tile.n0 * f32Bytes;
  if (rhs[0] > 1)
    b.unpackCopy = b.accumulator;
  if (epilogue)
    b.beforeEpilogue = m * n * f32Bytes;
  return b;
}

int64_t PackedProductBuffers::getExtraBytes(int64_t resultBytes) const {
  // Packing A, packing B, then the mmt4d: no result buffer yet.
  int64_t packA = lhsPadded + lhs;
  int64_t packB = lhs + rhsPadded + rhs;
  int64_t multiply = lhs + lhsExtended + rhs + accumulator;
  int64_t beforeResult = std::max({packA, packB, multiply}) - resultBytes;
  // The unpack: the accumulator (and its moved copy) with the unpacked
  // product, which is the result unless an epilogue follows; the epilogue:
  // the unpacked product with the result.
  int64_t unpack = accumulator + unpackCopy +
                   (beforeEpilogue ? beforeEpilogue - resultBytes : 0);
  return std::max({beforeResult, unpack, beforeEpilogue, int64_t(0)});
}
