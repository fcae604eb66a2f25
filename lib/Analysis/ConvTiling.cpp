//===- ConvTiling.cpp - how a convolution is data-tiled -------------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "autopar/Analysis/ConvTiling.h"

#include "autopar/Analysis/DataTiling.h"
#include "autopar/Dialect/Autopar/IR/Autopar.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::autopar;

static int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

static int64_t product(ArrayRef<int64_t> sizes) {
  int64_t p = 1;
  for (int64_t size : sizes)
    p *= size;
  return p;
}

static bool allOnes(ArrayRef<int64_t> values) {
  return llvm::all_of(values, [](int64_t v) { return v == 1; });
}

int64_t ConvShape::getReduction() const { return channels * product(kernel); }

int64_t ConvShape::getPositions() const { return product(out); }

bool ConvShape::isPointwise() const {
  return allOnes(kernel) && allOnes(strides) &&
         llvm::all_of(pads, [](int64_t v) { return v == 0; });
}

ConvShape mlir::autopar::getConvShape(ConvOp conv, ArrayRef<int64_t> input,
                                      ArrayRef<int64_t> weight,
                                      ArrayRef<int64_t> result) {
  auto xType = cast<RankedTensorType>(conv.getInput().getType());
  auto wType = cast<RankedTensorType>(conv.getWeight().getType());
  auto yType = cast<RankedTensorType>(conv.getType());
  if (input.empty())
    input = xType.getShape();
  if (weight.empty())
    weight = wType.getShape();
  if (result.empty())
    result = yType.getShape();
  ConvShape s;
  s.batch = input[0];
  s.channels = input[1];
  s.channelsOut = result[1];
  s.group = conv.getGroup();
  s.in = llvm::to_vector(input.drop_front(2));
  s.out = llvm::to_vector(result.drop_front(2));
  s.kernel = llvm::to_vector(weight.drop_front(2));
  s.strides = llvm::to_vector(conv.getStrides());
  s.dilations = llvm::to_vector(conv.getDilations());
  s.pads = llvm::to_vector(conv.getPads());
  return s;
}

//===----------------------------------------------------------------------===//
// The im2col product
//===----------------------------------------------------------------------===//

ConvGeometry mlir::autopar::getConvGeometry(const ConvShape &shape,
                                            int64_t rowTile) {
  ConvGeometry g;
  int64_t positions = shape.getPositions();
  int64_t line = shape.out.back();
  int64_t lineTiles = ceilDiv(line, rowTile);
  if (shape.isPointwise() && shape.batch == 1) {
    g.rows = ConvRows::Pointwise;
    g.rowTiles = ceilDiv(positions, rowTile);
  } else if ((lineTiles * rowTile - line) * 4 <= line) {
    // At most a quarter more rows than positions.
    g.rows = ConvRows::PaddedLines;
    g.lineTiles = lineTiles;
    g.rowTiles = shape.batch * (positions / line) * lineTiles;
  } else {
    g.rows = ConvRows::Flat;
    g.rowTiles = ceilDiv(shape.batch * positions, rowTile);
  }
  return g;
}

bool ConvInputPadding::isZero() const {
  return llvm::all_of(low, [](int64_t v) { return v == 0; }) &&
         llvm::all_of(high, [](int64_t v) { return v == 0; });
}

ConvInputPadding mlir::autopar::getConvInputPadding(const ConvShape &shape,
                                                    const ConvGeometry &g,
                                                    int64_t rowTile) {
  ConvInputPadding p;
  int64_t s = shape.getSpatialRank();
  p.low = {0, 0};
  p.high = {0, 0};
  if (g.rows == ConvRows::Pointwise) {
    // X [C, positions] (one image) padded to whole row tiles at the end.
    p.high[1] = g.rowTiles * rowTile - shape.getPositions();
    return p;
  }
  for (int64_t i = 0; i < s; ++i) {
    int64_t outSize = shape.out[i];
    if (g.rows == ConvRows::PaddedLines && i == s - 1)
      outSize = g.lineTiles * rowTile;
    int64_t needed = (outSize - 1) * shape.strides[i] +
                     (shape.kernel[i] - 1) * shape.dilations[i] + 1;
    // A stride-2 gather along the padded lines reads vectors of twice its
    // lanes (autopar-vectorize-elementwise): one more column keeps the
    // last one in bounds.
    if (g.rows == ConvRows::PaddedLines && i == s - 1 && shape.strides[i] == 2)
      ++needed;
    p.low.push_back(shape.pads[i]);
    p.high.push_back(
        std::max<int64_t>(needed - shape.in[i] - shape.pads[i], 0));
  }
  if (g.rows == ConvRows::Flat) {
    // Rows past the last position read images past the end: zeros.
    int64_t positions = shape.getPositions();
    int64_t extraRows = g.rowTiles * rowTile - shape.batch * positions;
    p.high[0] = ceilDiv(extraRows, positions);
  }
  return p;
}

bool mlir::autopar::isWeightLhsConvolution(const ConvShape &shape,
                                           ContractionTile tile) {
  int64_t k = shape.getReduction(), channels = shape.channelsOut;
  if ((ceilDiv(channels, tile.m0) * tile.m0 - channels) * 16 > channels)
    return false;
  if (k < 512)
    return true;
  ConvGeometry columns = getConvGeometry(shape, tile.n0);
  ConvGeometry rows = getConvGeometry(shape, tile.m0);
  int64_t lhsWork =
      ceilDiv(channels, tile.m0) * tile.m0 * columns.rowTiles * tile.n0;
  int64_t rhsWork =
      rows.rowTiles * tile.m0 * ceilDiv(channels, tile.n0) * tile.n0;
  return lhsWork * 8 <= rhsWork * 9;
}

std::optional<int64_t>
mlir::autopar::getDirectPointwiseColumns(const ConvShape &shape,
                                         ContractionTile tile) {
  if (tile.k0 != 1 || shape.channelsOut % tile.m0 != 0)
    return std::nullopt;
  int64_t positions = shape.getPositions();
  if (positions % tile.n0 == 0)
    return tile.n0;
  if (tile.n0 % 2 == 0 && positions % (tile.n0 / 2) == 0)
    return tile.n0 / 2;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// The Winograd form F(2x2, 3x3)
//===----------------------------------------------------------------------===//

int64_t WinogradGeometry::getRowTiles() const {
  return batch * (paddedTilesH / linesPerTile) * blocksPerLine;
}

int64_t WinogradGeometry::getWork() const {
  return kWinogradTaps * getRowTiles() * positionTile *
         ceilDiv(channelsOut, channelTile) * channelTile * channels;
}

WinogradGeometry mlir::autopar::getWinogradGeometry(const ConvShape &shape,
                                                    bool lhs,
                                                    ContractionTile tile) {
  WinogradGeometry g;
  g.weightIsLhs = lhs;
  g.batch = shape.batch;
  g.channels = shape.channels;
  g.channelsOut = shape.channelsOut;
  g.outH = shape.out[0];
  g.outW = shape.out[1];
  g.tilesH = ceilDiv(g.outH, 2);
  g.tilesW = ceilDiv(g.outW, 2);
  g.padTop = shape.pads[0];
  g.padLeft = shape.pads[1];
  g.positionTile = lhs ? tile.n0 : tile.m0;
  g.channelTile = lhs ? tile.m0 : tile.n0;
  int64_t p0 = g.positionTile;
  if (g.tilesW >= p0) {
    g.lineWidth = p0;
    g.blocksPerLine = ceilDiv(g.tilesW, p0);
  } else {
    g.lineWidth = g.tilesW;
    while (p0 % g.lineWidth != 0)
      ++g.lineWidth;
    g.linesPerTile = p0 / g.lineWidth;
  }
  g.paddedTilesH = ceilDiv(g.tilesH, g.linesPerTile) * g.linesPerTile;
  return g;
}

std::optional<WinogradGeometry>
mlir::autopar::getWinogradForm(const ConvShape &shape, bool weightIsLhs,
                               ContractionTile tile) {
  if (tile.k0 != 1 || shape.getSpatialRank() != 2 ||
      !isWinogradShape(shape.channels, shape.channelsOut, shape.group,
                       shape.kernel, shape.strides, shape.dilations))
    return std::nullopt;
  WinogradGeometry lhs = getWinogradGeometry(shape, /*lhs=*/true, tile);
  WinogradGeometry rhs = getWinogradGeometry(shape, /*lhs=*/false, tile);
  WinogradGeometry best = lhs.getWork() <= rhs.getWork() ? lhs : rhs;
  int64_t k = shape.getReduction(), channels = shape.channelsOut;
  int64_t direct;
  if (weightIsLhs) {
    ConvGeometry columns = getConvGeometry(shape, tile.n0);
    direct =
        ceilDiv(channels, tile.m0) * tile.m0 * columns.rowTiles * tile.n0 * k;
  } else {
    ConvGeometry rows = getConvGeometry(shape, tile.m0);
    direct = rows.rowTiles * tile.m0 * ceilDiv(channels, tile.n0) * tile.n0 * k;
  }
  if (best.getWork() * 3 > direct * 2)
    return std::nullopt;
  return best;
}

SmallVector<int64_t, 5>
mlir::autopar::getWinogradWeightShape(int64_t channelsOut, int64_t channels,
                                      int64_t channelTile) {
  return {kWinogradTaps, ceilDiv(channelsOut, channelTile), channels,
          channelTile, 1};
}

//===----------------------------------------------------------------------===//
// The buffers of a call
//===----------------------------------------------------------------------===//

ConvForm mlir::autopar::getConvForm(const ConvShape &shape,
                                    ContractionTile tile,
                                    const ConvFormOptions &options) {
  bool lhs = isWeightLhsConvolution(shape, tile);
  if (options.winogradAllowed && getWinogradForm(shape, lhs, tile))
    return ConvForm::Winograd;
  if (!lhs)
    return ConvForm::WeightRhs;
  if (options.storedF32 &&
      getConvGeometry(shape, tile.n0).rows == ConvRows::Pointwise &&
      getDirectPointwiseColumns(shape, tile))
    return ConvForm::PointwiseInPlace;
  return ConvForm::WeightLhs;
}

ConvLowering mlir::autopar::getConvLowering(const ConvShape &shape,
                                            ContractionTile tile,
                                            const ConvFormOptions &options,
                                            bool weightPackable) {
  ConvLowering l;
  int64_t m = shape.channelsOut, k = shape.getReduction();
  // The weight is packed as a right operand with the tile of its side: m0
  // wide on the left, n0 on the right.
  auto isPackable = [&](int64_t width) {
    return weightPackable && isCompileTimePackingPaddingAllowed(
                                 k, m, ContractionTile{width, width, tile.k0});
  };
  bool lhs = isWeightLhsConvolution(shape, tile);
  if (options.winogradAllowed)
    if (std::optional<WinogradGeometry> g = getWinogradForm(shape, lhs, tile))
      if (isPackable(g->channelTile)) {
        l.form = ConvForm::Winograd;
        l.weightPackedAtCompileTime = true;
        SmallVector<int64_t, 5> stored =
            getWinogradWeightShape(m, shape.channels, g->channelTile);
        l.storedWeightElements = product(stored);
        return l;
      }
  ConvFormOptions im2col = options;
  im2col.winogradAllowed = false;
  l.form = getConvForm(shape, tile, im2col);
  int64_t width = lhs ? tile.m0 : tile.n0;
  l.weightPackedAtCompileTime = isPackable(width);
  l.storedWeightElements =
      l.weightPackedAtCompileTime
          ? ceilDiv(m, width) * width * ceilDiv(k, tile.k0) * tile.k0
          : m * k;
  return l;
}

/// Bytes of `shape` padded by `padding`.
static int64_t getPaddedBytes(ArrayRef<int64_t> shape,
                              const ConvInputPadding &padding,
                              int64_t elementBytes) {
  int64_t elements = 1;
  for (auto [i, size] : llvm::enumerate(shape))
    elements *= size + padding.low[i] + padding.high[i];
  return elements * elementBytes;
}

ConvBuffers mlir::autopar::getConvBuffers(const ConvShape &shape, ConvForm form,
                                          ContractionTile tile,
                                          bool weightPackedAtCompileTime) {
  constexpr int64_t f32Bytes = 4;
  ConvBuffers b;
  int64_t m = shape.channelsOut, k = shape.getReduction();

  if (form == ConvForm::Winograd) {
    std::optional<WinogradGeometry> found =
        getWinogradForm(shape, isWeightLhsConvolution(shape, tile), tile);
    assert(found && "a Winograd convolution has a Winograd geometry");
    const WinogradGeometry &g = *found;
    int64_t planes = g.batch * g.channels;
    int64_t padded = planes * g.getPaddedRows() * g.getPaddedCols();
    if (padded != planes * shape.in[0] * shape.in[1])
      b.winogradPadded = padded * f32Bytes;
    b.deinterleaved = padded * f32Bytes;
    int64_t positions = g.getRowTiles() * g.positionTile;
    b.tap = positions * g.channels * f32Bytes;
    int64_t channelsOut = ceilDiv(m, g.channelTile) * g.channelTile;
    b.tapAccumulator = positions * channelsOut * f32Bytes;
    b.tileOutput = b.tapAccumulator;
    if (g.outH % 2 != 0 || g.outW % 2 != 0)
      b.evenOutput = g.batch * m * 4 * g.tilesH * g.tilesW * f32Bytes;
    return b;
  }

  // The weight packed per call as M x K in tiles of its side's width.
  if (!weightPackedAtCompileTime) {
    int64_t weightTile = form == ConvForm::WeightRhs ? tile.n0 : tile.m0;
    b.weightPacked = ceilDiv(m, weightTile) * weightTile * ceilDiv(k, tile.k0) *
                     tile.k0 * shape.weightBytes;
    if (m % weightTile != 0 || k % tile.k0 != 0)
      b.weightPadded = b.weightPacked;
  }
  if (form == ConvForm::PointwiseInPlace) {
    b.accumulatesInResult = true;
    return b;
  }

  bool lhs = form == ConvForm::WeightLhs;
  int64_t rowTile = lhs ? tile.n0 : tile.m0;
  ConvGeometry g = getConvGeometry(shape, rowTile);
  ConvInputPadding padding = getConvInputPadding(shape, g, rowTile);
  if (!padding.isZero()) {
    SmallVector<int64_t> input;
    if (g.rows == ConvRows::Pointwise) {
      input = {shape.batch * shape.channels, shape.getPositions()};
    } else {
      input = {shape.batch, shape.channels};
      llvm::append_range(input, shape.in);
    }
    b.paddedInput = getPaddedBytes(input, padding, shape.inputBytes);
  }
  b.packedInput = g.rowTiles * rowTile * k * shape.inputBytes;
  int64_t columns =
      ceilDiv(m, lhs ? tile.m0 : tile.n0) * (lhs ? tile.m0 : tile.n0);
  b.accumulator = g.rowTiles * rowTile * columns * f32Bytes;
  if (lhs)
    b.transposed = b.accumulator;
  return b;
}

int64_t ConvBuffers::getExtraBytes(int64_t resultBytes) const {
  if (tap) {
    // Pad, then copy the columns apart; the input transform writes the 16
    // taps; the products consume one tap and create one accumulator each
    // (the most at the first or the last); the output transform reads the
    // 16 accumulators into four outputs, which the last phase writes into
    // the result (an odd output through the even one, then a copy).
    int64_t beforeResult = std::max(
        {winogradPadded + deinterleaved, deinterleaved + kWinogradTaps * tap,
         kWinogradTaps * tap + tapAccumulator,
         tap + kWinogradTaps * tapAccumulator,
         kWinogradTaps * tapAccumulator + 4 * tileOutput});
    int64_t withResult;
    if (evenOutput)
      withResult =
          std::max(4 * tileOutput + evenOutput - resultBytes, evenOutput);
    else
      withResult = 4 * tileOutput;
    return std::max({beforeResult - resultBytes, withResult, int64_t(0)});
  }
  // Pad, then pack the input; pad and pack the weight; the product; the
  // transpose of the accumulator (weight on the left); the epilogue writes
  // the result from the accumulator or its transposed copy.
  int64_t packInput = paddedInput + packedInput;
  int64_t packWeight = packedInput + weightPadded + weightPacked;
  int64_t multiply = packedInput + weightPacked + accumulator;
  int64_t transpose = accumulator + transposed;
  int64_t beforeResult =
      std::max({packInput, packWeight, multiply, transpose}) - resultBytes;
  int64_t withResult = accumulatesInResult ? weightPacked
                       : transposed        ? transposed
                                           : accumulator;
  return std::max({beforeResult, withResult, int64_t(0)});
}
