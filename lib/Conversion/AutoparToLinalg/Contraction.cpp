//===- Contraction.cpp - matmul, gemm and einsum to linalg ------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Contractions become one `linalg.generic` accumulating products into a
// zero-filled (or bias-filled) init. Loops are ordered so that the innermost
// loop of the lowered nest walks the result contiguously (as in the classic
// i-k-j matmul order), which LLVM vectorizes.
//
//===----------------------------------------------------------------------===//

#include "Lowerings.h"

#include "autopar/Dialect/Autopar/IR/Autopar.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

#include "llvm/ADT/MapVector.h"

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::tolinalg;

namespace {

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
    Value init =
        createFilled(rewriter, loc, type,
                     createConstant(rewriter, loc, type.getElementType(), 0.0));

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
          linalg::YieldOp::create(
              builder, nestedLoc,
              createAdd(builder, nestedLoc, args[2], product));
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
      Value betaValue = beta == 1.0
                            ? Value()
                            : createConstant(rewriter, loc, elementType, beta);
      init = buildBroadcastGeneric(
          rewriter, loc, type, ValueRange{c},
          [&](OpBuilder &b, Location nestedLoc, ValueRange args) {
            return betaValue ? createMul(b, nestedLoc, args[0], betaValue)
                             : args[0];
          });
    } else {
      init = createFilled(rewriter, loc, type,
                          createConstant(rewriter, loc, elementType, 0.0));
    }

    // Accumulate alpha * op(A) * op(B).
    SmallVector<AffineExpr> aExprs = {m, k}, bExprs = {k, n};
    if (op.getTransA())
      std::swap(aExprs[0], aExprs[1]);
    if (op.getTransB())
      std::swap(bExprs[0], bExprs[1]);
    AffineMap aMap = AffineMap::get(3, 0, aExprs, ctx);
    AffineMap bMap = AffineMap::get(3, 0, bExprs, ctx);
    Value alphaValue = alpha == 1.0
                           ? Value()
                           : createConstant(rewriter, loc, elementType, alpha);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{type},
        ValueRange{adaptor.getA(), adaptor.getB()}, ValueRange{init},
        ArrayRef<AffineMap>{aMap, bMap, outMap},
        {parallel, utils::IteratorType::reduction, parallel},
        [&](OpBuilder &b, Location nestedLoc, ValueRange args) {
          Value lhs = alphaValue ? createMul(b, nestedLoc, alphaValue, args[0])
                                 : args[0];
          Value product = createMul(b, nestedLoc, lhs, args[1]);
          linalg::YieldOp::create(b, nestedLoc,
                                  createAdd(b, nestedLoc, args[2], product));
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

/// Einsum: one loop per distinct letter. Output letters come first in output
/// order, except the last one, which goes after the summed letters (the
/// matmul order: `ij,jk->ik` loops i, j, k). A letter of size 1 in an operand
/// where other operands have a larger size broadcasts (index 0); a letter
/// repeated within one term reads a diagonal.
struct EinsumLowering : public OpConversionPattern<EinsumOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(EinsumOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<EinsumEquation> eq = parseEinsumEquation(op.getEquation());
    if (failed(eq) || eq->inputs.size() != adaptor.getInputs().size())
      return rewriter.notifyMatchFailure(op, "invalid equation");
    auto type = cast<RankedTensorType>(op.getType());

    // Letter sizes (the largest wins: size 1 broadcasts).
    llvm::MapVector<char, int64_t> sizes;
    for (auto [term, operand] : llvm::zip(eq->inputs, adaptor.getInputs())) {
      auto operandType = cast<RankedTensorType>(operand.getType());
      for (auto [c, size] : llvm::zip(term, operandType.getShape()))
        sizes[c] = std::max(sizes.lookup(c), size);
    }
    SmallVector<char> loops(eq->output.begin(), eq->output.end());
    SmallVector<char> summed;
    for (auto &[c, size] : sizes)
      if (eq->output.find(c) == std::string::npos)
        summed.push_back(c);
    if (!loops.empty() && !summed.empty()) {
      char last = loops.pop_back_val();
      llvm::append_range(loops, summed);
      loops.push_back(last);
    } else {
      llvm::append_range(loops, summed);
    }

    MLIRContext *ctx = rewriter.getContext();
    auto loopOf = [&](char c) {
      return getAffineDimExpr(llvm::find(loops, c) - loops.begin(), ctx);
    };
    SmallVector<AffineMap> maps;
    for (auto [term, operand] : llvm::zip(eq->inputs, adaptor.getInputs())) {
      auto operandType = cast<RankedTensorType>(operand.getType());
      SmallVector<AffineExpr> exprs;
      for (auto [c, size] : llvm::zip(term, operandType.getShape()))
        exprs.push_back(size == 1 && sizes[c] != 1
                            ? getAffineConstantExpr(0, ctx)
                            : loopOf(c));
      maps.push_back(AffineMap::get(loops.size(), 0, exprs, ctx));
    }
    SmallVector<AffineExpr> outExprs;
    for (char c : eq->output)
      outExprs.push_back(loopOf(c));
    maps.push_back(AffineMap::get(loops.size(), 0, outExprs, ctx));
    SmallVector<utils::IteratorType> iterators;
    for (char c : loops)
      iterators.push_back(llvm::is_contained(summed, c)
                              ? utils::IteratorType::reduction
                              : utils::IteratorType::parallel);

    Location loc = op.getLoc();
    Value init =
        createFilled(rewriter, loc, type,
                     createConstant(rewriter, loc, type.getElementType(), 0.0));
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{type}, adaptor.getInputs(), ValueRange{init},
        maps, iterators,
        [&](OpBuilder &b, Location nestedLoc, ValueRange args) {
          Value product = args.front();
          for (Value arg : args.drop_front().drop_back())
            product = createMul(b, nestedLoc, product, arg);
          linalg::YieldOp::create(
              b, nestedLoc, createAdd(b, nestedLoc, args.back(), product));
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

} // namespace

void tolinalg::populateContractionPatterns(RewritePatternSet &patterns) {
  patterns.add<EinsumLowering, GemmLowering, MatMulLowering>(
      patterns.getContext());
}
