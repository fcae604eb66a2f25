//===- Indexing.cpp - top-k and scatter ops to scf loops --------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Ops whose writes go to computed positions, which linalg on tensors cannot
// express: scatter_elements and scatter_nd (one scf.for over the updates
// carrying the result tensor, tensor.extract / tensor.insert at the wrapped,
// range-checked index) and top_k (per slice, an insertion of each element
// into the sorted k best, O(n k) per slice, in place once bufferized).
//
//===----------------------------------------------------------------------===//

#include "Lowerings.h"

#include "autopar/Dialect/Autopar/IR/Autopar.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::tolinalg;

/// An `arith.constant` of index type.
static Value indexConstant(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

/// The row-major coordinates in `shape` of the linear position `linear`.
static SmallVector<Value> delinearize(OpBuilder &b, Location loc, Value linear,
                                      ArrayRef<int64_t> shape) {
  SmallVector<Value> coords(shape.size());
  Value rest = linear;
  for (int64_t d = (int64_t)shape.size() - 1; d >= 0; --d) {
    if (d == 0) {
      coords[d] = rest;
      break;
    }
    Value size = indexConstant(b, loc, shape[d]);
    coords[d] = arith::RemUIOp::create(b, loc, rest, size);
    rest = arith::DivUIOp::create(b, loc, rest, size);
  }
  return coords;
}

/// The message of a failed index check: "OP 'node': index out of range
/// [-size, size) on axis AXIS of data TYPE".
static std::string indexMessage(Operation *op, StringRef name, int64_t size,
                                int64_t axis, Type dataType) {
  std::string message;
  llvm::raw_string_ostream os(message);
  os << name;
  if (std::string node = getOnnxNodeName(op); !node.empty())
    os << " '" << node << "'";
  os << ": index out of range [-" << size << ", " << size << ") on axis "
     << axis << " of data " << dataType;
  return message;
}

/// `old` combined with `update` by the scatter `reduction`.
static Value combineScatter(OpBuilder &b, Location loc, StringRef reduction,
                            Value old, Value update) {
  if (reduction == "add")
    return createAdd(b, loc, old, update);
  if (reduction == "mul")
    return createMul(b, loc, old, update);
  if (reduction == "max")
    return createMax(b, loc, old, update);
  if (reduction == "min")
    return createMin(b, loc, old, update);
  return update;
}

/// One scf.for over the `count` update positions carrying the result
/// (initially `data`); `target(b, loc, position)` gives the result
/// coordinates and the update's coordinates of a position.
static Value buildScatterLoop(
    OpBuilder &b, Location loc, Value data, Value updates, int64_t count,
    StringRef reduction,
    function_ref<std::pair<SmallVector<Value>, SmallVector<Value>>(
        OpBuilder &, Location, Value)>
        target) {
  if (count == 0)
    return data;
  auto loop = scf::ForOp::create(
      b, loc, indexConstant(b, loc, 0), indexConstant(b, loc, count),
      indexConstant(b, loc, 1), ValueRange{data},
      [&](OpBuilder &nb, Location l, Value iv, ValueRange iterArgs) {
        auto [resultCoords, updateCoords] = target(nb, l, iv);
        Value update = tensor::ExtractOp::create(nb, l, updates, updateCoords);
        Value value = update;
        if (reduction != "none") {
          Value old =
              tensor::ExtractOp::create(nb, l, iterArgs[0], resultCoords);
          value = combineScatter(nb, l, reduction, old, update);
        }
        Value next =
            tensor::InsertOp::create(nb, l, value, iterArgs[0], resultCoords);
        scf::YieldOp::create(nb, l, next);
      });
  return loop.getResult(0);
}

namespace {

/// scatter_elements: the update at position i goes to i with its axis
/// coordinate read from the indices.
struct ScatterElementsLowering
    : public OpConversionPattern<ScatterElementsOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ScatterElementsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value data = adaptor.getData(), indices = adaptor.getIndices(),
          updates = adaptor.getUpdates();
    auto dataType = cast<RankedTensorType>(data.getType());
    auto updatesType = cast<RankedTensorType>(updates.getType());
    Location loc = op.getLoc();
    int64_t axis = op.getAxis();
    int64_t size = dataType.getDimSize(axis);
    std::string message =
        indexMessage(op, "scatter_elements", size, axis, dataType);
    Value result = buildScatterLoop(
        rewriter, loc, data, updates, updatesType.getNumElements(),
        op.getReduction(), [&](OpBuilder &b, Location l, Value iv) {
          SmallVector<Value> coords =
              delinearize(b, l, iv, updatesType.getShape());
          Value index = tensor::ExtractOp::create(b, l, indices, coords);
          SmallVector<Value> target(coords);
          target[axis] = wrapAndCheckIndex(b, l, index, size, message);
          return std::make_pair(target, coords);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// scatter_nd: the update at [i..., j...] goes to [indices[i..., :]..., j...].
struct ScatterNDLowering : public OpConversionPattern<ScatterNDOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ScatterNDOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value data = adaptor.getData(), indices = adaptor.getIndices(),
          updates = adaptor.getUpdates();
    auto dataType = cast<RankedTensorType>(data.getType());
    auto indicesType = cast<RankedTensorType>(indices.getType());
    auto updatesType = cast<RankedTensorType>(updates.getType());
    Location loc = op.getLoc();
    int64_t batch = indicesType.getRank() - 1;
    int64_t k = indicesType.getDimSize(batch);
    SmallVector<std::string> messages;
    for (int64_t j = 0; j < k; ++j)
      messages.push_back(indexMessage(op, "scatter_nd", dataType.getDimSize(j),
                                      j, dataType));
    Value result = buildScatterLoop(
        rewriter, loc, data, updates, updatesType.getNumElements(),
        op.getReduction(), [&](OpBuilder &b, Location l, Value iv) {
          SmallVector<Value> coords =
              delinearize(b, l, iv, updatesType.getShape());
          SmallVector<Value> indexCoords(coords.begin(),
                                         coords.begin() + batch);
          indexCoords.push_back(Value());
          SmallVector<Value> target;
          for (int64_t j = 0; j < k; ++j) {
            indexCoords.back() = indexConstant(b, l, j);
            Value index = tensor::ExtractOp::create(b, l, indices, indexCoords);
            target.push_back(wrapAndCheckIndex(
                b, l, index, dataType.getDimSize(j), messages[j]));
          }
          target.append(coords.begin() + batch, coords.end());
          return std::make_pair(target, coords);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// top_k: for every slice along the axis (an scf.for over the other
/// dimensions), each element in turn is inserted into the results, which
/// hold the best so far sorted best first: its position is the number of
/// kept elements that beat it (an earlier equal element beats it), the kept
/// ones after it move down one place and the last falls off.
struct TopKLowering : public OpConversionPattern<TopKOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(TopKOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value input = adaptor.getInput();
    auto inputType = cast<RankedTensorType>(input.getType());
    auto valuesType = cast<RankedTensorType>(op.getValues().getType());
    auto indicesType = cast<RankedTensorType>(op.getIndices().getType());
    Type element = inputType.getElementType();
    if (!element.isIntOrFloat())
      return rewriter.notifyMatchFailure(op, "unsupported element type");
    Location loc = op.getLoc();
    int64_t axis = op.getAxis(), k = op.getK();
    int64_t n = inputType.getDimSize(axis);
    bool largest = op.getLargest();
    Value values = createEmpty(rewriter, loc, valuesType);
    Value positions = createEmpty(rewriter, loc, indicesType);
    SmallVector<int64_t> outerShape(inputType.getShape());
    outerShape.erase(outerShape.begin() + axis);
    int64_t outer = 1;
    for (int64_t d : outerShape)
      outer *= d;
    if (k == 0 || outer == 0) {
      rewriter.replaceOp(op, {values, positions});
      return success();
    }

    // `a` (kept) beats `v` (new): strictly better, or equal (kept earlier).
    auto beats = [&](OpBuilder &b, Location l, Value a, Value v) -> Value {
      if (isa<FloatType>(element))
        return arith::CmpFOp::create(b, l,
                                     largest ? arith::CmpFPredicate::OGE
                                             : arith::CmpFPredicate::OLE,
                                     a, v);
      return arith::CmpIOp::create(b, l,
                                   largest ? arith::CmpIPredicate::sge
                                           : arith::CmpIPredicate::sle,
                                   a, v);
    };
    auto at = [&](ArrayRef<Value> outerCoords, Value pos) {
      SmallVector<Value> coords(outerCoords);
      coords.insert(coords.begin() + axis, pos);
      return coords;
    };

    Value zero = indexConstant(rewriter, loc, 0);
    Value one = indexConstant(rewriter, loc, 1);
    Value kValue = indexConstant(rewriter, loc, k);
    Value kLast = indexConstant(rewriter, loc, k - 1);
    auto slices = scf::ForOp::create(
        rewriter, loc, zero, indexConstant(rewriter, loc, outer), one,
        ValueRange{values, positions},
        [&](OpBuilder &b, Location l, Value o, ValueRange sliceArgs) {
          SmallVector<Value> outerCoords = delinearize(b, l, o, outerShape);
          auto scan = scf::ForOp::create(
              b, l, zero, indexConstant(b, l, n), one, sliceArgs,
              [&](OpBuilder &b, Location l, Value i, ValueRange kept) {
                Value v = tensor::ExtractOp::create(b, l, input,
                                                    at(outerCoords, i));
                Value count = arith::MinUIOp::create(b, l, i, kValue);
                // pos = the number of kept elements that beat v.
                auto count_ = scf::ForOp::create(
                    b, l, zero, count, one, ValueRange{zero},
                    [&](OpBuilder &b, Location l, Value j, ValueRange acc) {
                      Value a = tensor::ExtractOp::create(b, l, kept[0],
                                                          at(outerCoords, j));
                      Value step = arith::SelectOp::create(
                          b, l, beats(b, l, a, v), one, zero);
                      scf::YieldOp::create(
                          b, l, ValueRange{arith::AddIOp::create(
                                    b, l, acc[0], step)});
                    });
                Value pos = count_.getResult(0);
                Value fits = arith::CmpIOp::create(
                    b, l, arith::CmpIPredicate::ult, pos, kValue);
                auto insert = scf::IfOp::create(
                    b, l, fits,
                    [&](OpBuilder &b, Location l) {
                      // Move [pos, last) down to [pos + 1, last + 1), last
                      // = min(count, k - 1), from the end.
                      Value last = arith::MinUIOp::create(b, l, count, kLast);
                      Value moves = arith::SubIOp::create(b, l, last, pos);
                      auto shift = scf::ForOp::create(
                          b, l, zero, moves, one, kept,
                          [&](OpBuilder &b, Location l, Value t,
                              ValueRange bufs) {
                            Value to = arith::SubIOp::create(b, l, last, t);
                            Value from = arith::SubIOp::create(b, l, to, one);
                            SmallVector<Value> next;
                            for (Value buf : bufs) {
                              Value x = tensor::ExtractOp::create(
                                  b, l, buf, at(outerCoords, from));
                              next.push_back(tensor::InsertOp::create(
                                  b, l, x, buf, at(outerCoords, to)));
                            }
                            scf::YieldOp::create(b, l, next);
                          });
                      Value index = arith::IndexCastOp::create(
                          b, l, b.getI64Type(), i);
                      Value newValues = tensor::InsertOp::create(
                          b, l, v, shift.getResult(0), at(outerCoords, pos));
                      Value newPositions = tensor::InsertOp::create(
                          b, l, index, shift.getResult(1),
                          at(outerCoords, pos));
                      scf::YieldOp::create(
                          b, l, ValueRange{newValues, newPositions});
                    },
                    [&](OpBuilder &b, Location l) {
                      scf::YieldOp::create(b, l, kept);
                    });
                scf::YieldOp::create(b, l, insert.getResults());
              });
          scf::YieldOp::create(b, l, scan.getResults());
        });
    rewriter.replaceOp(op, slices.getResults());
    return success();
  }
};

} // namespace

void tolinalg::populateIndexingPatterns(RewritePatternSet &patterns) {
  patterns.add<ScatterElementsLowering, ScatterNDLowering, TopKLowering>(
      patterns.getContext());
}
