//===- PackedWeights.h - weights packed at compile time ----------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The contract between `autopar-pack-contractions{pack-weights=true}`, which
// gives a contraction's weight operand the blocked layout of `linalg.mmt4d`'s
// right-hand side, and the compiler driver, which writes each device's weight
// file in that layout.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_TRANSFORMS_LOWERING_PACKEDWEIGHTS_H
#define AUTOPAR_TRANSFORMS_LOWERING_PACKEDWEIGHTS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstddef>
#include <cstdint>

namespace mlir::autopar {

/// `autopar.weight` attribute: the inner tiles `[n0, k0]` of a packed weight
/// (its result type is then `tensor<N1 x K1 x n0 x k0>`, N1 = ceil(N / n0),
/// K1 = ceil(K / k0)).
constexpr llvm::StringLiteral kPackedTilesAttrName = "autopar.packed_tiles";
/// `autopar.weight` attribute: the local (unpacked) type of the weight, the
/// shard that the driver cuts before packing it.
constexpr llvm::StringLiteral kPackedSourceTypeAttrName =
    "autopar.packed_source_type";
/// `autopar.weight` unit attribute: the unpacked weight is stored N x K (the
/// right operand of a Gemm with `trans_b`), not K x N.
constexpr llvm::StringLiteral kPackedTransposedAttrName =
    "autopar.packed_transposed";

/// `autopar.weight` unit attribute: a convolution weight [M, C, 3, 3]
/// transformed for the Winograd form F(2x2, 3x3) and packed: its type is
/// `tensor<16 x M1 x C x n0 x 1>` (see packWeightForWinograd), with
/// `autopar.packed_tiles = [n0, 1]`.
constexpr llvm::StringLiteral kWinogradAttrName = "autopar.winograd";

/// `linalg.contract` attribute (`array<i64: m0, n0, k0>`): a contraction that
/// `autopar-pack-contractions` built with the loops (M1, N1, m0, n0, K1, k0)
/// and the accumulator M1 x m0 x N1 x n0 (a pointwise convolution
/// reading its input and writing its output in place, see
/// rewritePointwiseConvolutionDirect), for `autopar-tile-contractions` to
/// tile and vectorize to the register tile m0 x n0 x k0 like an mmt4d.
constexpr llvm::StringLiteral kRegisterTileAttrName = "autopar.register_tile";

/// Packs the row-major weight `src` (K x N, or N x K when `transposed`) of
/// `elementSize`-byte elements into `dst`, the row-major
/// [N1][K1][n0][k0] layout with zeros where N or K do not divide: element
/// (n1, k1, i, j) is B[k1 * k0 + j][n1 * n0 + i]. `dst` holds
/// N1 * K1 * n0 * k0 elements.
void packWeightForMmt4d(const char *src, int64_t k, int64_t n, bool transposed,
                        int64_t n0, int64_t k0, size_t elementSize, char *dst);

/// Transforms the f32 convolution weight `src` [m, c, 3, 3] (row-major) for
/// the Winograd form F(2x2, 3x3), U = G g G^T per (output, input) channel
/// pair, and packs it into `dst`: 16 taps (a * 4 + b for row a and column b
/// of U), each the M x C matrix of that tap packed as a transposed right
/// operand of `linalg.mmt4d` with tiles n0 x 1 (packWeightForMmt4d).
/// `dst` holds 16 * ceil(m / n0) * n0 * c floats.
void packWeightForWinograd(const float *src, int64_t m, int64_t c, int64_t n0,
                           float *dst);

} // namespace mlir::autopar

#endif // AUTOPAR_TRANSFORMS_LOWERING_PACKEDWEIGHTS_H
