//===- AutoparToLinalg.cpp - autopar compute ops to linalg ------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements autopar-convert-to-linalg: the ONNX-level compute ops
// of the autopar dialect become linalg (on tensors), tensor and arith ops with
// exact ONNX semantics (numpy broadcasting, 1-D promotion of MatMul).
//
//===----------------------------------------------------------------------===//

#include "autopar/Conversion/Passes.h"
#include "autopar/Dialect/Autopar/IR/Autopar.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::autopar {
#define GEN_PASS_DEF_CONVERTAUTOPARTOLINALGPASS
#include "autopar/Conversion/Passes.h.inc"
} // namespace mlir::autopar

using namespace mlir;
using namespace mlir::autopar;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static Value createConstant(OpBuilder &b, Location loc, Type type,
                            double value) {
  if (isa<FloatType>(type))
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
  return arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(type, static_cast<int64_t>(value)));
}

static Value createAdd(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  if (isa<FloatType>(lhs.getType()))
    return arith::AddFOp::create(b, loc, lhs, rhs);
  return arith::AddIOp::create(b, loc, lhs, rhs);
}

static Value createMul(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  if (isa<FloatType>(lhs.getType()))
    return arith::MulFOp::create(b, loc, lhs, rhs);
  return arith::MulIOp::create(b, loc, lhs, rhs);
}

/// A tensor of `type` filled with zeros.
static Value createZeroTensor(OpBuilder &b, Location loc,
                              RankedTensorType type) {
  Value empty = tensor::EmptyOp::create(b, loc, type.getShape(),
                                        type.getElementType());
  Value zero = createConstant(b, loc, type.getElementType(), 0.0);
  return linalg::FillOp::create(b, loc, ValueRange{zero}, ValueRange{empty})
      .getResult(0);
}

/// Indexing map of an operand of shape `operandShape` broadcast (numpy rules:
/// aligned to the right) to the loops `firstLoop .. firstLoop + rank` of an
/// iteration space of `numLoops` loops whose sizes are `loopShape`. A size-1
/// dimension against a larger loop reads index 0.
static SmallVector<AffineExpr>
getBroadcastExprs(ArrayRef<int64_t> operandShape, ArrayRef<int64_t> loopShape,
                  unsigned firstLoop, MLIRContext *ctx) {
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

/// True when every operand and result of `op` is a statically shaped ranked
/// tensor.
static bool hasStaticTensors(Operation *op) {
  auto isStatic = [](Type type) {
    auto tensorType = dyn_cast<RankedTensorType>(type);
    return tensorType && tensorType.hasStaticShape();
  };
  return llvm::all_of(op->getOperandTypes(), isStatic) &&
         llvm::all_of(op->getResultTypes(), isStatic);
}

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

namespace {

struct ConstantLowering : public OpConversionPattern<ConstantOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ConstantOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto value = dyn_cast<TypedAttr>(op.getValue());
    if (!value)
      return rewriter.notifyMatchFailure(op, "value is not a typed attribute");
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, value);
    return success();
  }
};

struct ReluLowering : public OpConversionPattern<ReluOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ReluOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    Location loc = op.getLoc();
    Value zero = createConstant(rewriter, loc, type.getElementType(), 0.0);
    Value init = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                         type.getElementType());
    AffineMap identity = rewriter.getMultiDimIdentityMap(type.getRank());
    SmallVector<utils::IteratorType> iterators(type.getRank(),
                                               utils::IteratorType::parallel);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{type}, ValueRange{adaptor.getInput()},
        ValueRange{init}, ArrayRef<AffineMap>{identity, identity}, iterators,
        [&](OpBuilder &b, Location nestedLoc, ValueRange args) {
          Value max =
              isa<FloatType>(args[0].getType())
                  ? Value(arith::MaximumFOp::create(b, nestedLoc, args[0],
                                                    zero))
                  : Value(arith::MaxSIOp::create(b, nestedLoc, args[0], zero));
          linalg::YieldOp::create(b, nestedLoc, max);
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

struct AddLowering : public OpConversionPattern<AddOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(AddOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    unsigned rank = type.getRank();
    SmallVector<AffineMap> maps;
    for (Value operand : {adaptor.getLhs(), adaptor.getRhs()}) {
      auto operandType = cast<RankedTensorType>(operand.getType());
      maps.push_back(AffineMap::get(
          rank, 0,
          getBroadcastExprs(operandType.getShape(), type.getShape(), 0, ctx),
          ctx));
    }
    maps.push_back(rewriter.getMultiDimIdentityMap(rank));
    Value init = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                         type.getElementType());
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::parallel);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{type},
        ValueRange{adaptor.getLhs(), adaptor.getRhs()}, ValueRange{init}, maps,
        iterators, [&](OpBuilder &b, Location nestedLoc, ValueRange args) {
          linalg::YieldOp::create(b, nestedLoc,
                                  createAdd(b, nestedLoc, args[0], args[1]));
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

struct MatMulLowering : public OpConversionPattern<MatMulOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(MatMulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value a = adaptor.getA(), b = adaptor.getB();
    auto aType = cast<RankedTensorType>(a.getType());
    auto bType = cast<RankedTensorType>(b.getType());
    auto type = cast<RankedTensorType>(op.getType());
    if (aType.getElementType() != type.getElementType() ||
        bType.getElementType() != type.getElementType())
      return rewriter.notifyMatchFailure(op, "mixed element types");
    Location loc = op.getLoc();
    Value init = createZeroTensor(rewriter, loc, type);

    // Loops: broadcast batch dimensions, m (unless A is a vector), the
    // reduction k, then n (unless B is a vector). With k outside n the
    // innermost loop of the lowered nest walks rows of B and of the result
    // contiguously, which LLVM vectorizes.
    MLIRContext *ctx = rewriter.getContext();
    bool hasM = aType.getRank() >= 2, hasN = bType.getRank() >= 2;
    ArrayRef<int64_t> aBatch =
        aType.getShape().drop_back(std::min<int64_t>(aType.getRank(), 2));
    ArrayRef<int64_t> bBatch =
        bType.getShape().drop_back(std::min<int64_t>(bType.getRank(), 2));
    ArrayRef<int64_t> batch = type.getShape().drop_back(hasM + hasN);
    unsigned numBatch = batch.size();
    unsigned m = numBatch, k = numBatch + hasM, n = k + 1;
    unsigned numLoops = n + hasN;

    SmallVector<AffineExpr> aExprs = getBroadcastExprs(aBatch, batch, 0, ctx);
    if (hasM)
      aExprs.push_back(getAffineDimExpr(m, ctx));
    aExprs.push_back(getAffineDimExpr(k, ctx));
    SmallVector<AffineExpr> bExprs = getBroadcastExprs(bBatch, batch, 0, ctx);
    bExprs.push_back(getAffineDimExpr(k, ctx));
    if (hasN)
      bExprs.push_back(getAffineDimExpr(n, ctx));
    SmallVector<AffineExpr> outExprs;
    for (unsigned i = 0; i < numBatch; ++i)
      outExprs.push_back(getAffineDimExpr(i, ctx));
    if (hasM)
      outExprs.push_back(getAffineDimExpr(m, ctx));
    if (hasN)
      outExprs.push_back(getAffineDimExpr(n, ctx));

    SmallVector<AffineMap> maps = {AffineMap::get(numLoops, 0, aExprs, ctx),
                                   AffineMap::get(numLoops, 0, bExprs, ctx),
                                   AffineMap::get(numLoops, 0, outExprs, ctx)};
    SmallVector<utils::IteratorType> iterators(numLoops,
                                               utils::IteratorType::parallel);
    iterators[k] = utils::IteratorType::reduction;
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{type}, ValueRange{a, b}, ValueRange{init},
        maps, iterators,
        [&](OpBuilder &builder, Location nestedLoc, ValueRange args) {
          Value product = createMul(builder, nestedLoc, args[0], args[1]);
          linalg::YieldOp::create(builder, nestedLoc,
                                  createAdd(builder, nestedLoc, args[2],
                                            product));
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

struct GemmLowering : public OpConversionPattern<GemmOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(GemmOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    Type elementType = type.getElementType();
    double alpha = op.getAlpha().convertToDouble();
    double beta = op.getBeta().convertToDouble();
    if (!isa<FloatType>(elementType) && (alpha != 1.0 || beta != 1.0))
      return rewriter.notifyMatchFailure(
          op, "alpha and beta other than 1 need a float element type");
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    // Loops (m, k, n): see MatMulLowering for why k is not innermost.
    AffineExpr m = getAffineDimExpr(0, ctx), k = getAffineDimExpr(1, ctx),
               n = getAffineDimExpr(2, ctx);
    AffineMap outMap = AffineMap::get(3, 0, {m, n}, ctx);
    auto parallel = utils::IteratorType::parallel;

    // Init: beta * C broadcast to M x N, or zeros.
    Value init;
    if (Value c = adaptor.getC()) {
      auto cType = cast<RankedTensorType>(c.getType());
      AffineMap cMap = AffineMap::get(
          2, 0, getBroadcastExprs(cType.getShape(), type.getShape(), 0, ctx),
          ctx);
      Value empty = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                            elementType);
      Value betaValue =
          beta == 1.0 ? Value() : createConstant(rewriter, loc, elementType,
                                                 beta);
      init = linalg::GenericOp::create(
                 rewriter, loc, TypeRange{type}, ValueRange{c},
                 ValueRange{empty},
                 ArrayRef<AffineMap>{cMap, rewriter.getMultiDimIdentityMap(2)},
                 {parallel, parallel},
                 [&](OpBuilder &b, Location nestedLoc, ValueRange args) {
                   Value scaled = betaValue ? createMul(b, nestedLoc, args[0],
                                                        betaValue)
                                            : args[0];
                   linalg::YieldOp::create(b, nestedLoc, scaled);
                 })
                 .getResult(0);
    } else {
      init = createZeroTensor(rewriter, loc, type);
    }

    // Accumulate alpha * op(A) * op(B).
    SmallVector<AffineExpr> aExprs = {m, k}, bExprs = {k, n};
    if (op.getTransA())
      std::swap(aExprs[0], aExprs[1]);
    if (op.getTransB())
      std::swap(bExprs[0], bExprs[1]);
    AffineMap aMap = AffineMap::get(3, 0, aExprs, ctx);
    AffineMap bMap = AffineMap::get(3, 0, bExprs, ctx);
    Value alphaValue =
        alpha == 1.0 ? Value() : createConstant(rewriter, loc, elementType,
                                                alpha);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{type},
        ValueRange{adaptor.getA(), adaptor.getB()}, ValueRange{init},
        ArrayRef<AffineMap>{aMap, bMap, outMap},
        {parallel, utils::IteratorType::reduction, parallel},
        [&](OpBuilder &b, Location nestedLoc, ValueRange args) {
          Value lhs =
              alphaValue ? createMul(b, nestedLoc, alphaValue, args[0])
                         : args[0];
          Value product = createMul(b, nestedLoc, lhs, args[1]);
          linalg::YieldOp::create(b, nestedLoc,
                                  createAdd(b, nestedLoc, args[2], product));
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

struct ConvertAutoparToLinalgPass
    : public autopar::impl::ConvertAutoparToLinalgPassBase<ConvertAutoparToLinalgPass> {
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
    target.addLegalDialect<arith::ArithDialect, linalg::LinalgDialect,
                           tensor::TensorDialect>();
    RewritePatternSet patterns(ctx);
    patterns.add<AddLowering, ConstantLowering, GemmLowering, MatMulLowering,
                 ReluLowering>(ctx);
    if (failed(applyPartialConversion(func, target, std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
