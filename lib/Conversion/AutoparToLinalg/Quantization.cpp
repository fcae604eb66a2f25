//===- Quantization.cpp - linear quantization to linalg ---------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// QuantizeLinear and DequantizeLinear as one parallel `linalg.generic` each.
// A per-tensor scale and zero point are broadcast; a per-axis one is indexed
// by the loop of its axis. `ui8` values (ONNX UINT8) enter the arithmetic as
// signless `i8` (arith accepts signless integers only) and leave it as `ui8`
// through `unrealized_conversion_cast`, which the LLVM lowering folds away
// (both are `i8` there).
//
//===----------------------------------------------------------------------===//

#include "Lowerings.h"

#include "autopar/Dialect/Autopar/IR/Autopar.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::tolinalg;

Value tolinalg::toSignless(OpBuilder &b, Location loc, Value scalar) {
  auto type = dyn_cast<IntegerType>(scalar.getType());
  if (!type || type.isSignless())
    return scalar;
  Type signless = IntegerType::get(b.getContext(), type.getWidth());
  return UnrealizedConversionCastOp::create(b, loc, signless, scalar)
      .getResult(0);
}

Value tolinalg::fromSignless(OpBuilder &b, Location loc, Value scalar,
                             Type to) {
  if (scalar.getType() == to)
    return scalar;
  return UnrealizedConversionCastOp::create(b, loc, to, scalar).getResult(0);
}

/// The map of a quantization parameter of `shape` inside a loop nest of
/// `rank` loops: a per-axis parameter walks loop `axis`, a per-tensor one is
/// broadcast.
static AffineMap getParameterMap(ArrayRef<int64_t> shape, unsigned rank,
                                 int64_t axis, MLIRContext *ctx) {
  if (shape.empty())
    return AffineMap::get(rank, 0, ctx);
  AffineExpr expr = ShapedType::getNumElements(shape) == 1
                        ? getAffineConstantExpr(0, ctx)
                        : getAffineDimExpr(axis, ctx);
  return AffineMap::get(rank, 0, expr);
}

/// `scalar` (i8, ui8 or i32) as an i32, extended by its signedness.
static Value extendToI32(OpBuilder &b, Location loc, Value scalar) {
  auto type = cast<IntegerType>(scalar.getType());
  Value signless = toSignless(b, loc, scalar);
  if (type.getWidth() == 32)
    return signless;
  if (type.isUnsigned())
    return arith::ExtUIOp::create(b, loc, b.getI32Type(), signless);
  return arith::ExtSIOp::create(b, loc, b.getI32Type(), signless);
}

namespace {

/// saturate(round_half_even(x / scale) + zero_point).
struct QuantizeLinearLowering : public OpConversionPattern<QuantizeLinearOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(QuantizeLinearOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    MLIRContext *ctx = op.getContext();
    RankedTensorType type = op.getType();
    unsigned rank = type.getRank();
    auto zeroPointType = cast<IntegerType>(type.getElementType());
    bool isUnsigned = zeroPointType.isUnsigned();
    ArrayRef<int64_t> paramShape = op.getScale().getType().getShape();
    AffineMap paramMap = getParameterMap(paramShape, rank, op.getAxis(), ctx);
    SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(rank, ctx),
                                   paramMap, paramMap};
    Value result = buildGeneric(
        rewriter, op.getLoc(), type,
        ValueRange{adaptor.getInput(), adaptor.getScale(),
                   adaptor.getZeroPoint()},
        maps, [&](OpBuilder &b, Location loc, ValueRange args) {
          Type f32 = b.getF32Type();
          Value x = args[0];
          if (!isa<FloatType>(x.getType()))
            x = arith::SIToFPOp::create(b, loc, f32, x);
          Value scaled = arith::DivFOp::create(b, loc, x, args[1]);
          Value rounded = math::RoundEvenOp::create(b, loc, scaled);
          Value zeroPoint = toSignless(b, loc, args[2]);
          zeroPoint =
              isUnsigned
                  ? Value(arith::UIToFPOp::create(b, loc, f32, zeroPoint))
                  : Value(arith::SIToFPOp::create(b, loc, f32, zeroPoint));
          Value shifted = arith::AddFOp::create(b, loc, rounded, zeroPoint);
          Value low = createConstant(b, loc, f32, isUnsigned ? 0.0 : -128.0);
          Value high = createConstant(b, loc, f32, isUnsigned ? 255.0 : 127.0);
          Value clamped = arith::MinimumFOp::create(
              b, loc, arith::MaximumFOp::create(b, loc, shifted, low), high);
          Type i8 = b.getI8Type();
          Value narrow =
              isUnsigned ? Value(arith::FPToUIOp::create(b, loc, i8, clamped))
                         : Value(arith::FPToSIOp::create(b, loc, i8, clamped));
          return fromSignless(b, loc, narrow, zeroPointType);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// (x - zero_point) * scale, the difference in i32.
struct DequantizeLinearLowering
    : public OpConversionPattern<DequantizeLinearOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(DequantizeLinearOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    MLIRContext *ctx = op.getContext();
    RankedTensorType type = op.getType();
    unsigned rank = type.getRank();
    ArrayRef<int64_t> paramShape = op.getScale().getType().getShape();
    AffineMap paramMap = getParameterMap(paramShape, rank, op.getAxis(), ctx);
    SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(rank, ctx),
                                   paramMap, paramMap};
    Value result = buildGeneric(
        rewriter, op.getLoc(), type,
        ValueRange{adaptor.getInput(), adaptor.getScale(),
                   adaptor.getZeroPoint()},
        maps, [&](OpBuilder &b, Location loc, ValueRange args) {
          // Operands in order: the IR is deterministic.
          Value x = extendToI32(b, loc, args[0]);
          Value zeroPoint = extendToI32(b, loc, args[2]);
          Value difference = arith::SubIOp::create(b, loc, x, zeroPoint);
          Value real =
              arith::SIToFPOp::create(b, loc, b.getF32Type(), difference);
          return arith::MulFOp::create(b, loc, real, args[1]);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void tolinalg::populateQuantizationPatterns(RewritePatternSet &patterns) {
  patterns.add<QuantizeLinearLowering, DequantizeLinearLowering>(
      patterns.getContext());
}
