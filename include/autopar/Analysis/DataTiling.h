//===- DataTiling.h - what the data tiling of a product holds ---*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The rules of `autopar-pack-contractions` for matmuls and gemms, stated once
// for the pass and for the planner's memory model: which ops it data-tiles,
// when a weight is packed at compile time, the packed shapes, and the
// buffers a data-tiled product allocates per call (its packed operands, the
// zero-padded copies they are packed from, its accumulator and the copy that
// unpacks it).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_ANALYSIS_DATATILING_H
#define AUTOPAR_ANALYSIS_DATATILING_H

#include "autopar/Target/Target.h"

#include "mlir/IR/Operation.h"

#include <array>
#include <cstdint>

namespace mlir::autopar {

/// Whether `op` is a matmul or gemm that autopar-pack-contractions rewrites
/// into pack + mmt4d + unpack: an f32 `autopar.matmul` with static types
/// whose right operand is a matrix and whose left operand has rank 2 to 8,
/// or an f32 `autopar.gemm` without `trans_a` with static 2-D operands.
bool isDataTiledProduct(Operation *op);

/// Whether the right operand of the data-tiled product `op` is read
/// transposed (N x K, a gemm with `trans_b`).
bool isTransposedRhs(Operation *op);

/// Input channels and output channels from which a convolution takes the
/// Winograd form F(2x2, 3x3): its transforms cost about 16 (C + M) additions
/// per tile against the 20 C M multiply-adds it saves, and their loops
/// stream the activations.
constexpr int64_t kMinWinogradChannels = 32;

/// Whether a convolution of this shape may take the Winograd form
/// F(2x2, 3x3) (autopar-pack-contractions, which also needs its operands
/// stored in f32 and a weight it transforms at compile time): 2-d spatial
/// (`kernel` has two sizes), ungrouped, 3x3, unit strides, no dilation, and
/// at least kMinWinogradChannels input and output channels.
bool isWinogradShape(int64_t channels, int64_t channelsOut, int64_t group,
                     ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                     ArrayRef<int64_t> dilations);

/// The multiply-adds F(2x2, 3x3) does over those of the direct convolution
/// for an output plane of `outH x outW`: 16 per 2 x 2 tile of outputs
/// (the tiles padded to whole ones) against 9 per output; 4/9 on large
/// planes, 0.58 on 7 x 7.
double getWinogradWorkRatio(int64_t outH, int64_t outW);

/// `rows x cols` packed in tiles of `rowTile x colTile`: the shape
/// `ceil(rows / rowTile) x ceil(cols / colTile) x rowTile x colTile`.
std::array<int64_t, 4> getPackedShape(int64_t rows, int64_t cols,
                                      int64_t rowTile, int64_t colTile);

/// Whether a weight of K x N whose tiles are `tile` may take the packed type
/// at compile time: the zero padding of its tiles is at most a sixteenth of
/// the weight (otherwise it is packed per call).
bool isCompileTimePackingPaddingAllowed(int64_t k, int64_t n,
                                        ContractionTile tile);

/// Whether autopar-pack-contractions{pack-weights=true} gives the weight
/// `weight` its packed type at compile time when every use of it is a
/// matmul or gemm (convolutions are not looked at): every use is the right
/// operand of a data-tiled product, all of one orientation, and the padding
/// of its tiles is allowed. Its products then pack no right operand per
/// call.
bool isPackedAtCompileTime(Value weight, ContractionTile tile);

/// The buffers a data-tiled product `A (M x K) * B (K x N)` allocates per
/// call (bytes), in the order rewriteContraction (PackContractions.cpp)
/// creates them and the bufferization frees them.
struct PackedProductBuffers {
  /// A padded to whole tiles, when M or K does not divide (the pack writes
  /// it, then transposes it into the tiles); 0 otherwise.
  int64_t lhsPadded = 0;
  /// A packed, M1 x K1 x m0 x k0, in the stored element type.
  int64_t lhs = 0;
  /// A packed and extended to f32 (16-bit operands without a dot-product
  /// tile); 0 otherwise.
  int64_t lhsExtended = 0;
  /// B padded to whole tiles (when packed per call and a tile does not
  /// divide); 0 otherwise.
  int64_t rhsPadded = 0;
  /// B packed, N1 x K1 x n0 x k0, when it is packed per call; 0 for a weight
  /// packed at compile time.
  int64_t rhs = 0;
  /// The f32 accumulator M1 x N1 x m0 x n0.
  int64_t accumulator = 0;
  /// The accumulator moved to M1 x m0 x N1 x n0 by the unpack (N1 > 1).
  int64_t unpackCopy = 0;
  /// The unpacked f32 product, M x N, before a gemm's epilogue (alpha, bias)
  /// writes the result; 0 without an epilogue.
  int64_t beforeEpilogue = 0;

  /// The most bytes these buffers hold at once, beyond the product's
  /// operands and its result of `resultBytes`: while the operands are packed
  /// and multiplied the result is not allocated yet; the unpack holds the
  /// accumulator (and its copy) with the result.
  int64_t getExtraBytes(int64_t resultBytes) const;
};

/// The per-call buffers of a data-tiled product of M x K by K x N with
/// `tile`, operands stored with `elementBytes` per element (packed in that
/// type; extended to f32 after the pack when `extendLhs`); B packed per call
/// unless `rhsPackedAtCompileTime`. `epilogue`: a gemm with a bias or alpha.
PackedProductBuffers
getPackedProductBuffers(int64_t m, int64_t n, int64_t k, ContractionTile tile,
                        int64_t elementBytes, bool extendLhs,
                        bool rhsPackedAtCompileTime, bool epilogue);

} // namespace mlir::autopar

#endif // AUTOPAR_ANALYSIS_DATATILING_H
