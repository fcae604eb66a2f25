//===- Normalization.cpp - normalizations, reductions to linalg -*- C++ -*-===//
//-*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Reductions become reduction `linalg.generic`s into a filled init (the
// reduced dimensions dropped, then expanded back for keepdims); softmax and
// the normalizations combine reductions with parallel generics that read the
// reduced tensors through maps dropping the reduced dimensions. Softmax
// subtracts the maximum first (numerically stable), as ONNX's reference does.
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

static Value sumOver(OpBuilder &b, Location loc, Value input,
                     ArrayRef<int64_t> axes) {
  Type element = getElementTypeOrSelf(input.getType());
  return buildReduction(b, loc, input, axes,
                        createConstant(b, loc, element, 0.0),
                        [](OpBuilder &nb, Location nl, ValueRange args) {
                          return createAdd(nb, nl, args[1], args[0]);
                        });
}

static Value maxOver(OpBuilder &b, Location loc, Value input,
                     ArrayRef<int64_t> axes) {
  Type element = getElementTypeOrSelf(input.getType());
  return buildReduction(b, loc, input, axes, createLowest(b, loc, element),
                        [](OpBuilder &nb, Location nl, ValueRange args) {
                          return createMax(nb, nl, args[1], args[0]);
                        });
}

/// Number of elements of `type` along `axes`.
static int64_t countAlong(RankedTensorType type, ArrayRef<int64_t> axes) {
  int64_t count = 1;
  for (int64_t axis : axes)
    count *= type.getDimSize(axis);
  return count;
}

namespace {

//===----------------------------------------------------------------------===//
// Softmax / LogSoftmax
//===----------------------------------------------------------------------===//

/// m = max(x), e = exp(x - m), s = sum(e); softmax = e / s,
/// log_softmax = (x - m) - log(s), all along `axis`.
template <typename OpTy>
struct SoftmaxLowering : public OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value x = adaptor.getInput();
    auto type = cast<RankedTensorType>(x.getType());
    if (!isa<FloatType>(type.getElementType()))
      return rewriter.notifyMatchFailure(op, "softmax needs floats");
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    SmallVector<int64_t> axes = {static_cast<int64_t>(op.getAxis())};
    AffineMap identity = rewriter.getMultiDimIdentityMap(type.getRank());
    AffineMap reduced = getDroppedDimsMap(type.getRank(), axes, ctx);

    Value max = maxOver(rewriter, loc, x, axes);
    Value exp = buildGeneric(
        rewriter, loc, type, ValueRange{x, max}, {identity, reduced},
        [](OpBuilder &b, Location l, ValueRange args) -> Value {
          return math::ExpOp::create(
              b, l, arith::SubFOp::create(b, l, args[0], args[1]));
        });
    Value sum = sumOver(rewriter, loc, exp, axes);
    Value result;
    if constexpr (std::is_same_v<OpTy, SoftmaxOp>) {
      result = buildGeneric(
          rewriter, loc, type, ValueRange{exp, sum}, {identity, reduced},
          [](OpBuilder &b, Location l, ValueRange args) -> Value {
            return arith::DivFOp::create(b, l, args[0], args[1]);
          });
    } else {
      result = buildGeneric(
          rewriter, loc, type, ValueRange{x, max, sum},
          {identity, reduced, reduced},
          [](OpBuilder &b, Location l, ValueRange args) -> Value {
            Value shifted = arith::SubFOp::create(b, l, args[0], args[1]);
            return arith::SubFOp::create(b, l, shifted,
                                         math::LogOp::create(b, l, args[2]));
          });
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// LayerNorm / BatchNorm
//===----------------------------------------------------------------------===//

/// As ONNX's reference: mean = sum(x) / n, d = x - mean,
/// var = sum(d * d) / n, y = d * (1 / sqrt(var + epsilon)) * scale + bias.
struct LayerNormLowering : public OpConversionPattern<LayerNormOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(LayerNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value x = adaptor.getInput();
    auto type = cast<RankedTensorType>(x.getType());
    Type element = type.getElementType();
    if (!isa<FloatType>(element))
      return rewriter.notifyMatchFailure(op, "layer_norm needs floats");
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    int64_t rank = type.getRank();
    SmallVector<int64_t> axes =
        llvm::to_vector(llvm::seq<int64_t>(op.getAxis(), rank));
    AffineMap identity = rewriter.getMultiDimIdentityMap(rank);
    AffineMap reduced = getDroppedDimsMap(rank, axes, ctx);
    Value count = createConstant(rewriter, loc, element,
                                 static_cast<double>(countAlong(type, axes)));
    Value epsilon = createConstant(rewriter, loc, element,
                                   op.getEpsilon().convertToDouble());
    Value one = createConstant(rewriter, loc, element, 1.0);

    Value sum = sumOver(rewriter, loc, x, axes);
    Value centered = buildGeneric(
        rewriter, loc, type, ValueRange{x, sum}, {identity, reduced},
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value mean = arith::DivFOp::create(b, l, args[1], count);
          return arith::SubFOp::create(b, l, args[0], mean);
        });
    Value squares =
        buildReduction(rewriter, loc, centered, axes,
                       createConstant(rewriter, loc, element, 0.0),
                       [](OpBuilder &b, Location l, ValueRange args) -> Value {
                         Value square =
                             arith::MulFOp::create(b, l, args[0], args[0]);
                         return arith::AddFOp::create(b, l, args[1], square);
                       });

    SmallVector<Value> operands = {centered, squares, adaptor.getScale()};
    SmallVector<AffineMap> maps = {identity, reduced};
    maps.push_back(getBroadcastMap(
        cast<RankedTensorType>(adaptor.getScale().getType()).getShape(),
        type.getShape(), ctx));
    if (Value bias = adaptor.getBias()) {
      operands.push_back(bias);
      maps.push_back(
          getBroadcastMap(cast<RankedTensorType>(bias.getType()).getShape(),
                          type.getShape(), ctx));
    }
    Value result = buildGeneric(
        rewriter, loc, type, operands, maps,
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value variance = arith::DivFOp::create(b, l, args[1], count);
          Value invStd = arith::DivFOp::create(
              b, l, one,
              math::SqrtOp::create(
                  b, l, arith::AddFOp::create(b, l, variance, epsilon)));
          Value y = arith::MulFOp::create(
              b, l, arith::MulFOp::create(b, l, args[0], invStd), args[2]);
          if (args.size() > 3)
            y = arith::AddFOp::create(b, l, y, args[3]);
          return y;
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// y = (x - mean) / sqrt(var + epsilon) * scale + bias per channel (dim 1).
struct BatchNormLowering : public OpConversionPattern<BatchNormOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(BatchNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    Type element = type.getElementType();
    if (!isa<FloatType>(element))
      return rewriter.notifyMatchFailure(op, "batch_norm needs floats");
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    unsigned rank = type.getRank();
    AffineMap channel =
        AffineMap::get(rank, 0, {getAffineDimExpr(1, ctx)}, ctx);
    Value epsilon = createConstant(rewriter, loc, element,
                                   op.getEpsilon().convertToDouble());
    Value result = buildGeneric(
        rewriter, loc, type,
        ValueRange{adaptor.getInput(), adaptor.getScale(), adaptor.getBias(),
                   adaptor.getMean(), adaptor.getVar()},
        {rewriter.getMultiDimIdentityMap(rank), channel, channel, channel,
         channel},
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value centered = arith::SubFOp::create(b, l, args[0], args[3]);
          Value std = math::SqrtOp::create(
              b, l, arith::AddFOp::create(b, l, args[4], epsilon));
          Value normalized = arith::DivFOp::create(b, l, centered, std);
          return arith::AddFOp::create(
              b, l, arith::MulFOp::create(b, l, normalized, args[1]), args[2]);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// Sum, mean (sum / count; integer division for integers) or max (from -inf
/// for floats, the minimum for integers) over `axes`, then expanded to the
/// result type when `keepdims` keeps size-1 dimensions.
template <typename OpTy>
struct ReduceLowering : public OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value x = adaptor.getInput();
    auto type = cast<RankedTensorType>(x.getType());
    Type element = type.getElementType();
    if (!element.isIntOrFloat())
      return rewriter.notifyMatchFailure(op, "unsupported element type");
    Location loc = op.getLoc();
    ArrayRef<int64_t> axes = op.getAxes();
    Value result;
    if constexpr (std::is_same_v<OpTy, ReduceMaxOp>) {
      result = maxOver(rewriter, loc, x, axes);
    } else {
      result = sumOver(rewriter, loc, x, axes);
      if constexpr (std::is_same_v<OpTy, ReduceMeanOp>) {
        Value count =
            createConstant(rewriter, loc, element,
                           static_cast<double>(countAlong(type, axes)));
        result = buildBroadcastGeneric(
            rewriter, loc, cast<RankedTensorType>(result.getType()),
            ValueRange{result}, [&](OpBuilder &b, Location l, ValueRange args) {
              return createDiv(b, l, args[0], count);
            });
      }
    }
    rewriter.replaceOp(op, createReshape(rewriter, loc, result,
                                         cast<RankedTensorType>(op.getType())));
    return success();
  }
};

} // namespace

void tolinalg::populateNormalizationPatterns(RewritePatternSet &patterns) {
  patterns
      .add<BatchNormLowering, LayerNormLowering, ReduceLowering<ReduceMaxOp>,
           ReduceLowering<ReduceMeanOp>, ReduceLowering<ReduceSumOp>,
           SoftmaxLowering<LogSoftmaxOp>, SoftmaxLowering<SoftmaxOp>>(
          patterns.getContext());
}
