//===- Random.cpp - counter-based random numbers to linalg ------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// autopar.random_uniform as one parallel `linalg.generic` over its result:
// each element runs Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel
// random numbers: as easy as 1, 2, 3", SC'11; constants and round structure
// of the Random123 reference, philox.h) on a counter made of its global
// linear index (from `linalg.index` plus the device's block offsets), the
// op's stream and the step counter. Plain arith (64-bit multiplies for the
// 32x32->64 products), no state, no loop-carried value: the generic
// stays parallel and every device of a partitioned program computes exactly
// the values of its block of the single-device result.
//
//===----------------------------------------------------------------------===//

#include "Lowerings.h"

#include "autopar/Dialect/Autopar/IR/Autopar.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Transforms/DialectConversion.h"

#include <array>

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::tolinalg;

namespace {

/// Philox4x32 multipliers and Weyl key increments (Random123).
constexpr uint32_t kPhiloxM0 = 0xD2511F53u;
constexpr uint32_t kPhiloxM1 = 0xCD9E8D57u;
constexpr uint32_t kPhiloxW0 = 0x9E3779B9u;
constexpr uint32_t kPhiloxW1 = 0xBB67AE85u;
constexpr int kPhiloxRounds = 10;

/// Builds the 32-bit scalar arithmetic of one element.
struct PhiloxBuilder {
  OpBuilder &b;
  Location loc;

  Value i32(uint32_t value) {
    return arith::ConstantIntOp::create(b, loc, static_cast<int32_t>(value),
                                        32);
  }
  Value xorOf(Value x, Value y) { return arith::XOrIOp::create(b, loc, x, y); }

  /// The high and low words of the 64-bit product of two 32-bit words, as a
  /// 64-bit multiply (arith.mului_extended on vectors fails to lower to LLVM
  /// in MLIR 22: a zext of mismatched vector shapes).
  std::pair<Value, Value> mulHiLo(Value x, Value y) {
    Type i64 = b.getI64Type(), i32 = b.getI32Type();
    Value product =
        arith::MulIOp::create(b, loc, arith::ExtUIOp::create(b, loc, i64, x),
                              arith::ExtUIOp::create(b, loc, i64, y));
    Value high = arith::ShRUIOp::create(
        b, loc, product, arith::ConstantIntOp::create(b, loc, 32, 64));
    return {arith::TruncIOp::create(b, loc, i32, high),
            arith::TruncIOp::create(b, loc, i32, product)};
  }

  /// Philox4x32-10 of `counter` under the key (k0, k1): the round
  /// (hi(M1 c2) ^ c1 ^ k0, lo(M1 c2), hi(M0 c0) ^ c3 ^ k1, lo(M0 c0)), the
  /// key bumped by (W0, W1) between rounds. The keys are compile-time
  /// constants.
  std::array<Value, 4> run(std::array<Value, 4> c, uint32_t k0, uint32_t k1) {
    Value m0 = i32(kPhiloxM0), m1 = i32(kPhiloxM1);
    for (int round = 0; round < kPhiloxRounds; ++round) {
      if (round > 0) {
        k0 += kPhiloxW0;
        k1 += kPhiloxW1;
      }
      auto [hi0, lo0] = mulHiLo(m0, c[0]);
      auto [hi1, lo1] = mulHiLo(m1, c[2]);
      c = {xorOf(xorOf(hi1, c[1]), i32(k0)), lo1,
           xorOf(xorOf(hi0, c[3]), i32(k1)), lo0};
    }
    return c;
  }
};

/// u = (x >> 8) * 2^-24 in [0, 1), x the first Philox word of the
/// counter (lo32(i), hi32(i), stream, counter), i the element's global
/// row-major index.
struct RandomUniformLowering : public OpConversionPattern<RandomUniformOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(RandomUniformOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    MLIRContext *ctx = op.getContext();
    RankedTensorType type = op.getResult().getType();
    int64_t rank = type.getRank();
    SmallVector<int64_t> global(type.getShape());
    if (std::optional<ArrayRef<int64_t>> shape = op.getGlobalShape())
      global.assign(shape->begin(), shape->end());
    // A microbatch's draw is a block of the whole batch's: positions are
    // shifted by its offsets and linearized over the whole shape.
    SmallVector<int64_t> base(rank, 0);
    if (std::optional<ArrayRef<int64_t>> whole = op.getWholeShape()) {
      global.assign(whole->begin(), whole->end());
      if (std::optional<ArrayRef<int64_t>> offsets = op.getWholeOffsets())
        base.assign(offsets->begin(), offsets->end());
    }
    SmallVector<int64_t> strides(rank, 1);
    for (int64_t d = rank - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * global[d + 1];
    ValueRange offsets = adaptor.getOffsets();
    auto seed = static_cast<uint64_t>(op.getSeed());
    auto stream = static_cast<uint32_t>(op.getStream());

    SmallVector<Value> operands;
    SmallVector<AffineMap> maps;
    if (Value counter = adaptor.getCounter()) {
      auto counterType = cast<RankedTensorType>(counter.getType());
      operands.push_back(counter);
      maps.push_back(
          AffineMap::get(rank, 0,
                         SmallVector<AffineExpr>(counterType.getRank(),
                                                 getAffineConstantExpr(0, ctx)),
                         ctx));
    }
    Value result = buildGeneric(
        rewriter, op.getLoc(), type, operands, maps,
        [&](OpBuilder &b, Location loc, ValueRange args) {
          Type i64 = b.getI64Type(), i32 = b.getI32Type();
          Value linear = arith::ConstantIntOp::create(b, loc, 0, 64);
          for (int64_t d = 0; d < rank; ++d) {
            Value index = arith::IndexCastOp::create(
                b, loc, i64, linalg::IndexOp::create(b, loc, d));
            if (!offsets.empty())
              index = arith::AddIOp::create(b, loc, index, offsets[d]);
            if (base[d] != 0)
              index = arith::AddIOp::create(
                  b, loc, index,
                  arith::ConstantIntOp::create(b, loc, base[d], 64));
            Value stride = arith::ConstantIntOp::create(b, loc, strides[d], 64);
            linear = arith::AddIOp::create(
                b, loc, linear, arith::MulIOp::create(b, loc, index, stride));
          }
          PhiloxBuilder philox{b, loc};
          Value high = arith::ShRUIOp::create(
              b, loc, linear, arith::ConstantIntOp::create(b, loc, 32, 64));
          Value step =
              args.empty()
                  ? philox.i32(0)
                  : Value(arith::TruncIOp::create(b, loc, i32, args.front()));
          std::array<Value, 4> counter = {
              arith::TruncIOp::create(b, loc, i32, linear),
              arith::TruncIOp::create(b, loc, i32, high), philox.i32(stream),
              step};
          std::array<Value, 4> bits =
              philox.run(counter, static_cast<uint32_t>(seed),
                         static_cast<uint32_t>(seed >> 32));
          Value mantissa =
              arith::ShRUIOp::create(b, loc, bits[0], philox.i32(8));
          Value asFloat =
              arith::UIToFPOp::create(b, loc, b.getF32Type(), mantissa);
          return arith::MulFOp::create(
              b, loc, asFloat,
              createConstant(b, loc, b.getF32Type(), 0x1.0p-24));
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void tolinalg::populateRandomPatterns(RewritePatternSet &patterns) {
  patterns.add<RandomUniformLowering>(patterns.getContext());
}
