//===- ConvTilingTest.cpp - the forms and buffers of convolutions ---------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The buffers below are those the runtime allocates for these convolutions
// (AUTOPAR_RT_TRACE_MEMORY=1 on one-convolution programs, AVX-512 tile
// 8x32x1, 2026-12-07), less the runtime's 64-byte header per buffer.
//
//===----------------------------------------------------------------------===//

#include "autopar/Analysis/ConvTiling.h"

#include <catch2/catch.hpp>

using namespace mlir;
using namespace mlir::autopar;

namespace {
constexpr ContractionTile kAvx512 = {8, 32, 1};

/// A 2-d convolution of one image with square kernels, strides and pads.
ConvShape makeShape(int64_t c, int64_t m, int64_t size, int64_t kernel,
                    int64_t stride, int64_t pad) {
  ConvShape s;
  s.batch = 1;
  s.channels = c;
  s.channelsOut = m;
  int64_t out = (size + 2 * pad - kernel) / stride + 1;
  s.in = {size, size};
  s.out = {out, out};
  s.kernel = {kernel, kernel};
  s.strides = {stride, stride};
  s.dilations = {1, 1};
  s.pads = {pad, pad, pad, pad};
  return s;
}

ConvFormOptions winograd() {
  ConvFormOptions options;
  options.winogradAllowed = true;
  return options;
}
} // namespace

TEST_CASE("resnet's stride-2 stem is an im2col product with the weight on "
          "the left",
          "[conv-tiling]") {
  ConvShape s = makeShape(3, 64, 224, 7, 2, 3);
  ConvLowering l = getConvLowering(s, kAvx512, winograd(), true);
  CHECK(l.form == ConvForm::WeightLhs);
  CHECK(l.weightPackedAtCompileTime);
  CHECK(l.storedWeightElements == 64 * 147);
  ConvBuffers b = getConvBuffers(s, l.form, kAvx512, true);
  // 3 x 229 x 262: the last window of the 128-wide padded lines, and one
  // column for the vector reads of the stride-2 gather.
  CHECK(b.paddedInput == 3 * 229 * 262 * 4);
  // 112 lines of 4 tiles of 32 positions, 147 columns.
  CHECK(b.packedInput == 448 * 32 * 147 * 4);
  CHECK(b.accumulator == 448 * 32 * 64 * 4);
  CHECK(b.transposed == b.accumulator);
  CHECK(b.weightPacked == 0);
  // The product: the packed matrix and the accumulator, before the result.
  int64_t result = 64 * 112 * 112 * 4;
  CHECK(b.getExtraBytes(result) == b.packedInput + b.accumulator - result);
}

TEST_CASE("a 3x3 convolution of 64 channels on 56x56 takes the Winograd form",
          "[conv-tiling]") {
  ConvShape s = makeShape(64, 64, 56, 3, 1, 1);
  ConvLowering l = getConvLowering(s, kAvx512, winograd(), true);
  REQUIRE(l.form == ConvForm::Winograd);
  // 16 taps of 64 x 64: 16/9 of the weight.
  CHECK(l.storedWeightElements == 16 * 64 * 64);
  ConvBuffers b = getConvBuffers(s, l.form, kAvx512, true);
  // The weight on the left: lines of 28 tiles padded to 32 positions; the
  // input padded to 58 x 66.
  CHECK(b.winogradPadded == 64 * 58 * 66 * 4);
  CHECK(b.deinterleaved == b.winogradPadded);
  CHECK(b.tap == 28 * 32 * 64 * 4);
  CHECK(b.tapAccumulator == 28 * 32 * 64 * 4);
  CHECK(b.evenOutput == 0);
  // The input transform: the columns apart and the 16 taps.
  int64_t result = 64 * 56 * 56 * 4;
  CHECK(b.getExtraBytes(result) == b.deinterleaved + 16 * b.tap - result);
  // Without the Winograd form: the weight on the right (K = 576).
  CHECK(getConvLowering(s, kAvx512, {}, true).form == ConvForm::WeightRhs);
}

TEST_CASE("an odd Winograd output is computed on the even grid and copied",
          "[conv-tiling]") {
  ConvShape s = makeShape(512, 512, 7, 3, 1, 1);
  ConvLowering l = getConvLowering(s, kAvx512, winograd(), true);
  REQUIRE(l.form == ConvForm::Winograd);
  ConvBuffers b = getConvBuffers(s, l.form, kAvx512, true);
  CHECK(b.evenOutput == 512 * 8 * 8 * 4);
  // The weight on the right: 16 positions (two tiles of 8).
  CHECK(b.tap == 16 * 512 * 4);
}

TEST_CASE("a pointwise convolution of one image accumulates in its result",
          "[conv-tiling]") {
  ConvShape s = makeShape(64, 256, 56, 1, 1, 0);
  CHECK(getConvForm(s, kAvx512, {}) == ConvForm::PointwiseInPlace);
  ConvBuffers packed = getConvBuffers(s, ConvForm::PointwiseInPlace, kAvx512,
                                      /*weightPackedAtCompileTime=*/true);
  CHECK(packed.getExtraBytes(256 * 56 * 56 * 4) == 0);
  // Packed per call: the weight's pack is held with the result.
  ConvBuffers perCall = getConvBuffers(s, ConvForm::PointwiseInPlace, kAvx512,
                                       /*weightPackedAtCompileTime=*/false);
  CHECK(perCall.weightPacked == 256 * 64 * 4);
  CHECK(perCall.getExtraBytes(256 * 56 * 56 * 4) == 256 * 64 * 4);
  // Stored in bf16, it is an im2col product (the in-place form reads f32).
  ConvFormOptions bf16;
  bf16.storedF32 = false;
  CHECK(getConvForm(s, kAvx512, bf16) == ConvForm::WeightLhs);
}
