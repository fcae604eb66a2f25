//===- Gradients.cpp - reverse-mode rules of the autopar ops --------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements GradientOpInterface for the ops that have a
// reverse-mode rule. Every vector-Jacobian product is a composition of
// autopar ops, so the backward pass is planned, partitioned and lowered like
// the forward pass:
//   - broadcasting operands get their gradient summed back to their shape
//     (reduce_sum with keepdims, then reshape);
//   - an embedding's gradient (Gather) is one-hot(indices)^T x dY, a
//     contraction whose index loop becomes a pending sum when it is split,
//     instead of a scatter whose writes conflict;
//   - Slice and Pad are each other's gradient, Concat and Split too;
//   - normalizations recompute their statistics from the saved input.
// The rules are attached to the ops as external models when the dialect
// loads (attachGradientModels), so the ODS op list stays one list.
//
//===----------------------------------------------------------------------===//

#include "autopar/Dialect/Autopar/IR/Autopar.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <cmath>
#include <limits>
#include <numeric>

using namespace mlir;
using namespace mlir::autopar;

namespace {

//===----------------------------------------------------------------------===//
// Builder of backward ops
//===----------------------------------------------------------------------===//

/// Builds autopar ops for the gradient of one forward op; every op it
/// creates is located at `grad.<node>` so that reports name its origin.
class GradBuilder {
public:
  GradBuilder(OpBuilder &b, Operation *forward) : b(b), forward(forward) {
    std::string node = getOnnxNodeName(forward);
    if (node.empty())
      node = forward->getName().stripDialect().str();
    std::string name = "grad." + node;
    loc = getOnnxNodeLoc(b.getContext(), name, {name});
  }

  static RankedTensorType typeOf(Value v) {
    return cast<RankedTensorType>(v.getType());
  }
  static ArrayRef<int64_t> shapeOf(Value v) { return typeOf(v).getShape(); }

  /// A rank-0 constant of `element` (a float type).
  Value scalar(Type element, double value) {
    auto type = RankedTensorType::get({}, element);
    return ConstantOp::create(
        b, loc, type,
        DenseElementsAttr::get(type, FloatAttr::get(element, value)));
  }
  /// A constant of `type` filled with `value`.
  Value splat(RankedTensorType type, double value) {
    return ConstantOp::create(
        b, loc, type,
        DenseElementsAttr::get(type,
                               FloatAttr::get(type.getElementType(), value)));
  }
  Value scalarLike(Value v, double value) {
    return scalar(typeOf(v).getElementType(), value);
  }

  /// An elementwise binary op with broadcasting; `element` replaces the
  /// element type of the result (comparisons).
  template <typename OpTy>
  Value binary(Value lhs, Value rhs, Type element = {}) {
    FailureOr<SmallVector<int64_t>> shape =
        broadcastShapes(shapeOf(lhs), shapeOf(rhs));
    assert(succeeded(shape) && "gradient operands broadcast");
    auto type = RankedTensorType::get(
        *shape, element ? element : typeOf(lhs).getElementType());
    return OpTy::create(b, loc, type, lhs, rhs);
  }
  Value add(Value l, Value r) { return binary<AddOp>(l, r); }
  Value sub(Value l, Value r) { return binary<SubOp>(l, r); }
  Value mul(Value l, Value r) { return binary<MulOp>(l, r); }
  Value div(Value l, Value r) { return binary<DivOp>(l, r); }
  Value mul(Value l, double r) { return mul(l, scalarLike(l, r)); }

  template <typename OpTy> Value unary(Value x) {
    return OpTy::create(b, loc, typeOf(x), x);
  }

  Value reshape(Value v, ArrayRef<int64_t> shape) {
    if (shapeOf(v) == shape)
      return v;
    return ReshapeOp::create(
        b, loc, RankedTensorType::get(shape, typeOf(v).getElementType()), v);
  }

  /// reduce_sum over `axes` with keepdims.
  Value sumKeep(Value v, ArrayRef<int64_t> axes) {
    if (axes.empty())
      return v;
    SmallVector<int64_t> shape(shapeOf(v));
    for (int64_t a : axes)
      shape[a] = 1;
    return ReduceSumOp::create(
        b, loc, RankedTensorType::get(shape, typeOf(v).getElementType()), v,
        b.getDenseI64ArrayAttr(axes), b.getBoolAttr(true));
  }

  /// The gradient `g` of a broadcast result, summed back to `target`'s shape.
  Value unbroadcast(Value g, RankedTensorType target) {
    ArrayRef<int64_t> from = shapeOf(g);
    ArrayRef<int64_t> to = target.getShape();
    if (from == to)
      return g;
    int64_t lead = from.size() - to.size();
    SmallVector<int64_t> axes;
    for (int64_t d = 0; d < (int64_t)from.size(); ++d)
      if (d < lead || (to[d - lead] == 1 && from[d] != 1))
        axes.push_back(d);
    return reshape(sumKeep(g, axes), to);
  }

  Value transpose(Value v, ArrayRef<int64_t> perm) {
    SmallVector<int64_t> shape;
    for (int64_t p : perm)
      shape.push_back(shapeOf(v)[p]);
    return TransposeOp::create(
        b, loc, RankedTensorType::get(shape, typeOf(v).getElementType()), v,
        b.getDenseI64ArrayAttr(perm));
  }
  /// Swaps the last two dimensions.
  Value transposeLast2(Value v) {
    int64_t rank = shapeOf(v).size();
    SmallVector<int64_t> perm(rank);
    std::iota(perm.begin(), perm.end(), 0);
    std::swap(perm[rank - 1], perm[rank - 2]);
    return transpose(v, perm);
  }

  Value matmul(Value lhs, Value rhs) {
    ArrayRef<int64_t> l = shapeOf(lhs), r = shapeOf(rhs);
    FailureOr<SmallVector<int64_t>> batch =
        broadcastShapes(l.drop_back(2), r.drop_back(2));
    assert(succeeded(batch) && "batch dimensions broadcast");
    SmallVector<int64_t> shape = *batch;
    shape.push_back(l[l.size() - 2]);
    shape.push_back(r.back());
    return MatMulOp::create(
        b, loc, RankedTensorType::get(shape, typeOf(lhs).getElementType()), lhs,
        rhs);
  }

  /// alpha * op(A) @ op(B) of two matrices.
  Value gemm(Value a, Value bm, bool transA, bool transB, double alpha = 1.0) {
    ArrayRef<int64_t> as = shapeOf(a), bs = shapeOf(bm);
    int64_t m = transA ? as[1] : as[0];
    int64_t n = transB ? bs[0] : bs[1];
    return GemmOp::create(
        b, loc, RankedTensorType::get({m, n}, typeOf(a).getElementType()), a,
        bm, Value(), b.getF32FloatAttr(alpha), b.getF32FloatAttr(1.0),
        b.getBoolAttr(transA), b.getBoolAttr(transB));
  }

  /// Zero gradient for a missing result gradient.
  Value orZero(Value g, Value like) { return g ? g : splat(typeOf(like), 0.0); }

  Value where(Value cond, Value x, Value y) {
    FailureOr<SmallVector<int64_t>> s1 =
        broadcastShapes(shapeOf(cond), shapeOf(x));
    FailureOr<SmallVector<int64_t>> s2 = broadcastShapes(*s1, shapeOf(y));
    return WhereOp::create(
        b, loc, RankedTensorType::get(*s2, typeOf(x).getElementType()), cond, x,
        y);
  }

  /// Pads (negative: crops) `v` by `pads` = [begin..., end...] with `value`
  /// (zeros when null).
  Value pad(Value v, ArrayRef<int64_t> pads, Value value = {}) {
    if (llvm::all_of(pads, [](int64_t p) { return p == 0; }))
      return v;
    SmallVector<int64_t> shape(shapeOf(v));
    for (size_t d = 0; d < shape.size(); ++d)
      shape[d] += pads[d] + pads[shape.size() + d];
    return PadOp::create(
        b, loc, RankedTensorType::get(shape, typeOf(v).getElementType()), v,
        value, b.getDenseI64ArrayAttr(pads), b.getStringAttr("constant"));
  }
  /// Pads of dimension `dim` only.
  Value padDim(Value v, int64_t dim, int64_t begin, int64_t end,
               Value value = {}) {
    int64_t rank = shapeOf(v).size();
    SmallVector<int64_t> pads(2 * rank, 0);
    pads[dim] = begin;
    pads[rank + dim] = end;
    return pad(v, pads, value);
  }
  /// Inserts `stride - 1` zeros between the elements of dimension `dim`.
  Value dilate(Value v, int64_t dim, int64_t stride) {
    if (stride == 1)
      return v;
    SmallVector<int64_t> shape(shapeOf(v));
    int64_t size = shape[dim];
    SmallVector<int64_t> split(shape);
    split.insert(split.begin() + dim + 1, 1);
    Value spread = padDim(reshape(v, split), dim + 1, 0, stride - 1);
    SmallVector<int64_t> merged(shape);
    merged[dim] = size * stride;
    return padDim(reshape(spread, merged), dim, 0, -(stride - 1));
  }
  /// Reverses the dimensions `dims`.
  Value flip(Value v, ArrayRef<int64_t> dims) {
    SmallVector<int64_t> starts(shapeOf(v).size(), 0);
    SmallVector<int64_t> steps(shapeOf(v).size(), 1);
    for (int64_t d : dims) {
      starts[d] = shapeOf(v)[d] - 1;
      steps[d] = -1;
    }
    return SliceOp::create(b, loc, typeOf(v), v, b.getDenseI64ArrayAttr(starts),
                           b.getDenseI64ArrayAttr(steps));
  }
  /// Elements `start + i * step` of dimension `dim`, `count` of them.
  Value strided(Value v, int64_t dim, int64_t start, int64_t step,
                int64_t count) {
    SmallVector<int64_t> shape(shapeOf(v));
    SmallVector<int64_t> starts(shape.size(), 0), steps(shape.size(), 1);
    starts[dim] = start;
    steps[dim] = step;
    shape[dim] = count;
    return SliceOp::create(
        b, loc, RankedTensorType::get(shape, typeOf(v).getElementType()), v,
        b.getDenseI64ArrayAttr(starts), b.getDenseI64ArrayAttr(steps));
  }
  /// Swaps dimensions 0 and 1.
  Value swap01(Value v) {
    SmallVector<int64_t> perm(shapeOf(v).size());
    std::iota(perm.begin(), perm.end(), 0);
    std::swap(perm[0], perm[1]);
    return transpose(v, perm);
  }
  /// An unpadded convolution of `x` [N, C, ...] with `w` [M, C / group,
  /// K...] in `group` groups.
  Value conv(Value x, Value w, ArrayRef<int64_t> strides,
             ArrayRef<int64_t> dilations, int64_t group = 1) {
    ArrayRef<int64_t> xs = shapeOf(x), ws = shapeOf(w);
    SmallVector<int64_t> shape = {xs[0], ws[0]};
    for (size_t i = 0; i < strides.size(); ++i)
      shape.push_back(
          (xs[2 + i] - (ws[2 + i] - 1) * dilations[i] - 1) / strides[i] + 1);
    return ConvOp::create(
        b, loc, RankedTensorType::get(shape, typeOf(x).getElementType()), x, w,
        Value(), b.getDenseI64ArrayAttr(strides),
        b.getDenseI64ArrayAttr(SmallVector<int64_t>(2 * strides.size(), 0)),
        b.getDenseI64ArrayAttr(dilations), b.getI64IntegerAttr(group));
  }
  /// Splits dimension 0 of `v` [G * A, B, ...] into groups and swaps each
  /// group's two leading dimensions: [G * B, A, ...], group by group.
  /// With one group this is `swap01`.
  Value swapWithinGroups(Value v, int64_t groups) {
    if (groups == 1)
      return swap01(v);
    ArrayRef<int64_t> vs = shapeOf(v);
    int64_t rank = vs.size();
    SmallVector<int64_t> split = {groups, vs[0] / groups, vs[1]};
    llvm::append_range(split, vs.drop_front(2));
    SmallVector<int64_t> perm = {0, 2, 1};
    for (int64_t d = 3; d <= rank; ++d)
      perm.push_back(d);
    SmallVector<int64_t> merged = {groups * vs[1], vs[0] / groups};
    llvm::append_range(merged, vs.drop_front(2));
    return reshape(transpose(reshape(v, split), perm), merged);
  }
  /// Moves the `groups` channel groups of `v` [N, G * A, ...] next to the
  /// batch and makes each group's channels the leading dimension:
  /// [A, G * N, ...], with the channel index of the result (g, n). With one
  /// group this is `swap01`.
  Value groupsToBatch(Value v, int64_t groups) {
    if (groups == 1)
      return swap01(v);
    ArrayRef<int64_t> vs = shapeOf(v);
    int64_t rank = vs.size();
    SmallVector<int64_t> split = {vs[0], groups, vs[1] / groups};
    llvm::append_range(split, vs.drop_front(2));
    SmallVector<int64_t> perm = {2, 1, 0};
    for (int64_t d = 3; d <= rank; ++d)
      perm.push_back(d);
    SmallVector<int64_t> merged = {vs[1] / groups, groups * vs[0]};
    llvm::append_range(merged, vs.drop_front(2));
    return reshape(transpose(reshape(v, split), perm), merged);
  }
  /// The gradient of the input of a convolution in `group` groups with
  /// weight `w` [M, C / group, K...], strides, begin pads and dilations,
  /// whose input had the spatial sizes `inputSizes`: the transposed
  /// convolution of `g`, in the same groups.
  Value convInputGrad(Value g, Value w, ArrayRef<int64_t> inputSizes,
                      ArrayRef<int64_t> strides, ArrayRef<int64_t> padsBegin,
                      ArrayRef<int64_t> dilations, int64_t group = 1) {
    int64_t spatial = strides.size();
    ArrayRef<int64_t> outSizes = shapeOf(g).drop_front(2);
    ArrayRef<int64_t> kernel = shapeOf(w).drop_front(2);
    for (int64_t i = 0; i < spatial; ++i)
      g = dilate(g, 2 + i, strides[i]);
    SmallVector<int64_t> pads(2 * (spatial + 2), 0);
    for (int64_t i = 0; i < spatial; ++i) {
      pads[2 + i] = (kernel[i] - 1) * dilations[i] - padsBegin[i];
      pads[spatial + 4 + i] =
          inputSizes[i] - (outSizes[i] - 1) * strides[i] - 1 + padsBegin[i];
    }
    g = pad(g, pads);
    SmallVector<int64_t> spatialDims;
    for (int64_t i = 0; i < spatial; ++i)
      spatialDims.push_back(2 + i);
    Value flipped = flip(swapWithinGroups(w, group), spatialDims);
    return conv(g, flipped, SmallVector<int64_t>(spatial, 1), dilations, group);
  }

  OpBuilder &b;
  Operation *forward;
  Location loc = UnknownLoc::get(b.getContext());
};

/// Normalizes a possibly negative `axis` of a rank-`rank` tensor.
static int64_t normalizeAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

/// The rule of one op: fills `grads` (one entry per operand, null where none).
template <typename OpTy>
using Rule = LogicalResult (*)(OpTy op, GradBuilder &gb, ValueRange dy,
                               ArrayRef<bool> wanted,
                               SmallVectorImpl<Value> &grads);

template <typename OpTy, Rule<OpTy> rule>
struct GradientModel
    : public GradientOpInterface::ExternalModel<GradientModel<OpTy, rule>,
                                                OpTy> {
  LogicalResult buildGradients(Operation *op, OpBuilder &builder,
                               ValueRange resultGrads, ArrayRef<bool> wanted,
                               SmallVectorImpl<Value> &operandGrads) const {
    GradBuilder gb(builder, op);
    SmallVector<Value> grads(op->getNumOperands());
    if (failed(rule(cast<OpTy>(op), gb, resultGrads, wanted, grads)))
      return failure();
    for (auto [i, g] : llvm::enumerate(grads))
      operandGrads.push_back(wanted[i] ? g : Value());
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Elementwise arithmetic (broadcasting)
//===----------------------------------------------------------------------===//

static LogicalResult addRule(AddOp op, GradBuilder &gb, ValueRange dy,
                             ArrayRef<bool> wanted,
                             SmallVectorImpl<Value> &grads) {
  if (wanted[0])
    grads[0] = gb.unbroadcast(dy[0], gb.typeOf(op.getLhs()));
  if (wanted[1])
    grads[1] = gb.unbroadcast(dy[0], gb.typeOf(op.getRhs()));
  return success();
}

static LogicalResult subRule(SubOp op, GradBuilder &gb, ValueRange dy,
                             ArrayRef<bool> wanted,
                             SmallVectorImpl<Value> &grads) {
  if (wanted[0])
    grads[0] = gb.unbroadcast(dy[0], gb.typeOf(op.getLhs()));
  if (wanted[1])
    grads[1] = gb.unbroadcast(gb.unary<NegOp>(dy[0]), gb.typeOf(op.getRhs()));
  return success();
}

static LogicalResult mulRule(MulOp op, GradBuilder &gb, ValueRange dy,
                             ArrayRef<bool> wanted,
                             SmallVectorImpl<Value> &grads) {
  if (wanted[0])
    grads[0] =
        gb.unbroadcast(gb.mul(dy[0], op.getRhs()), gb.typeOf(op.getLhs()));
  if (wanted[1])
    grads[1] =
        gb.unbroadcast(gb.mul(dy[0], op.getLhs()), gb.typeOf(op.getRhs()));
  return success();
}

static LogicalResult divRule(DivOp op, GradBuilder &gb, ValueRange dy,
                             ArrayRef<bool> wanted,
                             SmallVectorImpl<Value> &grads) {
  if (wanted[0])
    grads[0] =
        gb.unbroadcast(gb.div(dy[0], op.getRhs()), gb.typeOf(op.getLhs()));
  if (wanted[1]) {
    // d(a/b)/db = -(a/b)/b.
    Value g = gb.div(gb.mul(dy[0], op.getResult()), op.getRhs());
    grads[1] = gb.unbroadcast(gb.unary<NegOp>(g), gb.typeOf(op.getRhs()));
  }
  return success();
}

/// x^p with a constant (splat) exponent p.
static LogicalResult powRule(PowOp op, GradBuilder &gb, ValueRange dy,
                             ArrayRef<bool> wanted,
                             SmallVectorImpl<Value> &grads) {
  if (wanted[1])
    return op.emitOpError()
           << "has no gradient rule for its exponent; only a constant "
              "exponent is differentiable (node '"
           << getOnnxNodeName(op) << "')";
  if (!wanted[0])
    return success();
  auto constant = op.getRhs().getDefiningOp<ConstantOp>();
  auto value =
      constant ? dyn_cast<DenseElementsAttr>(constant.getValue()) : nullptr;
  if (!value || !value.isSplat() || !isa<FloatType>(value.getElementType()))
    return op.emitOpError() << "has a gradient rule only for a constant "
                               "float exponent (node '"
                            << getOnnxNodeName(op) << "')";
  double p = value.getSplatValue<APFloat>().convertToDouble();
  Value x = op.getLhs();
  Value local;
  if (p == 2.0)
    local = gb.mul(x, 2.0);
  else if (p == 1.0)
    local = gb.splat(gb.typeOf(x), 1.0);
  else
    local = gb.mul(gb.binary<PowOp>(x, gb.scalarLike(x, p - 1.0)), p);
  grads[0] = gb.unbroadcast(gb.mul(dy[0], local), gb.typeOf(x));
  return success();
}

static LogicalResult whereRule(WhereOp op, GradBuilder &gb, ValueRange dy,
                               ArrayRef<bool> wanted,
                               SmallVectorImpl<Value> &grads) {
  Value zero = gb.scalarLike(dy[0], 0.0);
  if (wanted[1])
    grads[1] = gb.unbroadcast(gb.where(op.getCondition(), dy[0], zero),
                              gb.typeOf(op.getX()));
  if (wanted[2])
    grads[2] = gb.unbroadcast(gb.where(op.getCondition(), zero, dy[0]),
                              gb.typeOf(op.getY()));
  return success();
}

static LogicalResult castRule(CastOp op, GradBuilder &gb, ValueRange dy,
                              ArrayRef<bool> wanted,
                              SmallVectorImpl<Value> &grads) {
  auto from = gb.typeOf(op.getInput());
  if (!wanted[0] || !isa<FloatType>(from.getElementType()))
    return success();
  if (!isa<FloatType>(gb.typeOf(op.getResult()).getElementType()))
    return success(); // float to integer: no gradient flows.
  grads[0] = dy[0].getType() == from
                 ? dy[0]
                 : Value(CastOp::create(gb.b, gb.loc, from, dy[0]));
  return success();
}

//===----------------------------------------------------------------------===//
// Unary functions: dy * f'(x), f' from the input or the saved result
//===----------------------------------------------------------------------===//

static LogicalResult negRule(NegOp op, GradBuilder &gb, ValueRange dy,
                             ArrayRef<bool>, SmallVectorImpl<Value> &grads) {
  grads[0] = gb.unary<NegOp>(dy[0]);
  return success();
}

static LogicalResult reluRule(ReluOp op, GradBuilder &gb, ValueRange dy,
                              ArrayRef<bool>, SmallVectorImpl<Value> &grads) {
  Value x = op.getInput();
  Value positive =
      gb.binary<GreaterOp>(x, gb.scalarLike(x, 0.0), gb.b.getI1Type());
  grads[0] = gb.where(positive, dy[0], gb.scalarLike(x, 0.0));
  return success();
}

/// Clip (ReLU6 and hardtanh as exported): dY passes where the input lies
/// strictly inside the bounds, as PyTorch's hardtanh backward.
static LogicalResult clipRule(ClipOp op, GradBuilder &gb, ValueRange dy,
                              ArrayRef<bool>, SmallVectorImpl<Value> &grads) {
  Value x = op.getInput(), g = dy[0];
  Value zero = gb.scalarLike(x, 0.0);
  if (std::optional<APFloat> min = op.getMin())
    g = gb.where(gb.binary<GreaterOp>(x,
                                      gb.scalarLike(x, min->convertToDouble()),
                                      gb.b.getI1Type()),
                 g, zero);
  if (std::optional<APFloat> max = op.getMax())
    g = gb.where(gb.binary<LessOp>(x, gb.scalarLike(x, max->convertToDouble()),
                                   gb.b.getI1Type()),
                 g, zero);
  grads[0] = g;
  return success();
}

static LogicalResult leakyReluRule(LeakyReluOp op, GradBuilder &gb,
                                   ValueRange dy, ArrayRef<bool>,
                                   SmallVectorImpl<Value> &grads) {
  Value x = op.getInput();
  Value positive =
      gb.binary<GreaterOp>(x, gb.scalarLike(x, 0.0), gb.b.getI1Type());
  double alpha = op.getAlpha().convertToDouble();
  grads[0] = gb.where(positive, dy[0], gb.mul(dy[0], alpha));
  return success();
}

static LogicalResult expRule(ExpOp op, GradBuilder &gb, ValueRange dy,
                             ArrayRef<bool>, SmallVectorImpl<Value> &grads) {
  grads[0] = gb.mul(dy[0], op.getResult());
  return success();
}

static LogicalResult logRule(LogOp op, GradBuilder &gb, ValueRange dy,
                             ArrayRef<bool>, SmallVectorImpl<Value> &grads) {
  grads[0] = gb.div(dy[0], op.getInput());
  return success();
}

static LogicalResult sqrtRule(SqrtOp op, GradBuilder &gb, ValueRange dy,
                              ArrayRef<bool>, SmallVectorImpl<Value> &grads) {
  grads[0] = gb.div(gb.mul(dy[0], 0.5), op.getResult());
  return success();
}

static LogicalResult reciprocalRule(ReciprocalOp op, GradBuilder &gb,
                                    ValueRange dy, ArrayRef<bool>,
                                    SmallVectorImpl<Value> &grads) {
  Value y = op.getResult();
  grads[0] = gb.unary<NegOp>(gb.mul(dy[0], gb.mul(y, y)));
  return success();
}

static LogicalResult tanhRule(TanhOp op, GradBuilder &gb, ValueRange dy,
                              ArrayRef<bool>, SmallVectorImpl<Value> &grads) {
  Value y = op.getResult();
  Value local = gb.sub(gb.scalarLike(y, 1.0), gb.mul(y, y));
  grads[0] = gb.mul(dy[0], local);
  return success();
}

static LogicalResult sigmoidRule(SigmoidOp op, GradBuilder &gb, ValueRange dy,
                                 ArrayRef<bool>,
                                 SmallVectorImpl<Value> &grads) {
  Value y = op.getResult();
  Value local = gb.mul(y, gb.sub(gb.scalarLike(y, 1.0), y));
  grads[0] = gb.mul(dy[0], local);
  return success();
}

/// d erf(x)/dx = 2/sqrt(pi) exp(-x^2).
static Value erfDerivative(GradBuilder &gb, Value x) {
  Value negSquare = gb.unary<NegOp>(gb.mul(x, x));
  return gb.mul(gb.unary<ExpOp>(negSquare), 2.0 / std::sqrt(M_PI));
}

static LogicalResult erfRule(ErfOp op, GradBuilder &gb, ValueRange dy,
                             ArrayRef<bool>, SmallVectorImpl<Value> &grads) {
  grads[0] = gb.mul(dy[0], erfDerivative(gb, op.getInput()));
  return success();
}

static LogicalResult absRule(AbsOp op, GradBuilder &gb, ValueRange dy,
                             ArrayRef<bool>, SmallVectorImpl<Value> &grads) {
  grads[0] = gb.mul(dy[0], gb.unary<SignOp>(op.getInput()));
  return success();
}

/// Exact GELU: x Phi(x), Phi(x) = (1 + erf(x/sqrt 2))/2; derivative
/// Phi(x) + x phi(x). The tanh approximation differentiates its formula.
static LogicalResult geluRule(GeluOp op, GradBuilder &gb, ValueRange dy,
                              ArrayRef<bool>, SmallVectorImpl<Value> &grads) {
  Value x = op.getInput();
  Value local;
  if (op.getApproximate() == "tanh") {
    // u = k (x + 0.044715 x^3), y = x (1 + tanh u) / 2;
    // y' = (1 + t)/2 + x (1 - t^2) k (1 + 3 * 0.044715 x^2) / 2.
    double k = std::sqrt(2.0 / M_PI);
    Value x2 = gb.mul(x, x);
    Value u = gb.mul(gb.add(x, gb.mul(gb.mul(x2, x), 0.044715)), k);
    Value t = gb.unary<TanhOp>(u);
    Value one = gb.scalarLike(x, 1.0);
    Value first = gb.mul(gb.add(one, t), 0.5);
    Value du = gb.mul(gb.add(one, gb.mul(x2, 3 * 0.044715)), k * 0.5);
    Value second = gb.mul(gb.mul(x, gb.sub(one, gb.mul(t, t))), du);
    local = gb.add(first, second);
  } else {
    Value erf = gb.unary<ErfOp>(gb.mul(x, 1.0 / std::sqrt(2.0)));
    Value cdf = gb.mul(gb.add(gb.scalarLike(x, 1.0), erf), 0.5);
    Value pdf = gb.mul(gb.unary<ExpOp>(gb.mul(gb.mul(x, x), -0.5)),
                       1.0 / std::sqrt(2.0 * M_PI));
    local = gb.add(cdf, gb.mul(x, pdf));
  }
  grads[0] = gb.mul(dy[0], local);
  return success();
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

/// numpy matmul: 1-D operands are promoted, batch dimensions broadcast. A 2-D
/// right operand (a weight) gets its gradient as one Gemm over the flattened
/// rows, not a batch of products summed afterwards.
static LogicalResult matmulRule(MatMulOp op, GradBuilder &gb, ValueRange dy,
                                ArrayRef<bool> wanted,
                                SmallVectorImpl<Value> &grads) {
  Value a = op.getA(), bv = op.getB();
  ArrayRef<int64_t> as = gb.shapeOf(a), bs = gb.shapeOf(bv);
  SmallVector<int64_t> a2(as), b2(bs);
  if (a2.size() == 1)
    a2.insert(a2.begin(), 1);
  if (b2.size() == 1)
    b2.push_back(1);
  Value pa = gb.reshape(a, a2), pb = gb.reshape(bv, b2);
  FailureOr<SmallVector<int64_t>> batch =
      broadcastShapes(ArrayRef(a2).drop_back(2), ArrayRef(b2).drop_back(2));
  if (failed(batch))
    return op.emitOpError() << "has operands whose batches do not broadcast";
  SmallVector<int64_t> yShape = *batch;
  yShape.push_back(a2[a2.size() - 2]);
  yShape.push_back(b2.back());
  Value g = gb.reshape(dy[0], yShape);
  int64_t m = a2[a2.size() - 2], n = b2.back();
  int64_t k = a2.back();
  bool rhsMatrix = b2.size() == 2;
  if (wanted[0]) {
    Value ga;
    if (rhsMatrix) {
      int64_t rows = gb.typeOf(g).getNumElements() / n;
      Value g2 = gb.reshape(g, {rows, n});
      SmallVector<int64_t> gaShape(yShape);
      gaShape.back() = k;
      ga = gb.reshape(gb.gemm(g2, pb, false, true), gaShape);
    } else {
      ga = gb.matmul(g, gb.transposeLast2(pb));
    }
    ga = gb.unbroadcast(
        ga, RankedTensorType::get(a2, gb.typeOf(a).getElementType()));
    grads[0] = gb.reshape(ga, as);
  }
  if (wanted[1]) {
    Value gbv;
    if (rhsMatrix) {
      // Broadcast A to the batch first when B's gradient sums over it.
      SmallVector<int64_t> aFull = *batch;
      aFull.push_back(m);
      aFull.push_back(k);
      Value af = pa;
      if (ArrayRef<int64_t>(aFull) != ArrayRef<int64_t>(a2))
        af = ExpandOp::create(
            gb.b, gb.loc,
            RankedTensorType::get(aFull, gb.typeOf(a).getElementType()), pa);
      int64_t rows = gb.typeOf(af).getNumElements() / k;
      gbv = gb.gemm(gb.reshape(af, {rows, k}), gb.reshape(g, {rows, n}), true,
                    false);
    } else {
      gbv = gb.matmul(gb.transposeLast2(pa), g);
      gbv = gb.unbroadcast(
          gbv, RankedTensorType::get(b2, gb.typeOf(bv).getElementType()));
    }
    grads[1] = gb.reshape(gbv, bs);
  }
  return success();
}

/// Y = alpha op(A) op(B) + beta C.
static LogicalResult gemmRule(GemmOp op, GradBuilder &gb, ValueRange dy,
                              ArrayRef<bool> wanted,
                              SmallVectorImpl<Value> &grads) {
  double alpha = op.getAlpha().convertToDouble();
  double beta = op.getBeta().convertToDouble();
  bool ta = op.getTransA(), tb = op.getTransB();
  Value a = op.getA(), bm = op.getB(), g = dy[0];
  if (wanted[0]) {
    // dA' = alpha g op(B)^T; dA = dA' or its transpose alpha op(B) g^T.
    grads[0] = ta ? gb.gemm(bm, g, tb, true, alpha)
                  : gb.gemm(g, bm, false, !tb, alpha);
  }
  if (wanted[1]) {
    // dB' = alpha op(A)^T g; dB = dB' or its transpose alpha g^T op(A).
    grads[1] =
        tb ? gb.gemm(g, a, true, ta, alpha) : gb.gemm(a, g, !ta, false, alpha);
  }
  if (op.getC() && wanted[2]) {
    Value gc = beta == 1.0 ? g : gb.mul(g, beta);
    grads[2] = gb.unbroadcast(gc, gb.typeOf(op.getC()));
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

static LogicalResult softmaxRule(SoftmaxOp op, GradBuilder &gb, ValueRange dy,
                                 ArrayRef<bool>,
                                 SmallVectorImpl<Value> &grads) {
  Value y = op.getResult();
  int64_t axis = normalizeAxis(op.getAxis(), gb.shapeOf(y).size());
  Value dot = gb.sumKeep(gb.mul(dy[0], y), {axis});
  grads[0] = gb.mul(y, gb.sub(dy[0], dot));
  return success();
}

static LogicalResult logSoftmaxRule(LogSoftmaxOp op, GradBuilder &gb,
                                    ValueRange dy, ArrayRef<bool>,
                                    SmallVectorImpl<Value> &grads) {
  Value y = op.getResult();
  int64_t axis = normalizeAxis(op.getAxis(), gb.shapeOf(y).size());
  Value total = gb.sumKeep(dy[0], {axis});
  grads[0] = gb.sub(dy[0], gb.mul(gb.unary<ExpOp>(y), total));
  return success();
}

/// Recomputes mean and 1/std over the normalized dimensions:
/// dX = rstd (dXhat - mean(dXhat) - Xhat mean(dXhat Xhat)), dXhat = dY scale.
static LogicalResult layerNormRule(LayerNormOp op, GradBuilder &gb,
                                   ValueRange dy, ArrayRef<bool> wanted,
                                   SmallVectorImpl<Value> &grads) {
  Value x = op.getInput();
  int64_t rank = gb.shapeOf(x).size();
  int64_t axis = normalizeAxis(op.getAxis(), rank);
  SmallVector<int64_t> axes;
  int64_t count = 1;
  for (int64_t d = axis; d < rank; ++d) {
    axes.push_back(d);
    count *= gb.shapeOf(x)[d];
  }
  double inv = 1.0 / double(count);
  auto mean = [&](Value v) { return gb.mul(gb.sumKeep(v, axes), inv); };
  Value centered = gb.sub(x, mean(x));
  Value var = mean(gb.mul(centered, centered));
  double eps = op.getEpsilon().convertToDouble();
  Value rstd = gb.unary<ReciprocalOp>(
      gb.unary<SqrtOp>(gb.add(var, gb.scalarLike(x, eps))));
  Value xhat = gb.mul(centered, rstd);
  Value g = dy[0];
  if (wanted[0]) {
    Value gxhat = gb.mul(g, op.getScale());
    Value inner = gb.sub(gb.sub(gxhat, mean(gxhat)),
                         gb.mul(xhat, mean(gb.mul(gxhat, xhat))));
    grads[0] = gb.mul(inner, rstd);
  }
  if (wanted[1])
    grads[1] = gb.unbroadcast(gb.mul(g, xhat), gb.typeOf(op.getScale()));
  if (op.getBias() && wanted[2])
    grads[2] = gb.unbroadcast(g, gb.typeOf(op.getBias()));
  return success();
}

/// Whether `v` is reduce_mean(`x`) over `axes`, with keepdims `keep`.
static bool isMeanOver(Value v, Value x, ArrayRef<int64_t> axes, bool keep) {
  auto mean = v.getDefiningOp<ReduceMeanOp>();
  return mean && mean.getInput() == x && mean.getAxes() == axes &&
         mean.getKeepdims() == keep;
}

/// Whether the mean and variance operands of `op` are the batch statistics
/// of its input X over `axes` (every dimension but the channels), as the
/// importer writes a training-mode BatchNormalization: mean =
/// reshape(reduce_mean(X, keepdims)), var = reduce_mean((X - m) * (X - m))
/// with m that kept mean.
static bool hasBatchStatistics(BatchNormOp op, ArrayRef<int64_t> axes) {
  Value x = op->getOperand(0);
  auto meanReshape = op->getOperand(3).getDefiningOp<ReshapeOp>();
  if (!meanReshape)
    return false;
  Value keptMean = meanReshape->getOperand(0);
  if (!isMeanOver(keptMean, x, axes, /*keep=*/true))
    return false;
  auto var = op->getOperand(4).getDefiningOp<ReduceMeanOp>();
  if (!var || var.getAxes() != axes || var.getKeepdims())
    return false;
  auto square = var.getInput().getDefiningOp<MulOp>();
  if (!square || square->getOperand(0) != square->getOperand(1))
    return false;
  auto centered = square->getOperand(0).getDefiningOp<SubOp>();
  return centered && centered->getOperand(0) == x &&
         centered->getOperand(1) == keptMean;
}

/// BatchNormalization with its statistics as operands: Y = (X - mean)
/// rstd scale + bias per channel (dimension 1), rstd = 1/sqrt(var + eps).
/// In inference mode the statistics are initializers and nothing asks for
/// their gradients. In training mode the importer computes them from X by
/// reductions; then dX is the closed form of the batch-statistics gradient,
/// dX = rstd (dXhat - mean(dXhat) - Xhat mean(dXhat Xhat)) with dXhat =
/// dY scale, and the statistics get no gradient of their own. (Chaining
/// through the reductions is the same function, but it multiplies the
/// rounding of sum(X - mean), which is zero only in exact arithmetic, by
/// rstd^3: with variances near eps, as in mobilenet_v2's depthwise blocks
/// at 2x2, that is a percent of the gradient.) Statistics computed any other
/// way chain through their producers.
static LogicalResult batchNormRule(BatchNormOp op, GradBuilder &gb,
                                   ValueRange dy, ArrayRef<bool> wanted,
                                   SmallVectorImpl<Value> &grads) {
  Value x = op->getOperand(0);
  ArrayRef<int64_t> shape = gb.shapeOf(x);
  int64_t rank = shape.size();
  if (rank < 2)
    return op.emitError() << "batch_norm gradient needs an input of rank >= "
                             "2 (N, C, ...), got rank "
                          << rank;
  int64_t channels = shape[1];
  for (unsigned i = 1; i < 5; ++i)
    if (gb.shapeOf(op->getOperand(i)) != ArrayRef<int64_t>{channels})
      return op.emitError()
             << "batch_norm gradient needs per-channel operands of shape ["
             << channels << "]; operand " << i << " has rank "
             << gb.shapeOf(op->getOperand(i)).size();
  SmallVector<int64_t> perChannel(rank, 1), others;
  perChannel[1] = channels;
  for (int64_t d = 0; d < rank; ++d)
    if (d != 1)
      others.push_back(d);
  auto broadcast = [&](Value v) { return gb.reshape(v, perChannel); };
  auto channelSum = [&](Value v) {
    return gb.reshape(gb.sumKeep(v, others), {channels});
  };
  double eps = op.getEpsilon().convertToDouble();
  Value var = op->getOperand(4);
  Value rstd = gb.unary<ReciprocalOp>(
      gb.unary<SqrtOp>(gb.add(var, gb.scalarLike(var, eps))));
  Value scale = broadcast(op->getOperand(1));
  Value centered = gb.sub(x, broadcast(op->getOperand(3)));
  Value g = dy[0];
  Value gScaled = gb.mul(g, scale);
  if (hasBatchStatistics(op, others)) {
    int64_t count = 1;
    for (int64_t d : others)
      count *= shape[d];
    auto channelMean = [&](Value v) {
      return gb.mul(gb.sumKeep(v, others), 1.0 / double(count));
    };
    Value xhat = gb.mul(centered, broadcast(rstd));
    if (wanted[0]) {
      Value inner = gb.sub(gb.sub(gScaled, channelMean(gScaled)),
                           gb.mul(xhat, channelMean(gb.mul(gScaled, xhat))));
      grads[0] = gb.mul(inner, broadcast(rstd));
    }
    if (wanted[1])
      grads[1] = channelSum(gb.mul(g, xhat));
    if (wanted[2])
      grads[2] = channelSum(g);
    return success();
  }
  Value direct = gb.mul(gScaled, broadcast(rstd));
  if (wanted[0])
    grads[0] = direct;
  if (wanted[1])
    grads[1] = channelSum(gb.mul(g, gb.mul(centered, broadcast(rstd))));
  if (wanted[2])
    grads[2] = channelSum(g);
  if (wanted[3])
    grads[3] = gb.mul(channelSum(direct), -1.0);
  if (wanted[4]) {
    Value rstd3 = gb.mul(rstd, gb.mul(rstd, rstd));
    grads[4] =
        gb.mul(gb.mul(channelSum(gb.mul(gScaled, centered)), rstd3), -0.5);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// dY reshaped to the keepdims shape, broadcast back to X's shape.
static Value expandReduced(GradBuilder &gb, Value g, Value x,
                           ArrayRef<int64_t> axes) {
  SmallVector<int64_t> kept(gb.shapeOf(x));
  for (int64_t a : axes)
    kept[a] = 1;
  g = gb.reshape(g, kept);
  return ExpandOp::create(gb.b, gb.loc, gb.typeOf(x), g);
}

static LogicalResult reduceSumRule(ReduceSumOp op, GradBuilder &gb,
                                   ValueRange dy, ArrayRef<bool>,
                                   SmallVectorImpl<Value> &grads) {
  grads[0] = expandReduced(gb, dy[0], op.getInput(), op.getAxes());
  return success();
}

static LogicalResult reduceMeanRule(ReduceMeanOp op, GradBuilder &gb,
                                    ValueRange dy, ArrayRef<bool>,
                                    SmallVectorImpl<Value> &grads) {
  int64_t count = 1;
  for (int64_t a : op.getAxes())
    count *= gb.shapeOf(op.getInput())[a];
  grads[0] = expandReduced(gb, gb.mul(dy[0], 1.0 / double(count)),
                           op.getInput(), op.getAxes());
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

static LogicalResult reshapeRule(ReshapeOp op, GradBuilder &gb, ValueRange dy,
                                 ArrayRef<bool>,
                                 SmallVectorImpl<Value> &grads) {
  grads[0] = gb.reshape(dy[0], gb.shapeOf(op.getInput()));
  return success();
}

static LogicalResult expandRule(ExpandOp op, GradBuilder &gb, ValueRange dy,
                                ArrayRef<bool>, SmallVectorImpl<Value> &grads) {
  grads[0] = gb.unbroadcast(dy[0], gb.typeOf(op.getInput()));
  return success();
}

static LogicalResult transposeRule(TransposeOp op, GradBuilder &gb,
                                   ValueRange dy, ArrayRef<bool>,
                                   SmallVectorImpl<Value> &grads) {
  ArrayRef<int64_t> perm = op.getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  grads[0] = gb.transpose(dy[0], inverse);
  return success();
}

/// dY placed back into zeros of X's shape (constant padding).
static Value padBack(GradBuilder &gb, Value g, Value x,
                     ArrayRef<int64_t> starts) {
  ArrayRef<int64_t> xs = gb.shapeOf(x), gs = gb.shapeOf(g);
  SmallVector<int64_t> pads(2 * xs.size());
  bool any = false;
  for (size_t d = 0; d < xs.size(); ++d) {
    pads[d] = starts[d];
    pads[xs.size() + d] = xs[d] - starts[d] - gs[d];
    any |= pads[d] != 0 || pads[xs.size() + d] != 0;
  }
  if (!any)
    return g;
  return PadOp::create(gb.b, gb.loc, gb.typeOf(x), g, Value(),
                       gb.b.getDenseI64ArrayAttr(pads),
                       gb.b.getStringAttr("constant"));
}

static LogicalResult sliceRule(SliceOp op, GradBuilder &gb, ValueRange dy,
                               ArrayRef<bool>, SmallVectorImpl<Value> &grads) {
  if (llvm::any_of(op.getSteps(), [](int64_t s) { return s != 1; }))
    return op.emitOpError() << "has a gradient rule only for unit steps (node '"
                            << getOnnxNodeName(op) << "')";
  grads[0] = padBack(gb, dy[0], op.getInput(), op.getStarts());
  return success();
}

static LogicalResult padRule(PadOp op, GradBuilder &gb, ValueRange dy,
                             ArrayRef<bool> wanted,
                             SmallVectorImpl<Value> &grads) {
  if (op.getValue() && wanted[1])
    return op.emitOpError() << "has no gradient rule for its pad value "
                               "(node '"
                            << getOnnxNodeName(op) << "')";
  ArrayRef<int64_t> pads = op.getPads();
  int64_t rank = gb.shapeOf(op.getInput()).size();
  if (op.getMode() != "constant" ||
      llvm::any_of(pads, [](int64_t p) { return p < 0; }))
    return op.emitOpError() << "has a gradient rule only for constant "
                               "padding without cropping (node '"
                            << getOnnxNodeName(op) << "')";
  SmallVector<int64_t> starts(pads.take_front(rank));
  ArrayRef<int64_t> xs = gb.shapeOf(op.getInput());
  grads[0] = SliceOp::create(
      gb.b, gb.loc, gb.typeOf(op.getInput()), dy[0],
      gb.b.getDenseI64ArrayAttr(starts),
      gb.b.getDenseI64ArrayAttr(SmallVector<int64_t>(xs.size(), 1)));
  return success();
}

static LogicalResult concatRule(ConcatOp op, GradBuilder &gb, ValueRange dy,
                                ArrayRef<bool> wanted,
                                SmallVectorImpl<Value> &grads) {
  int64_t axis = op.getAxis();
  int64_t offset = 0;
  int64_t rank = gb.shapeOf(op.getResult()).size();
  for (auto [i, input] : llvm::enumerate(op.getInputs())) {
    if (wanted[i]) {
      SmallVector<int64_t> starts(rank, 0);
      starts[axis] = offset;
      grads[i] = SliceOp::create(
          gb.b, gb.loc, gb.typeOf(input), dy[0],
          gb.b.getDenseI64ArrayAttr(starts),
          gb.b.getDenseI64ArrayAttr(SmallVector<int64_t>(rank, 1)));
    }
    offset += gb.shapeOf(input)[axis];
  }
  return success();
}

static LogicalResult splitRule(SplitOp op, GradBuilder &gb, ValueRange dy,
                               ArrayRef<bool>, SmallVectorImpl<Value> &grads) {
  SmallVector<Value> pieces;
  for (auto [g, r] : llvm::zip(dy, op.getResults()))
    pieces.push_back(gb.orZero(g, r));
  grads[0] = ConcatOp::create(gb.b, gb.loc, gb.typeOf(op.getInput()), pieces,
                              gb.b.getI64IntegerAttr(op.getAxis()));
  return success();
}

/// Gather along `axis`: dData = one-hot(indices)^T dY, contracted over the
/// index positions (a sum, so a split of the positions is a pending sum).
static LogicalResult gatherRule(GatherOp op, GradBuilder &gb, ValueRange dy,
                                ArrayRef<bool> wanted,
                                SmallVectorImpl<Value> &grads) {
  if (!wanted[0])
    return success();
  Value data = op.getData();
  Value indices = op.getIndices();
  ArrayRef<int64_t> ds = gb.shapeOf(data);
  int64_t axis = op.getAxis();
  int64_t vocab = ds[axis];
  int64_t positions = gb.typeOf(indices).getNumElements();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= ds[d];
  for (int64_t d = axis + 1; d < (int64_t)ds.size(); ++d)
    inner *= ds[d];
  MLIRContext *ctx = gb.b.getContext();
  Type i64 = IntegerType::get(ctx, 64);
  Type element = gb.typeOf(data).getElementType();

  Value column = gb.reshape(indices, {positions, 1});
  if (gb.typeOf(column).getElementType() != i64)
    column = CastOp::create(gb.b, gb.loc,
                            RankedTensorType::get({positions, 1}, i64), column);
  // Negative indices count from the end.
  auto scalarI64 = RankedTensorType::get({}, i64);
  auto i64Const = [&](int64_t v) {
    return ConstantOp::create(gb.b, gb.loc, scalarI64,
                              DenseElementsAttr::get(scalarI64, v));
  };
  Value negative =
      gb.binary<LessOp>(column, i64Const(0), IntegerType::get(ctx, 1));
  column = gb.where(negative, gb.add(column, i64Const(vocab)), column);
  SmallVector<int64_t> iota(vocab);
  std::iota(iota.begin(), iota.end(), 0);
  auto iotaType = RankedTensorType::get({vocab}, i64);
  Value classes = ConstantOp::create(
      gb.b, gb.loc, iotaType,
      DenseElementsAttr::get(iotaType, ArrayRef<int64_t>(iota)));
  Value hit = gb.binary<EqualOp>(column, classes, IntegerType::get(ctx, 1));
  Value onehot = CastOp::create(
      gb.b, gb.loc, RankedTensorType::get({positions, vocab}, element), hit);
  Value result;
  if (outer == 1) {
    Value g2 = gb.reshape(dy[0], {positions, inner});
    result = gb.gemm(onehot, g2, /*transA=*/true, /*transB=*/false);
  } else {
    Value g3 = gb.reshape(dy[0], {outer, positions, inner});
    result = EinsumOp::create(
        gb.b, gb.loc, RankedTensorType::get({outer, vocab, inner}, element),
        ValueRange{onehot, g3}, gb.b.getStringAttr("nv,pnq->pvq"));
  }
  grads[0] = gb.reshape(result, ds);
  return success();
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

/// Convolution in G groups (depthwise: G = C): dX is the transposed
/// convolution of dY in the same groups (dY dilated by the strides, padded,
/// with the flipped weight whose channels are swapped within each group);
/// dW is a convolution in G groups of X (each group's channels as batch,
/// (group, image) as channels) with dY (batch as channels) whose stride is
/// the dilation and whose dilation is the stride.
static LogicalResult convRule(ConvOp op, GradBuilder &gb, ValueRange dy,
                              ArrayRef<bool> wanted,
                              SmallVectorImpl<Value> &grads) {
  int64_t group = op.getGroup();
  Value x = op.getInput(), w = op.getWeight(), g = dy[0];
  ArrayRef<int64_t> strides = op.getStrides(), dilations = op.getDilations();
  int64_t spatial = strides.size();
  ArrayRef<int64_t> padsBegin = op.getPads().take_front(spatial);
  ArrayRef<int64_t> inputSizes = gb.shapeOf(x).drop_front(2);
  ArrayRef<int64_t> kernel = gb.shapeOf(w).drop_front(2);
  ArrayRef<int64_t> outSizes = gb.shapeOf(g).drop_front(2);
  if (wanted[0])
    grads[0] = gb.convInputGrad(g, w, inputSizes, strides, padsBegin, dilations,
                                group);
  if (wanted[1]) {
    SmallVector<int64_t> pads(2 * (spatial + 2), 0);
    for (int64_t i = 0; i < spatial; ++i) {
      pads[2 + i] = padsBegin[i];
      pads[spatial + 4 + i] = (kernel[i] - 1) * dilations[i] +
                              (outSizes[i] - 1) * strides[i] + 1 -
                              inputSizes[i] - padsBegin[i];
    }
    Value r = gb.conv(gb.pad(gb.groupsToBatch(x, group), pads), gb.swap01(g),
                      dilations, strides, group);
    grads[1] = gb.swap01(r);
  }
  if (op.getBias() && wanted[2]) {
    SmallVector<int64_t> axes = {0};
    for (int64_t i = 0; i < spatial; ++i)
      axes.push_back(2 + i);
    grads[2] = gb.reshape(gb.sumKeep(g, axes), gb.shapeOf(op.getBias()));
  }
  return success();
}

/// Average pooling: dY spread evenly over each window, as the transposed
/// convolution with a constant kernel of 1/|window| per channel.
static LogicalResult averagePoolRule(AveragePoolOp op, GradBuilder &gb,
                                     ValueRange dy, ArrayRef<bool>,
                                     SmallVectorImpl<Value> &grads) {
  ArrayRef<int64_t> kernel = op.getKernelShape();
  int64_t spatial = kernel.size();
  bool padded = llvm::any_of(op.getPads(), [](int64_t p) { return p != 0; });
  if (op.getCeilMode() || (padded && !op.getCountIncludePad()) ||
      llvm::any_of(op.getDilations(), [](int64_t d) { return d != 1; }))
    return op.emitOpError()
           << "has a gradient rule only without ceil_mode and dilations, "
              "and with count_include_pad when padded (node '"
           << getOnnxNodeName(op) << "')";
  Value x = op.getInput();
  ArrayRef<int64_t> xs = gb.shapeOf(x);
  Value g = dy[0];
  ArrayRef<int64_t> gs = gb.shapeOf(g);
  SmallVector<int64_t> flat = {gs[0] * gs[1], 1};
  llvm::append_range(flat, gs.drop_front(2));
  int64_t window = 1;
  SmallVector<int64_t> kernelShape = {1, 1};
  for (int64_t k : kernel) {
    window *= k;
    kernelShape.push_back(k);
  }
  Value ones = gb.splat(
      RankedTensorType::get(kernelShape, gb.typeOf(x).getElementType()),
      1.0 / double(window));
  Value r = gb.convInputGrad(gb.reshape(g, flat), ones, xs.drop_front(2),
                             op.getStrides(), op.getPads().take_front(spatial),
                             SmallVector<int64_t>(spatial, 1));
  grads[0] = gb.reshape(r, xs);
  return success();
}

static LogicalResult globalAveragePoolRule(GlobalAveragePoolOp op,
                                           GradBuilder &gb, ValueRange dy,
                                           ArrayRef<bool>,
                                           SmallVectorImpl<Value> &grads) {
  Value x = op.getInput();
  int64_t window = 1;
  for (int64_t size : gb.shapeOf(x).drop_front(2))
    window *= size;
  grads[0] = ExpandOp::create(gb.b, gb.loc, gb.typeOf(x),
                              gb.mul(dy[0], 1.0 / double(window)));
  return success();
}

/// Max pooling: the gradient of each window goes to its first maximum in
/// window order (as PyTorch does): for every kernel offset, the strided
/// view of the -inf padded input is compared with the result, positions
/// already taken by an earlier offset are masked out, and the masked dY is
/// placed back (dilated by the strides, shifted to the offset).
static LogicalResult maxPoolRule(MaxPoolOp op, GradBuilder &gb, ValueRange dy,
                                 ArrayRef<bool>,
                                 SmallVectorImpl<Value> &grads) {
  if (op.getCeilMode())
    return op.emitOpError() << "has a gradient rule only without ceil_mode "
                               "(node '"
                            << getOnnxNodeName(op) << "')";
  Value x = op.getInput(), y = op.getResult(), g = dy[0];
  ArrayRef<int64_t> kernel = op.getKernelShape();
  ArrayRef<int64_t> strides = op.getStrides(), dilations = op.getDilations();
  int64_t spatial = kernel.size();
  ArrayRef<int64_t> pads = op.getPads();
  ArrayRef<int64_t> xs = gb.shapeOf(x), ys = gb.shapeOf(y);
  Type element = gb.typeOf(x).getElementType();
  Type i1 = gb.b.getI1Type();
  // Padding never wins: pad with -inf (or the lowest value), and far enough
  // at the end for every strided view.
  SmallVector<int64_t> padAll(2 * (spatial + 2), 0);
  for (int64_t i = 0; i < spatial; ++i) {
    padAll[2 + i] = pads[i];
    int64_t need =
        (ys[2 + i] - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1;
    padAll[spatial + 4 + i] = std::max<int64_t>(0, need - xs[2 + i] - pads[i]);
  }
  Value lowest = gb.scalar(element, -std::numeric_limits<double>::infinity());
  Value xp = gb.pad(x, padAll, lowest);
  Value taken;
  Value result;
  int64_t offsets = 1;
  for (int64_t k : kernel)
    offsets *= k;
  for (int64_t linear = 0; linear < offsets; ++linear) {
    SmallVector<int64_t> offset(spatial);
    for (int64_t i = spatial - 1, rest = linear; i >= 0; --i) {
      offset[i] = rest % kernel[i];
      rest /= kernel[i];
    }
    Value view = xp;
    for (int64_t i = 0; i < spatial; ++i)
      view = gb.strided(view, 2 + i, offset[i] * dilations[i], strides[i],
                        ys[2 + i]);
    Value hit = gb.binary<EqualOp>(view, y, i1);
    if (taken) {
      Value fresh = gb.binary<AndOp>(
          hit, NotOp::create(gb.b, gb.loc, gb.typeOf(taken), taken));
      taken = gb.binary<OrOp>(taken, hit);
      hit = fresh;
    } else {
      taken = hit;
    }
    Value part = gb.where(hit, g, gb.scalar(element, 0.0));
    // Back to input positions: o * stride + offset * dilation - pad.
    for (int64_t i = 0; i < spatial; ++i) {
      part = gb.dilate(part, 2 + i, strides[i]);
      int64_t begin = offset[i] * dilations[i] - pads[i];
      int64_t end = xs[2 + i] - begin - gb.shapeOf(part)[2 + i];
      part = gb.padDim(part, 2 + i, begin, end);
    }
    result = result ? gb.add(result, part) : part;
  }
  grads[0] = result;
  return success();
}

//===----------------------------------------------------------------------===//
// Pipeline boundaries
//===----------------------------------------------------------------------===//

/// The gradient of a sent tensor comes back from the stage it was sent to,
/// with the same tag (plus the gradient of the op's own result, if used).
static LogicalResult sendRule(SendOp op, GradBuilder &gb, ValueRange dy,
                              ArrayRef<bool> wanted,
                              SmallVectorImpl<Value> &grads) {
  if (!wanted[0])
    return success();
  Value back = RecvOp::create(gb.b, gb.loc, gb.typeOf(op.getInput()),
                              op.getStage(), op.getTag());
  grads[0] = dy[0] ? gb.add(back, dy[0]) : back;
  return success();
}

/// The gradient of a received tensor goes back to the stage that sent it,
/// zeros when the tensor does not reach the loss (that stage waits for it).
static LogicalResult recvRule(RecvOp op, GradBuilder &gb, ValueRange dy,
                              ArrayRef<bool> wanted,
                              SmallVectorImpl<Value> &grads) {
  RankedTensorType type = op.getResult().getType();
  Value g = dy[0];
  if (!g)
    g = ConstantOp::create(
        gb.b, gb.loc, type,
        DenseElementsAttr::get(type, gb.b.getZeroAttr(type.getElementType())));
  SendOp::create(gb.b, gb.loc, type, g, op.getStage(), op.getTag());
  return success();
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

template <typename OpTy, Rule<OpTy> rule> static void attach(MLIRContext &ctx) {
  OpTy::template attachInterface<GradientModel<OpTy, rule>>(ctx);
}

} // namespace

namespace mlir::autopar {
void attachGradientModels(MLIRContext &ctx) {
  attach<AddOp, addRule>(ctx);
  attach<SubOp, subRule>(ctx);
  attach<MulOp, mulRule>(ctx);
  attach<DivOp, divRule>(ctx);
  attach<PowOp, powRule>(ctx);
  attach<WhereOp, whereRule>(ctx);
  attach<CastOp, castRule>(ctx);
  attach<NegOp, negRule>(ctx);
  attach<ReluOp, reluRule>(ctx);
  attach<LeakyReluOp, leakyReluRule>(ctx);
  attach<ClipOp, clipRule>(ctx);
  attach<ExpOp, expRule>(ctx);
  attach<LogOp, logRule>(ctx);
  attach<SqrtOp, sqrtRule>(ctx);
  attach<ReciprocalOp, reciprocalRule>(ctx);
  attach<TanhOp, tanhRule>(ctx);
  attach<SigmoidOp, sigmoidRule>(ctx);
  attach<ErfOp, erfRule>(ctx);
  attach<AbsOp, absRule>(ctx);
  attach<GeluOp, geluRule>(ctx);
  attach<MatMulOp, matmulRule>(ctx);
  attach<GemmOp, gemmRule>(ctx);
  attach<SoftmaxOp, softmaxRule>(ctx);
  attach<LogSoftmaxOp, logSoftmaxRule>(ctx);
  attach<LayerNormOp, layerNormRule>(ctx);
  attach<BatchNormOp, batchNormRule>(ctx);
  attach<ReduceSumOp, reduceSumRule>(ctx);
  attach<ReduceMeanOp, reduceMeanRule>(ctx);
  attach<ReshapeOp, reshapeRule>(ctx);
  attach<ExpandOp, expandRule>(ctx);
  attach<TransposeOp, transposeRule>(ctx);
  attach<SliceOp, sliceRule>(ctx);
  attach<PadOp, padRule>(ctx);
  attach<ConcatOp, concatRule>(ctx);
  attach<SplitOp, splitRule>(ctx);
  attach<GatherOp, gatherRule>(ctx);
  attach<ConvOp, convRule>(ctx);
  attach<AveragePoolOp, averagePoolRule>(ctx);
  attach<GlobalAveragePoolOp, globalAveragePoolRule>(ctx);
  attach<MaxPoolOp, maxPoolRule>(ctx);
  attach<SendOp, sendRule>(ctx);
  attach<RecvOp, recvRule>(ctx);
}
} // namespace mlir::autopar
