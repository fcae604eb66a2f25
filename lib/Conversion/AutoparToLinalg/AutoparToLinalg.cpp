//===- AutoparToLinalg.cpp - autopar compute ops to linalg ------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements autopar-convert-to-linalg: the ONNX-level compute ops
// of the autopar dialect become linalg (on tensors), tensor, arith and math
// ops with exact ONNX semantics. The op families live in Contraction.cpp,
// Elementwise.cpp, Normalization.cpp, Movement.cpp and ConvPool.cpp; this
// file holds the shared IR-building helpers and the pass.
//
//===----------------------------------------------------------------------===//

#include "Lowerings.h"

#include "autopar/Conversion/Passes.h"
#include "autopar/Dialect/Autopar/IR/Autopar.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::autopar {
#define GEN_PASS_DEF_CONVERTAUTOPARTOLINALGPASS
#include "autopar/Conversion/Passes.h.inc"
} // namespace mlir::autopar

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::tolinalg;

//===----------------------------------------------------------------------===//
// Scalars
//===----------------------------------------------------------------------===//

/// `type` as a signless integer when it is a signed or unsigned one, else
/// `type` itself: the type arith computes `type`'s values in.
static Type getArithType(Type type) {
  auto intType = dyn_cast<IntegerType>(type);
  if (!intType || intType.isSignless())
    return type;
  return IntegerType::get(type.getContext(), intType.getWidth());
}

Value tolinalg::createConstant(OpBuilder &b, Location loc, Type type,
                               double value) {
  if (auto floatType = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(floatType, value));
  auto intType = cast<IntegerType>(type);
  unsigned width = intType.getWidth();
  Type arithType = getArithType(type);
  if (width == 1)
    return arith::ConstantOp::create(
        b, loc, b.getIntegerAttr(type, value != 0.0 ? 1 : 0));
  // Clamp into the representable range of `type` (unsigned ones included)
  // before converting.
  bool isUnsigned = intType.isUnsigned();
  APInt low =
      isUnsigned ? APInt::getMinValue(width) : APInt::getSignedMinValue(width);
  APInt high =
      isUnsigned ? APInt::getMaxValue(width) : APInt::getSignedMaxValue(width);
  double lowValue =
      isUnsigned ? low.roundToDouble(false) : low.roundToDouble(true);
  double highValue =
      isUnsigned ? high.roundToDouble(false) : high.roundToDouble(true);
  APInt bits;
  if (value <= lowValue)
    bits = low;
  else if (value >= highValue)
    bits = high;
  else
    bits = APInt(width, static_cast<uint64_t>(static_cast<int64_t>(value)),
                 /*isSigned=*/true, /*implicitTrunc=*/true);
  Value constant =
      arith::ConstantOp::create(b, loc, IntegerAttr::get(arithType, bits));
  return fromSignless(b, loc, constant, type);
}

Value tolinalg::createLowest(OpBuilder &b, Location loc, Type type) {
  if (auto floatType = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(
        b, loc,
        b.getFloatAttr(floatType, APFloat::getInf(floatType.getFloatSemantics(),
                                                  /*Negative=*/true)));
  auto intType = cast<IntegerType>(type);
  unsigned width = intType.getWidth();
  APInt lowest = intType.isUnsigned() || width == 1
                     ? APInt::getMinValue(width)
                     : APInt::getSignedMinValue(width);
  Value constant = arith::ConstantOp::create(
      b, loc, IntegerAttr::get(getArithType(type), lowest));
  return fromSignless(b, loc, constant, type);
}

bool tolinalg::isUnsignedInteger(Type type) {
  auto intType = dyn_cast<IntegerType>(type);
  return intType && (intType.isUnsigned() || intType.getWidth() == 1);
}

Value tolinalg::createIntegerOp(
    OpBuilder &b, Location loc, Value lhs, Value rhs,
    function_ref<Value(OpBuilder &, Location, Value, Value, bool)> build) {
  Type type = lhs.getType();
  Value x = toSignless(b, loc, lhs);
  Value y = toSignless(b, loc, rhs);
  Value result = build(b, loc, x, y, isUnsignedInteger(type));
  return fromSignless(b, loc, result, type);
}

Value tolinalg::createAdd(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  if (isa<FloatType>(lhs.getType()))
    return arith::AddFOp::create(b, loc, lhs, rhs);
  return createIntegerOp(
      b, loc, lhs, rhs, [](OpBuilder &b, Location loc, Value x, Value y, bool) {
        return arith::AddIOp::create(b, loc, x, y).getResult();
      });
}

Value tolinalg::createSub(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  if (isa<FloatType>(lhs.getType()))
    return arith::SubFOp::create(b, loc, lhs, rhs);
  return createIntegerOp(
      b, loc, lhs, rhs, [](OpBuilder &b, Location loc, Value x, Value y, bool) {
        return arith::SubIOp::create(b, loc, x, y).getResult();
      });
}

Value tolinalg::createMul(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  if (isa<FloatType>(lhs.getType()))
    return arith::MulFOp::create(b, loc, lhs, rhs);
  return createIntegerOp(
      b, loc, lhs, rhs, [](OpBuilder &b, Location loc, Value x, Value y, bool) {
        return arith::MulIOp::create(b, loc, x, y).getResult();
      });
}

Value tolinalg::createDiv(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  if (isa<FloatType>(lhs.getType()))
    return arith::DivFOp::create(b, loc, lhs, rhs);
  return createIntegerOp(b, loc, lhs, rhs,
                         [](OpBuilder &b, Location loc, Value x, Value y,
                            bool isUnsigned) -> Value {
                           if (isUnsigned)
                             return arith::DivUIOp::create(b, loc, x, y);
                           return arith::DivSIOp::create(b, loc, x, y);
                         });
}

Value tolinalg::createMax(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  if (isa<FloatType>(lhs.getType()))
    return arith::MaximumFOp::create(b, loc, lhs, rhs);
  return createIntegerOp(b, loc, lhs, rhs,
                         [](OpBuilder &b, Location loc, Value x, Value y,
                            bool isUnsigned) -> Value {
                           if (isUnsigned)
                             return arith::MaxUIOp::create(b, loc, x, y);
                           return arith::MaxSIOp::create(b, loc, x, y);
                         });
}

Value tolinalg::createMin(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  if (isa<FloatType>(lhs.getType()))
    return arith::MinimumFOp::create(b, loc, lhs, rhs);
  return createIntegerOp(b, loc, lhs, rhs,
                         [](OpBuilder &b, Location loc, Value x, Value y,
                            bool isUnsigned) -> Value {
                           if (isUnsigned)
                             return arith::MinUIOp::create(b, loc, x, y);
                           return arith::MinSIOp::create(b, loc, x, y);
                         });
}

//===----------------------------------------------------------------------===//
// Tensors and linalg
//===----------------------------------------------------------------------===//

Value tolinalg::createEmpty(OpBuilder &b, Location loc, RankedTensorType type) {
  return tensor::EmptyOp::create(b, loc, type.getShape(),
                                 type.getElementType());
}

Value tolinalg::createFilled(OpBuilder &b, Location loc, RankedTensorType type,
                             Value value) {
  return linalg::FillOp::create(b, loc, ValueRange{value},
                                ValueRange{createEmpty(b, loc, type)})
      .getResult(0);
}

SmallVector<AffineExpr>
tolinalg::getBroadcastExprs(ArrayRef<int64_t> operandShape,
                            ArrayRef<int64_t> loopShape, unsigned firstLoop,
                            MLIRContext *ctx) {
  assert(operandShape.size() <= loopShape.size() &&
         "operand has more dimensions than the loops");
  SmallVector<AffineExpr> exprs;
  size_t lead = loopShape.size() - operandShape.size();
  for (auto [i, size] : llvm::enumerate(operandShape)) {
    if (size == 1 && loopShape[lead + i] != 1)
      exprs.push_back(getAffineConstantExpr(0, ctx));
    else
      exprs.push_back(getAffineDimExpr(firstLoop + lead + i, ctx));
  }
  return exprs;
}

AffineMap tolinalg::getBroadcastMap(ArrayRef<int64_t> operandShape,
                                    ArrayRef<int64_t> loopShape,
                                    MLIRContext *ctx) {
  return AffineMap::get(loopShape.size(), 0,
                        getBroadcastExprs(operandShape, loopShape, 0, ctx),
                        ctx);
}

AffineMap tolinalg::getDroppedDimsMap(unsigned rank, ArrayRef<int64_t> dropped,
                                      MLIRContext *ctx) {
  SmallVector<AffineExpr> exprs;
  for (unsigned d = 0; d < rank; ++d)
    if (!llvm::is_contained(dropped, static_cast<int64_t>(d)))
      exprs.push_back(getAffineDimExpr(d, ctx));
  return AffineMap::get(rank, 0, exprs, ctx);
}

Value tolinalg::buildGeneric(OpBuilder &b, Location loc,
                             RankedTensorType resultType, ValueRange operands,
                             ArrayRef<AffineMap> maps, ScalarFn body) {
  unsigned rank = resultType.getRank();
  SmallVector<AffineMap> allMaps(maps);
  allMaps.push_back(b.getMultiDimIdentityMap(rank));
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{resultType}, operands,
      ValueRange{createEmpty(b, loc, resultType)}, allMaps, iterators,
      [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        linalg::YieldOp::create(nested, nestedLoc,
                                body(nested, nestedLoc, args.drop_back()));
      });
  return generic.getResult(0);
}

Value tolinalg::buildBroadcastGeneric(OpBuilder &b, Location loc,
                                      RankedTensorType resultType,
                                      ValueRange operands, ScalarFn body) {
  SmallVector<AffineMap> maps;
  for (Value operand : operands)
    maps.push_back(
        getBroadcastMap(cast<RankedTensorType>(operand.getType()).getShape(),
                        resultType.getShape(), b.getContext()));
  return buildGeneric(b, loc, resultType, operands, maps, body);
}

Value tolinalg::buildReduction(OpBuilder &b, Location loc, Value input,
                               ArrayRef<int64_t> axes, Value init,
                               ScalarFn combine) {
  auto type = cast<RankedTensorType>(input.getType());
  unsigned rank = type.getRank();
  SmallVector<int64_t> shape;
  SmallVector<utils::IteratorType> iterators;
  for (unsigned d = 0; d < rank; ++d) {
    bool reduced = llvm::is_contained(axes, static_cast<int64_t>(d));
    iterators.push_back(reduced ? utils::IteratorType::reduction
                                : utils::IteratorType::parallel);
    if (!reduced)
      shape.push_back(type.getDimSize(d));
  }
  auto resultType = RankedTensorType::get(shape, init.getType());
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(rank),
                                 getDroppedDimsMap(rank, axes, b.getContext())};
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{resultType}, ValueRange{input},
      ValueRange{createFilled(b, loc, resultType, init)}, maps, iterators,
      [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        linalg::YieldOp::create(nested, nestedLoc,
                                combine(nested, nestedLoc, args));
      });
  return generic.getResult(0);
}

Type tolinalg::getSumAccumulatorType(Type element) {
  auto floatType = dyn_cast<FloatType>(element);
  if (!floatType)
    return element;
  MLIRContext *ctx = element.getContext();
  if (floatType.getWidth() == 32)
    return Float64Type::get(ctx);
  if (floatType.getWidth() == 16)
    return Float32Type::get(ctx);
  return element;
}

Value tolinalg::buildSum(OpBuilder &b, Location loc, Value input,
                         ArrayRef<int64_t> axes, bool squares) {
  Type element = getElementTypeOrSelf(input.getType());
  Type accumulator = getSumAccumulatorType(element);
  Value sum = buildReduction(
      b, loc, input, axes, createConstant(b, loc, accumulator, 0.0),
      [&](OpBuilder &nb, Location nl, ValueRange args) -> Value {
        Value x = args[0];
        if (accumulator != element)
          x = arith::ExtFOp::create(nb, nl, accumulator, x);
        if (squares)
          x = isa<FloatType>(accumulator)
                  ? arith::MulFOp::create(nb, nl, x, x).getResult()
                  : arith::MulIOp::create(nb, nl, x, x).getResult();
        return createAdd(nb, nl, args[1], x);
      });
  if (accumulator == element)
    return sum;
  auto sumType = cast<RankedTensorType>(sum.getType());
  return buildBroadcastGeneric(
      b, loc, RankedTensorType::get(sumType.getShape(), element),
      ValueRange{sum}, [&](OpBuilder &nb, Location nl, ValueRange args) {
        return arith::TruncFOp::create(nb, nl, element, args[0]).getResult();
      });
}

Value tolinalg::createReshape(OpBuilder &b, Location loc, Value value,
                              RankedTensorType type) {
  auto source = cast<RankedTensorType>(value.getType());
  if (source == type)
    return value;
  if (source.getRank() > type.getRank()) {
    if (auto reassociation = getReassociationIndicesForCollapse(
            source.getShape(), type.getShape()))
      return tensor::CollapseShapeOp::create(b, loc, type, value,
                                             *reassociation);
  } else if (source.getRank() < type.getRank()) {
    if (auto reassociation = getReassociationIndicesForCollapse(
            type.getShape(), source.getShape()))
      return tensor::ExpandShapeOp::create(b, loc, type, value, *reassociation);
  }
  // Shapes that do not nest: through a 1-D tensor.
  auto flatType =
      RankedTensorType::get({source.getNumElements()}, type.getElementType());
  Value flat = value;
  if (source.getRank() == 0)
    flat = tensor::ExpandShapeOp::create(b, loc, flatType, value,
                                         ArrayRef<ReassociationIndices>{});
  else if (source.getRank() > 1)
    flat = tensor::CollapseShapeOp::create(
        b, loc, flatType, value,
        ArrayRef<ReassociationIndices>{
            llvm::to_vector(llvm::seq<int64_t>(0, source.getRank()))});
  if (type.getRank() == 0)
    return tensor::CollapseShapeOp::create(b, loc, type, flat,
                                           ArrayRef<ReassociationIndices>{});
  if (type.getRank() == 1)
    return flat;
  return tensor::ExpandShapeOp::create(
      b, loc, type, flat,
      ArrayRef<ReassociationIndices>{
          llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()))});
}

//===----------------------------------------------------------------------===//
// Pass
//===----------------------------------------------------------------------===//

/// True when every operand and result of `op` is a statically shaped ranked
/// tensor.
static bool hasStaticTensors(Operation *op) {
  // Scalar operands (the block offsets of random_uniform) are not tensors.
  auto isStatic = [](Type type) {
    if (type.isSignlessInteger())
      return true;
    auto tensorType = dyn_cast<RankedTensorType>(type);
    return tensorType && tensorType.hasStaticShape();
  };
  return llvm::all_of(op->getOperandTypes(), isStatic) &&
         llvm::all_of(op->getResultTypes(), isStatic);
}

namespace {

/// Any compute op whose results all have no elements (a zero-size split
/// piece, an empty slice): `tensor.empty`, before the op's own lowering,
/// which may not expect empty tensors (e.g. slice offsets at the end).
struct EmptyResultLowering : public ConversionPattern {
  EmptyResultLowering(MLIRContext *ctx)
      : ConversionPattern(MatchAnyOpTypeTag(), /*benefit=*/2, ctx) {}

  LogicalResult
  matchAndRewrite(Operation *op, ArrayRef<Value> operands,
                  ConversionPatternRewriter &rewriter) const override {
    if (!isa<AutoparDialect>(op->getDialect()) ||
        isa<ConstantOp, WeightOp>(op) || op->getNumResults() == 0)
      return failure();
    SmallVector<Value> results;
    for (Type type : op->getResultTypes()) {
      auto tensorType = dyn_cast<RankedTensorType>(type);
      if (!tensorType || !tensorType.hasStaticShape() ||
          tensorType.getNumElements() != 0)
        return rewriter.notifyMatchFailure(op, "a result has elements");
      results.push_back(createEmpty(rewriter, op->getLoc(), tensorType));
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct ConstantLowering : public OpConversionPattern<ConstantOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ConstantOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto value = dyn_cast<TypedAttr>(op.getValue());
    if (!value)
      return rewriter.notifyMatchFailure(op, "value is not a typed attribute");
    auto type = cast<RankedTensorType>(op.getType());
    auto element = dyn_cast<IntegerType>(type.getElementType());
    if (!element || element.isSignless()) {
      rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, value);
      return success();
    }
    // arith has signless constants only (and folds rank-0 ones into scalar
    // constants): a ui8 constant is a signless one, recast element by
    // element.
    auto dense = dyn_cast<DenseIntElementsAttr>(op.getValue());
    if (!dense)
      return rewriter.notifyMatchFailure(op, "unsigned non-dense constant");
    Type signless = rewriter.getIntegerType(element.getWidth());
    Value bits = arith::ConstantOp::create(rewriter, op.getLoc(),
                                           dense.bitcast(signless));
    Value result =
        buildBroadcastGeneric(rewriter, op.getLoc(), type, bits,
                              [&](OpBuilder &b, Location loc, ValueRange args) {
                                return fromSignless(b, loc, args[0], element);
                              });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct ConvertAutoparToLinalgPass
    : public autopar::impl::ConvertAutoparToLinalgPassBase<
          ConvertAutoparToLinalgPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    WalkResult shapes = func.walk([](Operation *op) {
      if (!isa<AutoparDialect>(op->getDialect()) || hasStaticTensors(op))
        return WalkResult::advance();
      op->emitOpError() << "requires statically shaped tensors to lower to "
                           "linalg, got "
                        << FunctionType::get(op->getContext(),
                                             op->getOperandTypes(),
                                             op->getResultTypes());
      return WalkResult::interrupt();
    });
    if (shapes.wasInterrupted())
      return signalPassFailure();

    MLIRContext *ctx = &getContext();
    ConversionTarget target(*ctx);
    target.addIllegalDialect<AutoparDialect>();
    target.addLegalDialect<arith::ArithDialect, cf::ControlFlowDialect,
                           linalg::LinalgDialect, math::MathDialect,
                           scf::SCFDialect, tensor::TensorDialect>();
    // ui8 scalars enter and leave arith through these casts (toSignless).
    target.addLegalOp<UnrealizedConversionCastOp>();
    RewritePatternSet patterns(ctx);
    patterns.add<ConstantLowering, EmptyResultLowering>(ctx);
    populateContractionPatterns(patterns);
    populateElementwisePatterns(patterns);
    populateNormalizationPatterns(patterns);
    populateMovementPatterns(patterns);
    populateConvPoolPatterns(patterns);
    populateIndexingPatterns(patterns);
    populateQuantizationPatterns(patterns);
    populateRandomPatterns(patterns);
    if (failed(applyPartialConversion(func, target, std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
