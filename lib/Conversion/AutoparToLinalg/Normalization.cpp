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
  return buildSum(b, loc, input, axes);
}

static Value maxOver(OpBuilder &b, Location loc, Value input,
                     ArrayRef<int64_t> axes) {
  Type element = getElementTypeOrSelf(input.getType());
  return buildReduction(b, loc, input, axes, createLowest(b, loc, element),
                        [](OpBuilder &nb, Location nl, ValueRange args) {
                          return createMax(nb, nl, args[1], args[0]);
                        });
}

/// The highest value of `type`: +inf for floats, the maximum of integers.
static Value createHighest(OpBuilder &b, Location loc, Type type) {
  if (auto floatType = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(
        b, loc,
        b.getFloatAttr(floatType, APFloat::getInf(floatType.getFloatSemantics(),
                                                  /*Negative=*/false)));
  auto intType = cast<IntegerType>(type);
  unsigned width = intType.getWidth();
  APInt highest = intType.isUnsigned() || width == 1
                      ? APInt::getMaxValue(width)
                      : APInt::getSignedMaxValue(width);
  return arith::ConstantOp::create(b, loc, IntegerAttr::get(type, highest));
}

static Value minOver(OpBuilder &b, Location loc, Value input,
                     ArrayRef<int64_t> axes) {
  Type element = getElementTypeOrSelf(input.getType());
  return buildReduction(b, loc, input, axes, createHighest(b, loc, element),
                        [](OpBuilder &nb, Location nl, ValueRange args) {
                          return createMin(nb, nl, args[1], args[0]);
                        });
}

/// Applies `fn` to every element of `value`.
static Value mapElements(OpBuilder &b, Location loc, Value value, ScalarFn fn) {
  return buildBroadcastGeneric(b, loc, cast<RankedTensorType>(value.getType()),
                               ValueRange{value}, fn);
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
    Value squares = buildSum(rewriter, loc, centered, axes, /*squares=*/true);

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

/// The other reductions: min, product, L1 (sum of |x|), sum of squares, L2
/// (the square root of that), log of the sum, and log-sum-exp (the maximum
/// m taken out first: m + log(sum(exp(x - m))), with m = 0 when infinite,
/// so that no overflow occurs and infinities give what the formula does).
template <typename OpTy>
struct OtherReduceLowering : public OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value x = adaptor.getInput();
    auto type = cast<RankedTensorType>(x.getType());
    Type element = type.getElementType();
    constexpr bool floatOnly = std::is_same_v<OpTy, ReduceL2Op> ||
                               std::is_same_v<OpTy, ReduceLogSumOp> ||
                               std::is_same_v<OpTy, ReduceLogSumExpOp>;
    if (floatOnly ? !isa<FloatType>(element) : !element.isIntOrFloat())
      return rewriter.notifyMatchFailure(op, "unsupported element type");
    Location loc = op.getLoc();
    ArrayRef<int64_t> axes = op.getAxes();
    Value zero = createConstant(rewriter, loc, element, 0.0);
    auto sumOf = [&](ScalarFn term) {
      return buildReduction(rewriter, loc, x, axes, zero,
                            [&](OpBuilder &b, Location l, ValueRange args) {
                              return createAdd(b, l, args[1],
                                               term(b, l, args.take_front()));
                            });
    };
    auto square = [](OpBuilder &b, Location l, ValueRange args) {
      return createMul(b, l, args[0], args[0]);
    };
    Value result;
    if constexpr (std::is_same_v<OpTy, ReduceMinOp>) {
      result = minOver(rewriter, loc, x, axes);
    } else if constexpr (std::is_same_v<OpTy, ReduceProdOp>) {
      result = buildReduction(rewriter, loc, x, axes,
                              createConstant(rewriter, loc, element, 1.0),
                              [](OpBuilder &b, Location l, ValueRange args) {
                                return createMul(b, l, args[1], args[0]);
                              });
    } else if constexpr (std::is_same_v<OpTy, ReduceL1Op>) {
      result = sumOf([](OpBuilder &b, Location l, ValueRange args) -> Value {
        if (isa<FloatType>(args[0].getType()))
          return math::AbsFOp::create(b, l, args[0]);
        return math::AbsIOp::create(b, l, args[0]);
      });
    } else if constexpr (std::is_same_v<OpTy, ReduceSumSquareOp>) {
      result = sumOf(square);
    } else if constexpr (std::is_same_v<OpTy, ReduceL2Op>) {
      result = mapElements(rewriter, loc, sumOf(square),
                           [](OpBuilder &b, Location l, ValueRange args) {
                             return math::SqrtOp::create(b, l, args[0]);
                           });
    } else if constexpr (std::is_same_v<OpTy, ReduceLogSumOp>) {
      result = mapElements(rewriter, loc, sumOver(rewriter, loc, x, axes),
                           [](OpBuilder &b, Location l, ValueRange args) {
                             return math::LogOp::create(b, l, args[0]);
                           });
    } else {
      static_assert(std::is_same_v<OpTy, ReduceLogSumExpOp>);
      // m' = isinf(m) ? 0 : m, so that x - m' is never inf - inf.
      Value max = mapElements(
          rewriter, loc, maxOver(rewriter, loc, x, axes),
          [](OpBuilder &b, Location l, ValueRange args) -> Value {
            Value m = args[0];
            Type t = m.getType();
            Value isInf = arith::CmpFOp::create(
                b, l, arith::CmpFPredicate::OEQ, math::AbsFOp::create(b, l, m),
                createConstant(b, l, t, INFINITY));
            return arith::SelectOp::create(b, l, isInf,
                                           createConstant(b, l, t, 0.0), m);
          });
      AffineMap dropped =
          getDroppedDimsMap(type.getRank(), axes, rewriter.getContext());
      Value shifted = buildGeneric(
          rewriter, loc, type, ValueRange{x, max},
          {rewriter.getMultiDimIdentityMap(type.getRank()), dropped},
          [](OpBuilder &b, Location l, ValueRange args) -> Value {
            return math::ExpOp::create(
                b, l, arith::SubFOp::create(b, l, args[0], args[1]));
          });
      Value sum = sumOver(rewriter, loc, shifted, axes);
      result = buildBroadcastGeneric(
          rewriter, loc, cast<RankedTensorType>(sum.getType()),
          ValueRange{sum, max},
          [](OpBuilder &b, Location l, ValueRange args) -> Value {
            return arith::AddFOp::create(
                b, l, math::LogOp::create(b, l, args[0]), args[1]);
          });
    }
    rewriter.replaceOp(op, createReshape(rewriter, loc, result,
                                         cast<RankedTensorType>(op.getType())));
    return success();
  }
};

/// ArgMax / ArgMin: one reduction generic along the axis carrying the best
/// value and its index. A later element wins when strictly better (first
/// index) or better or equal (`select_last_index`); a NaN beats every
/// number, as in numpy.
template <typename OpTy>
struct ArgReduceLowering : public OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    constexpr bool isMax = std::is_same_v<OpTy, ArgMaxOp>;
    Value x = adaptor.getInput();
    auto type = cast<RankedTensorType>(x.getType());
    Type element = type.getElementType();
    if (!element.isIntOrFloat())
      return rewriter.notifyMatchFailure(op, "unsupported element type");
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    int64_t axis = op.getAxis();
    bool last = op.getSelectLastIndex();
    unsigned rank = type.getRank();
    SmallVector<int64_t> shape;
    SmallVector<utils::IteratorType> iterators;
    for (unsigned d = 0; d < rank; ++d) {
      iterators.push_back((int64_t)d == axis ? utils::IteratorType::reduction
                                             : utils::IteratorType::parallel);
      if ((int64_t)d != axis)
        shape.push_back(type.getDimSize(d));
    }
    auto valueType = RankedTensorType::get(shape, element);
    auto indexType = RankedTensorType::get(shape, rewriter.getI64Type());
    Value initValue =
        createFilled(rewriter, loc, valueType,
                     isMax ? createLowest(rewriter, loc, element)
                           : createHighest(rewriter, loc, element));
    Value initIndex =
        createFilled(rewriter, loc, indexType,
                     createConstant(rewriter, loc, rewriter.getI64Type(), 0.0));
    AffineMap dropped = getDroppedDimsMap(rank, {axis}, ctx);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{valueType, indexType}, ValueRange{x},
        ValueRange{initValue, initIndex},
        {rewriter.getMultiDimIdentityMap(rank), dropped, dropped}, iterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value v = args[0], best = args[1], bestIndex = args[2];
          Value better;
          if (isa<FloatType>(element)) {
            arith::CmpFPredicate strict =
                isMax ? arith::CmpFPredicate::OGT : arith::CmpFPredicate::OLT;
            arith::CmpFPredicate orEqual =
                isMax ? arith::CmpFPredicate::OGE : arith::CmpFPredicate::OLE;
            better =
                arith::CmpFOp::create(b, l, last ? orEqual : strict, v, best);
            Value vNaN =
                arith::CmpFOp::create(b, l, arith::CmpFPredicate::UNO, v, v);
            Value nanWins = vNaN;
            if (!last) {
              Value bestNumber = arith::CmpFOp::create(
                  b, l, arith::CmpFPredicate::ORD, best, best);
              nanWins = arith::AndIOp::create(b, l, vNaN, bestNumber);
            }
            better = arith::OrIOp::create(b, l, better, nanWins);
          } else {
            arith::CmpIPredicate strict =
                isMax ? arith::CmpIPredicate::sgt : arith::CmpIPredicate::slt;
            arith::CmpIPredicate orEqual =
                isMax ? arith::CmpIPredicate::sge : arith::CmpIPredicate::sle;
            better =
                arith::CmpIOp::create(b, l, last ? orEqual : strict, v, best);
          }
          Value index = arith::IndexCastOp::create(
              b, l, b.getI64Type(), linalg::IndexOp::create(b, l, axis));
          linalg::YieldOp::create(
              b, l,
              ValueRange{
                  arith::SelectOp::create(b, l, better, v, best),
                  arith::SelectOp::create(b, l, better, index, bestIndex)});
        });
    rewriter.replaceOp(op, createReshape(rewriter, loc, generic.getResult(1),
                                         cast<RankedTensorType>(op.getType())));
    return success();
  }
};

} // namespace

void tolinalg::populateNormalizationPatterns(RewritePatternSet &patterns) {
  patterns
      .add<BatchNormLowering, LayerNormLowering, ReduceLowering<ReduceMaxOp>,
           ReduceLowering<ReduceMeanOp>, ReduceLowering<ReduceSumOp>,
           SoftmaxLowering<LogSoftmaxOp>, SoftmaxLowering<SoftmaxOp>,
           OtherReduceLowering<ReduceMinOp>, OtherReduceLowering<ReduceProdOp>,
           OtherReduceLowering<ReduceL1Op>, OtherReduceLowering<ReduceL2Op>,
           OtherReduceLowering<ReduceLogSumOp>,
           OtherReduceLowering<ReduceLogSumExpOp>,
           OtherReduceLowering<ReduceSumSquareOp>, ArgReduceLowering<ArgMaxOp>,
           ArgReduceLowering<ArgMinOp>>(patterns.getContext());
}
