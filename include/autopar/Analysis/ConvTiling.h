//===- ConvTiling.h - how a convolution is data-tiled -----------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The rules of `autopar-pack-contractions` for ungrouped convolutions,
// stated once for the pass and for the planner's memory model: which form a
// convolution takes (the Winograd form F(2x2, 3x3), a pointwise product in
// place, or an im2col product with the weight on the left or on the right),
// the geometry of each form, the stored size of a weight transformed for
// the Winograd form, and the buffers each form allocates per call (the
// zero-padded input, the packed im2col matrix, the Winograd taps and
// accumulators, the transposed accumulator). The planner prices these from
// a convolution's local shapes; the pass lowers by the same geometry.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_ANALYSIS_CONVTILING_H
#define AUTOPAR_ANALYSIS_CONVTILING_H

#include "autopar/Target/Target.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <optional>

namespace mlir::autopar {

class ConvOp;

/// The shape of a convolution `Y [N, M, out...] = X [N, C, in...] * W [M, C,
/// kernel...]` as the lowering sees it (local shapes on a device).
struct ConvShape {
  int64_t batch = 0, channels = 0, channelsOut = 0, group = 1;
  SmallVector<int64_t> in, out, kernel, strides, dilations;
  /// The begin pads then the end pads (ONNX order).
  SmallVector<int64_t> pads;
  /// Bytes per element of the stored input and weight (what the packs copy).
  int64_t inputBytes = 4, weightBytes = 4;

  int64_t getSpatialRank() const { return static_cast<int64_t>(in.size()); }
  /// The reduction length of the im2col product: C x kernel elements.
  int64_t getReduction() const;
  /// Output positions of one image.
  int64_t getPositions() const;
  /// Whether the convolution is a 1x1 kernel at unit strides without
  /// padding: X [C, positions] is its im2col matrix.
  bool isPointwise() const;
};

/// The shape of `conv` from its types, or from the local shapes `input`,
/// `weight` and `result` when given (the planner's strategies).
ConvShape getConvShape(ConvOp conv, ArrayRef<int64_t> input = {},
                       ArrayRef<int64_t> weight = {},
                       ArrayRef<int64_t> result = {});

//===----------------------------------------------------------------------===//
// The im2col product
//===----------------------------------------------------------------------===//

/// How the output positions of a convolution become the rows of its packed
/// im2col matrix (P1 x K x m0 x 1: tiles of m0 rows, one column per
/// (channel, kernel offset)).
enum class ConvRows {
  /// One image of a pointwise convolution: row p is position p of
  /// X [C, positions], read directly.
  Pointwise,
  /// Each line of the output's last spatial dimension is padded to a
  /// multiple of m0, so that a tile never spans two lines: the reads are
  /// affine without division, and contiguous at unit stride. The padded
  /// rows read zeros and are never stored.
  PaddedLines,
  /// The positions (n, out...) flattened, padded at the end only.
  Flat,
};

/// The rows of a convolution's im2col product for tiles of `rowTile`
/// positions.
struct ConvGeometry {
  ConvRows rows = ConvRows::Flat;
  /// Tiles of rowTile per output line (PaddedLines).
  int64_t lineTiles = 0;
  /// Row tiles of the packed matrix.
  int64_t rowTiles = 0;
};
ConvGeometry getConvGeometry(const ConvShape &shape, int64_t rowTile);

/// The zero padding of the input that the packed im2col copy reads
/// (`rowTile` positions per row tile), per dimension of X [N, C, in...]: the
/// begin pads, and at the end what the last window reads (one element more
/// along padded lines at stride 2, for the vector reads of twice the lanes),
/// and for the flat rows whole images of zeros past the last one. For
/// pointwise rows, per dimension of X [C, positions]: whole row tiles.
struct ConvInputPadding {
  SmallVector<int64_t> low, high;
  bool isZero() const;
};
ConvInputPadding getConvInputPadding(const ConvShape &shape,
                                     const ConvGeometry &g, int64_t rowTile);

/// Whether the convolution is computed as `W * cols^T` (the weight the packed
/// left operand, tiles of m0 output channels; the positions tiles of n0)
/// rather than `cols * W^T`. The weight goes on the left when its output
/// channels fill the m0-row tiles (at most a sixteenth of padding), unless
/// the positions then pad their n0-wide tiles by more than an eighth over
/// the m0-wide tiles of the other form, for a reduction long enough
/// (K >= 512) that the kernel outweighs the other form's scalar epilogue.
bool isWeightLhsConvolution(const ConvShape &shape, ContractionTile tile);

/// The width of the column tiles with which a pointwise convolution of one
/// image is computed in place (the weight on the left, no pack of the input
/// and no unpack of the accumulator), if it can: the register tile has
/// k0 = 1, the output channels are a multiple of m0, and the positions a
/// multiple of n0 or, failing that, of n0 / 2. The caller checks that the
/// input and the weight are stored in f32.
std::optional<int64_t> getDirectPointwiseColumns(const ConvShape &shape,
                                                 ContractionTile tile);

//===----------------------------------------------------------------------===//
// The Winograd form F(2x2, 3x3)
//===----------------------------------------------------------------------===//

/// Taps of the Winograd form F(2x2, 3x3): 4 x 4 input tiles, 2 x 2 outputs.
constexpr int64_t kWinogradTaps = 16;

/// The layout of a convolution computed in the Winograd form F(2x2, 3x3):
/// 16 products, one per tap of the 4 x 4 transformed tiles, of the
/// transformed weight U (M x C) and the transformed input V (C x tiles). The
/// tiles of 2 x 2 outputs form a grid of TH x TW (ceil of half the output);
/// its lines are padded so that a register tile of P0 positions is
/// `linesPerTile` whole lines of `lineWidth` tiles (a divisor of P0 at least
/// TW: 7 -> 8, 4 -> 4), or one block of P0 tiles of a line (`blocksPerLine`
/// per line), so that no index divides.
struct WinogradGeometry {
  /// U on the left (M1 x C x m0 x 1 by tiles of P0 = n0 positions) or on the
  /// right (positions as the rows: P0 = m0, channels by n0).
  bool weightIsLhs = true;
  int64_t batch = 0, channels = 0, channelsOut = 0;
  int64_t outH = 0, outW = 0, tilesH = 0, tilesW = 0;
  int64_t padTop = 0, padLeft = 0;
  /// P0 and the channel tile of U (Q0).
  int64_t positionTile = 0, channelTile = 0;
  int64_t lineWidth = 0, blocksPerLine = 1, linesPerTile = 1;
  /// TH rounded up to a multiple of linesPerTile.
  int64_t paddedTilesH = 0;

  /// Row tiles (T1) of the transformed input.
  int64_t getRowTiles() const;
  /// Multiply-adds of the 16 products, padding included.
  int64_t getWork() const;
  /// Rows and columns of the zero-padded input the transform reads: the
  /// 4 x 4 tiles of the padded grid (2 x 2 outputs each, overlapping by 2).
  int64_t getPaddedRows() const { return 2 * paddedTilesH + 2; }
  int64_t getPaddedCols() const { return 2 * blocksPerLine * lineWidth + 2; }
};

/// The Winograd geometry of a convolution of `shape` with the weight on the
/// left (`lhs`) or on the right.
WinogradGeometry getWinogradGeometry(const ConvShape &shape, bool lhs,
                                     ContractionTile tile);

/// The Winograd form of a convolution of `shape` when it pays: the register
/// tile has k0 = 1, the shape qualifies (isWinogradShape) and the 16
/// products of the cheaper side (padding included; the weight on the left
/// when equal) do at most two thirds of the multiply-adds of its im2col
/// product (`weightIsLhs`: the side that form takes). The caller checks the
/// rest (the input and weight stored in f32, a weight transformed at
/// compile time).
std::optional<WinogradGeometry>
getWinogradForm(const ConvShape &shape, bool weightIsLhs, ContractionTile tile);

/// The shape of a weight [M, C, 3, 3] transformed and packed for the
/// Winograd form with the channel tile `channelTile`: the 16 taps of U, each
/// M x C packed as a transposed right operand with tiles of
/// `channelTile` x 1 (16 x M1 x C x Q0 x 1).
SmallVector<int64_t, 5> getWinogradWeightShape(int64_t channelsOut,
                                               int64_t channels,
                                               int64_t channelTile);

//===----------------------------------------------------------------------===//
// The buffers of a call
//===----------------------------------------------------------------------===//

/// The form a data-tiled convolution takes (autopar-pack-contractions).
enum class ConvForm {
  /// The Winograd form F(2x2, 3x3), its weight transformed at compile time.
  Winograd,
  /// A pointwise convolution of one image computed in place.
  PointwiseInPlace,
  /// The im2col product with the weight on the left.
  WeightLhs,
  /// The im2col product with the weight on the right.
  WeightRhs,
};

/// What decides the form of a convolution besides its shape and the tile.
struct ConvFormOptions {
  /// The Winograd form is enabled (with weights packed at compile time) and
  /// the convolution's weight is an `autopar.weight` that only it reads,
  /// stored in f32 with its input.
  bool winogradAllowed = false;
  /// The input and weight are stored in f32 (a pointwise convolution in
  /// place reads them as they are).
  bool storedF32 = true;
};

/// The form of a convolution of `shape` with the register tile `tile`, its
/// weight transformed at compile time if it takes the Winograd form.
ConvForm getConvForm(const ConvShape &shape, ContractionTile tile,
                     const ConvFormOptions &options);

/// How autopar-pack-contractions{pack-weights=true} lowers a convolution
/// and stores its weight.
struct ConvLowering {
  ConvForm form = ConvForm::WeightRhs;
  /// The weight is packed (for the Winograd form, transformed and packed)
  /// at compile time.
  bool weightPackedAtCompileTime = false;
  /// Elements of the weight as the driver stores it: transformed and
  /// packed (16 x M1 x C x Q0), packed (M1 x K x t x 1, M padded to whole
  /// tiles), or as it is.
  int64_t storedWeightElements = 0;
};

/// The lowering of a convolution of `shape` whose weight is packed at
/// compile time when `weightPackable` (an `autopar.weight` that only
/// convolutions of one form read) and the padding of its tiles is allowed
/// (isCompileTimePackingPaddingAllowed). A convolution whose weight is not
/// packed does not take the Winograd form.
ConvLowering getConvLowering(const ConvShape &shape, ContractionTile tile,
                             const ConvFormOptions &options,
                             bool weightPackable);

/// The buffers a data-tiled convolution allocates per call (bytes), phase by
/// phase in the order the lowering creates them and the bufferization frees
/// them (each right after its last use). 0 where a form has no such buffer.
struct ConvBuffers {
  //--- im2col products.
  /// The zero-padded input the packed im2col copy reads.
  int64_t paddedInput = 0;
  /// The packed im2col matrix (for a pointwise input, the transposed copy
  /// of its flat input, after its padded copy `paddedInput`).
  int64_t packedInput = 0;
  /// The weight padded to whole tiles and packed, when packed per call.
  int64_t weightPadded = 0, weightPacked = 0;
  /// The f32 accumulator.
  int64_t accumulator = 0;
  /// The accumulator transposed into rows of positions (weight on the left).
  int64_t transposed = 0;
  /// The product accumulates into the result itself (a pointwise
  /// convolution in place): only the weight's pack is extra.
  bool accumulatesInResult = false;
  //--- The Winograd form.
  /// The input zero-padded to the 4 x 4 tiles, and its even and odd
  /// columns apart.
  int64_t winogradPadded = 0, deinterleaved = 0;
  /// One of the 16 transformed input taps, and one of the 16 accumulators.
  int64_t tap = 0, tapAccumulator = 0;
  /// One of the four outputs Y_ij of the output transform.
  int64_t tileOutput = 0;
  /// The output computed on the even grid of 2 x 2 tiles, before its copy
  /// into the result (an odd output size).
  int64_t evenOutput = 0;

  /// The most these buffers hold at once, beyond the convolution's operands
  /// and its result of `resultBytes` (the result is not allocated before the
  /// last phase).
  int64_t getExtraBytes(int64_t resultBytes) const;
};

/// The per-call buffers of a convolution of `shape` in `form` with the
/// register tile `tile`; its weight is packed per call unless
/// `weightPackedAtCompileTime`.
ConvBuffers getConvBuffers(const ConvShape &shape, ConvForm form,
                           ContractionTile tile,
                           bool weightPackedAtCompileTime);

} // namespace mlir::autopar

#endif // AUTOPAR_ANALYSIS_CONVTILING_H
