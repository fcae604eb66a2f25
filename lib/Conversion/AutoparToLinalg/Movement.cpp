//===- Movement.cpp - data movement ops to linalg and tensor ----*- C++ -*-===//
//-*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Data movement: transpose (linalg.transpose), reshape (collapse/expand),
// expand (broadcasting generic), concat (insert_slice into tensor.empty),
// split and positive-step slices (extract_slice), negative-step slices (a
// generic reading `start + step * i`), gather (a generic extracting from the
// data tensor at a wrapped, range-checked index).
//
//===----------------------------------------------------------------------===//

#include "Lowerings.h"

#include "autopar/Dialect/Autopar/IR/Autopar.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::tolinalg;

Value tolinalg::wrapAndCheckIndex(OpBuilder &b, Location l, Value index,
                                   int64_t size, StringRef message) {
  Type i64 = b.getI64Type();
  unsigned width = index.getType().getIntOrFloatBitWidth();
  if (width < 64)
    index = arith::ExtSIOp::create(b, l, i64, index);
  else if (width > 64)
    index = arith::TruncIOp::create(b, l, i64, index);
  Value zero = createConstant(b, l, i64, 0.0);
  Value sizeValue = createConstant(b, l, i64, static_cast<double>(size));
  Value negative =
      arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, index, zero);
  Value wrapped = arith::SelectOp::create(
      b, l, negative, arith::AddIOp::create(b, l, index, sizeValue), index);
  // Unsigned: a wrapped index still negative is out of range too.
  Value inRange = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult,
                                        wrapped, sizeValue);
  cf::AssertOp::create(b, l, inRange, message);
  Value safe = arith::SelectOp::create(b, l, inRange, wrapped, zero);
  return arith::IndexCastOp::create(b, l, b.getIndexType(), safe);
}

namespace {

struct TransposeLowering : public OpConversionPattern<TransposeOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(TransposeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    Location loc = op.getLoc();
    auto transpose = linalg::TransposeOp::create(
        rewriter, loc, adaptor.getInput(), createEmpty(rewriter, loc, type),
        op.getPerm());
    rewriter.replaceOp(op, transpose->getResults());
    return success();
  }
};

struct ReshapeLowering : public OpConversionPattern<ReshapeOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ReshapeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, createReshape(rewriter, op.getLoc(),
                                         adaptor.getInput(), op.getType()));
    return success();
  }
};

struct ExpandLowering : public OpConversionPattern<ExpandOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ExpandOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value result = buildBroadcastGeneric(
        rewriter, op.getLoc(), op.getType(), ValueRange{adaptor.getInput()},
        [](OpBuilder &, Location, ValueRange args) { return args[0]; });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct ConcatLowering : public OpConversionPattern<ConcatOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ConcatOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    Location loc = op.getLoc();
    int64_t axis = op.getAxis();
    Value result = createEmpty(rewriter, loc, type);
    SmallVector<OpFoldResult> offsets(type.getRank(), rewriter.getIndexAttr(0));
    SmallVector<OpFoldResult> strides(type.getRank(), rewriter.getIndexAttr(1));
    int64_t offset = 0;
    for (Value input : adaptor.getInputs()) {
      auto inputType = cast<RankedTensorType>(input.getType());
      if (inputType.getNumElements() == 0)
        continue;
      offsets[axis] = rewriter.getIndexAttr(offset);
      SmallVector<OpFoldResult> sizes =
          getAsIndexOpFoldResult(rewriter.getContext(), inputType.getShape());
      result = tensor::InsertSliceOp::create(rewriter, loc, input, result,
                                             offsets, sizes, strides);
      offset += inputType.getDimSize(axis);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct SplitLowering : public OpConversionPattern<SplitOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(SplitOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    int64_t axis = op.getAxis();
    int64_t rank = op.getInput().getType().getRank();
    SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0));
    SmallVector<OpFoldResult> strides(rank, rewriter.getIndexAttr(1));
    SmallVector<Value> results;
    int64_t offset = 0;
    for (Type resultType : op.getResultTypes()) {
      auto type = cast<RankedTensorType>(resultType);
      offsets[axis] = rewriter.getIndexAttr(offset);
      results.push_back(tensor::ExtractSliceOp::create(
          rewriter, loc, type, adaptor.getInput(), offsets,
          getAsIndexOpFoldResult(rewriter.getContext(), type.getShape()),
          strides));
      offset += type.getDimSize(axis);
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// Positive steps: a strided `tensor.extract_slice`. A negative step: a
/// generic reading input element `start + step * i` in each dimension.
struct SliceLowering : public OpConversionPattern<SliceOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(SliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    ArrayRef<int64_t> starts = op.getStarts(), steps = op.getSteps();
    Value result;
    if (type.getNumElements() == 0) {
      result = createEmpty(rewriter, loc, type);
    } else if (llvm::all_of(steps, [](int64_t s) { return s > 0; })) {
      result = tensor::ExtractSliceOp::create(
          rewriter, loc, type, adaptor.getInput(),
          getAsIndexOpFoldResult(ctx, starts),
          getAsIndexOpFoldResult(ctx, type.getShape()),
          getAsIndexOpFoldResult(ctx, steps));
    } else {
      SmallVector<AffineExpr> exprs;
      for (auto [d, start, step] : llvm::enumerate(starts, steps))
        exprs.push_back(getAffineDimExpr(d, ctx) * step + start);
      result = buildGeneric(
          rewriter, loc, type, ValueRange{adaptor.getInput()},
          {AffineMap::get(type.getRank(), 0, exprs, ctx)},
          [](OpBuilder &, Location, ValueRange args) { return args[0]; });
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// A generic over the result: the index read from `indices` wraps when
/// negative, is checked against the axis size with `cf.assert` (a clean
/// runtime error once autopar-lower-asserts-to-runtime has run), clamped so
/// that no read can leave the data, and used with the result's other loop
/// indices to `tensor.extract` from the data.
struct GatherLowering : public OpConversionPattern<GatherOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(GatherOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value data = adaptor.getData(), indices = adaptor.getIndices();
    auto dataType = cast<RankedTensorType>(data.getType());
    auto indicesType = cast<RankedTensorType>(indices.getType());
    if (!isa<IntegerType>(indicesType.getElementType()))
      return rewriter.notifyMatchFailure(op, "indices must be integers");
    auto type = cast<RankedTensorType>(op.getType());
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    int64_t axis = op.getAxis();
    int64_t numIndexDims = indicesType.getRank();
    int64_t size = dataType.getDimSize(axis);

    std::string message;
    llvm::raw_string_ostream os(message);
    os << "gather";
    if (std::string node = getOnnxNodeName(op); !node.empty())
      os << " '" << node << "'";
    os << ": index out of range [-" << size << ", " << size << ") on axis "
       << axis << " of data " << dataType;

    SmallVector<AffineExpr> indexExprs;
    for (int64_t d = 0; d < numIndexDims; ++d)
      indexExprs.push_back(getAffineDimExpr(axis + d, ctx));
    AffineMap indexMap = AffineMap::get(type.getRank(), 0, indexExprs, ctx);
    Value result = buildGeneric(
        rewriter, loc, type, ValueRange{indices}, {indexMap},
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Type i64 = b.getI64Type();
          Value index = args[0];
          unsigned width = index.getType().getIntOrFloatBitWidth();
          if (width < 64)
            index = arith::ExtSIOp::create(b, l, i64, index);
          else if (width > 64)
            index = arith::TruncIOp::create(b, l, i64, index);
          Value zero = createConstant(b, l, i64, 0.0);
          Value sizeValue =
              createConstant(b, l, i64, static_cast<double>(size));
          Value negative = arith::CmpIOp::create(
              b, l, arith::CmpIPredicate::slt, index, zero);
          Value wrapped = arith::SelectOp::create(
              b, l, negative, arith::AddIOp::create(b, l, index, sizeValue),
              index);
          // Unsigned: a wrapped index still negative is out of range too.
          Value inRange = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult,
                                                wrapped, sizeValue);
          cf::AssertOp::create(b, l, inRange, message);
          Value safe = arith::SelectOp::create(b, l, inRange, wrapped, zero);
          SmallVector<Value> coords;
          for (int64_t d = 0; d < axis; ++d)
            coords.push_back(linalg::IndexOp::create(b, l, d));
          coords.push_back(
              arith::IndexCastOp::create(b, l, b.getIndexType(), safe));
          for (int64_t d = axis + 1; d < dataType.getRank(); ++d)
            coords.push_back(
                linalg::IndexOp::create(b, l, d - 1 + numIndexDims));
          return tensor::ExtractOp::create(b, l, data, coords);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// A generic over the result (the shape of the indices) extracting from the
/// data at the result's coordinates with the axis coordinate read from the
/// indices (wrapped, range-checked, clamped).
struct GatherElementsLowering : public OpConversionPattern<GatherElementsOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(GatherElementsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value data = adaptor.getData(), indices = adaptor.getIndices();
    auto dataType = cast<RankedTensorType>(data.getType());
    auto indicesType = cast<RankedTensorType>(indices.getType());
    if (!isa<IntegerType>(indicesType.getElementType()))
      return rewriter.notifyMatchFailure(op, "indices must be integers");
    auto type = cast<RankedTensorType>(op.getType());
    Location loc = op.getLoc();
    int64_t axis = op.getAxis();
    int64_t size = dataType.getDimSize(axis);

    std::string message;
    llvm::raw_string_ostream os(message);
    os << "gather_elements";
    if (std::string node = getOnnxNodeName(op); !node.empty())
      os << " '" << node << "'";
    os << ": index out of range [-" << size << ", " << size << ") on axis "
       << axis << " of data " << dataType;

    Value result = buildGeneric(
        rewriter, loc, type, ValueRange{indices},
        {rewriter.getMultiDimIdentityMap(type.getRank())},
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          SmallVector<Value> coords;
          for (int64_t d = 0; d < type.getRank(); ++d)
            coords.push_back(
                d == axis ? wrapAndCheckIndex(b, l, args[0], size, message)
                          : Value(linalg::IndexOp::create(b, l, d)));
          return tensor::ExtractOp::create(b, l, data, coords);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// A generic over the result: result coordinate i of a dimension reads
/// input coordinate i - begin, mapped into range by the mode (edge: clamped,
/// reflect: mirrored without repeating the edge, wrap: modulo the size);
/// in constant mode a coordinate out of range gives the pad value. Negative
/// pads crop through the same arithmetic.
struct PadLowering : public OpConversionPattern<PadOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(PadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value input = adaptor.getInput(), padValue = adaptor.getValue();
    auto inputType = cast<RankedTensorType>(input.getType());
    auto type = cast<RankedTensorType>(op.getType());
    Type element = type.getElementType();
    if (!element.isIntOrFloat())
      return rewriter.notifyMatchFailure(op, "unsupported element type");
    Location loc = op.getLoc();
    int64_t rank = type.getRank();
    ArrayRef<int64_t> pads = op.getPads();
    StringRef mode = op.getMode();
    bool constantMode = mode == "constant";

    // The scalar pad value (constant mode only).
    Value scalar;
    if (constantMode) {
      if (padValue) {
        auto valueType = cast<RankedTensorType>(padValue.getType());
        SmallVector<Value> zeros(
            valueType.getRank(),
            arith::ConstantIndexOp::create(rewriter, loc, 0));
        scalar = tensor::ExtractOp::create(rewriter, loc, padValue, zeros);
      } else {
        scalar = createConstant(rewriter, loc, element, 0.0);
      }
      // Nothing to read from an empty input: the result is all padding.
      if (inputType.getNumElements() == 0) {
        rewriter.replaceOp(op, createFilled(rewriter, loc, type, scalar));
        return success();
      }
    }

    Value result = buildGeneric(
        rewriter, loc, type, ValueRange{}, {},
        [&](OpBuilder &b, Location l, ValueRange) -> Value {
          auto cst = [&](int64_t v) -> Value {
            return arith::ConstantIndexOp::create(b, l, v);
          };
          Value inside;
          SmallVector<Value> coords;
          for (int64_t d = 0; d < rank; ++d) {
            int64_t size = inputType.getDimSize(d);
            Value i = linalg::IndexOp::create(b, l, d);
            if (pads[d] != 0)
              i = arith::SubIOp::create(b, l, i, cst(pads[d]));
            if (pads[d] == 0 && pads[rank + d] <= 0) {
              coords.push_back(i); // Always in range.
              continue;
            }
            Value coord;
            if (mode == "reflect" && size > 1) {
              // Period 2 (size - 1): 0 1 .. size-1 size-2 .. 1.
              int64_t period = 2 * (size - 1);
              Value m = arith::RemSIOp::create(b, l, i, cst(period));
              Value neg = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt,
                                                m, cst(0));
              m = arith::SelectOp::create(
                  b, l, neg, arith::AddIOp::create(b, l, m, cst(period)), m);
              Value high = arith::CmpIOp::create(
                  b, l, arith::CmpIPredicate::sge, m, cst(size));
              coord = arith::SelectOp::create(
                  b, l, high, arith::SubIOp::create(b, l, cst(period), m), m);
            } else if (mode == "wrap") {
              Value m = arith::RemSIOp::create(b, l, i, cst(size));
              Value neg = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt,
                                                m, cst(0));
              coord = arith::SelectOp::create(
                  b, l, neg, arith::AddIOp::create(b, l, m, cst(size)), m);
            } else {
              // edge (and reflect of a size-1 dimension) clamps; constant
              // clamps for a safe read and selects the value outside.
              coord = arith::MaxSIOp::create(
                  b, l, arith::MinSIOp::create(b, l, i, cst(size - 1)), cst(0));
              if (constantMode) {
                Value in = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                                 i, coord);
                inside = inside ? arith::AndIOp::create(b, l, inside, in) : in;
              }
            }
            coords.push_back(coord);
          }
          Value read = tensor::ExtractOp::create(b, l, input, coords);
          if (!inside)
            return read;
          return arith::SelectOp::create(b, l, inside, read, scalar);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void tolinalg::populateMovementPatterns(RewritePatternSet &patterns) {
  patterns.add<ConcatLowering, ExpandLowering, GatherElementsLowering,
               GatherLowering, PadLowering, ReshapeLowering, SliceLowering,
               SplitLowering, TransposeLowering>(patterns.getContext());
}
