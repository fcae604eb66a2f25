//===- AutoparOps.cpp - autopar operations ---------------------------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Verification and type inference of the ONNX-level operations. Each
// inferReturnTypes implements the ONNX shape rule of the op, so building an op
// without result types infers them and a mismatching result type is rejected.
//
//===----------------------------------------------------------------------===//

#include "autopar/Dialect/Autopar/IR/Autopar.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::autopar;

FailureOr<SmallVector<int64_t>>
mlir::autopar::broadcastShapes(ArrayRef<int64_t> lhs, ArrayRef<int64_t> rhs) {
  size_t rank = std::max(lhs.size(), rhs.size());
  SmallVector<int64_t> result(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t l = i < rank - lhs.size() ? 1 : lhs[i - (rank - lhs.size())];
    int64_t r = i < rank - rhs.size() ? 1 : rhs[i - (rank - rhs.size())];
    if (l == 1)
      result[i] = r;
    else if (r == 1)
      result[i] = l;
    else if (l == r)
      result[i] = l;
    else if (ShapedType::isDynamic(l) || ShapedType::isDynamic(r))
      result[i] = ShapedType::isDynamic(l) ? r : l;
    else
      return failure();
  }
  return result;
}

static std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << '[';
  llvm::interleave(
      shape, os,
      [&](int64_t d) {
        if (ShapedType::isDynamic(d))
          os << '?';
        else
          os << d;
      },
      "x");
  os << ']';
  return s;
}

static LogicalResult emitInferError(std::optional<Location> loc,
                                       const Twine &message) {
  if (loc)
    return emitError(*loc) << message;
  return failure();
}

static bool sameElementType(ValueRange values) {
  Type elt;
  for (Value v : values) {
    Type t = cast<ShapedType>(v.getType()).getElementType();
    if (elt && elt != t)
      return false;
    elt = t;
  }
  return true;
}

static bool dimsCompatible(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

//===----------------------------------------------------------------------===//
// ConstantOp
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

//===----------------------------------------------------------------------===//
// MatMulOp
//===----------------------------------------------------------------------===//

LogicalResult MatMulOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr, OpaqueProperties, RegionRange,
    SmallVectorImpl<Type> &inferred) {
  auto aType = cast<RankedTensorType>(operands[0].getType());
  auto bType = cast<RankedTensorType>(operands[1].getType());
  if (!sameElementType(operands))
    return emitInferError(loc, "operands must have the same element type");
  if (aType.getRank() == 0 || bType.getRank() == 0)
    return emitInferError(loc, "matmul operands must have rank >= 1");
  SmallVector<int64_t> a(aType.getShape()), b(bType.getShape());
  bool aVec = a.size() == 1, bVec = b.size() == 1;
  if (aVec)
    a.insert(a.begin(), 1);
  if (bVec)
    b.push_back(1);
  int64_t k1 = a.back(), k2 = b[b.size() - 2];
  if (!dimsCompatible(k1, k2))
    return emitInferError(loc, "contraction dimensions differ: " +
                                      shapeStr(aType.getShape()) + " @ " +
                                      shapeStr(bType.getShape()));
  FailureOr<SmallVector<int64_t>> batch =
      broadcastShapes(ArrayRef(a).drop_back(2), ArrayRef(b).drop_back(2));
  if (failed(batch))
    return emitInferError(loc, "batch dimensions do not broadcast: " +
                                      shapeStr(aType.getShape()) + " @ " +
                                      shapeStr(bType.getShape()));
  SmallVector<int64_t> shape = *batch;
  if (!aVec)
    shape.push_back(a[a.size() - 2]);
  if (!bVec)
    shape.push_back(b.back());
  inferred.push_back(RankedTensorType::get(shape, aType.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// GemmOp
//===----------------------------------------------------------------------===//

LogicalResult GemmOp::inferReturnTypes(MLIRContext *ctx,
                                       std::optional<Location> loc,
                                       ValueRange operands,
                                       DictionaryAttr attributes,
                                       OpaqueProperties properties,
                                       RegionRange regions,
                                       SmallVectorImpl<Type> &inferred) {
  GemmOp::Adaptor adaptor(operands, attributes, properties, regions);
  auto aType = cast<RankedTensorType>(adaptor.getA().getType());
  auto bType = cast<RankedTensorType>(adaptor.getB().getType());
  if (!sameElementType(operands))
    return emitInferError(loc, "operands must have the same element type");
  if (aType.getRank() != 2 || bType.getRank() != 2)
    return emitInferError(loc, "gemm operands A and B must be matrices, got " +
                                      shapeStr(aType.getShape()) + " and " +
                                      shapeStr(bType.getShape()));
  bool transA = adaptor.getTransA(), transB = adaptor.getTransB();
  int64_t m = aType.getDimSize(transA ? 1 : 0);
  int64_t k1 = aType.getDimSize(transA ? 0 : 1);
  int64_t k2 = bType.getDimSize(transB ? 1 : 0);
  int64_t n = bType.getDimSize(transB ? 0 : 1);
  if (!dimsCompatible(k1, k2))
    return emitInferError(loc, "contraction dimensions differ: " +
                                      std::to_string(k1) + " vs " +
                                      std::to_string(k2));
  if (Value c = adaptor.getC()) {
    auto cType = cast<RankedTensorType>(c.getType());
    if (cType.getRank() > 2)
      return emitInferError(loc, "gemm operand C must have rank <= 2, got " +
                                        std::to_string(cType.getRank()));
    FailureOr<SmallVector<int64_t>> bc =
        broadcastShapes({m, n}, cType.getShape());
    if (failed(bc) || !dimsCompatible((*bc)[0], m) ||
        !dimsCompatible((*bc)[1], n))
      return emitInferError(loc, "gemm operand C of shape " +
                                        shapeStr(cType.getShape()) +
                                        " does not broadcast to " +
                                        shapeStr({m, n}));
  }
  inferred.push_back(RankedTensorType::get({m, n}, aType.getElementType()));
  return success();
}


//===----------------------------------------------------------------------===//
// AddOp / ReluOp
//===----------------------------------------------------------------------===//

LogicalResult AddOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      ValueRange operands, DictionaryAttr,
                                      OpaqueProperties, RegionRange,
                                      SmallVectorImpl<Type> &inferred) {
  auto lhs = cast<RankedTensorType>(operands[0].getType());
  auto rhs = cast<RankedTensorType>(operands[1].getType());
  if (!sameElementType(operands))
    return emitInferError(loc, "operands must have the same element type");
  FailureOr<SmallVector<int64_t>> shape =
      broadcastShapes(lhs.getShape(), rhs.getShape());
  if (failed(shape))
    return emitInferError(loc, "operand shapes " + shapeStr(lhs.getShape()) +
                                      " and " + shapeStr(rhs.getShape()) +
                                      " do not broadcast");
  inferred.push_back(RankedTensorType::get(*shape, lhs.getElementType()));
  return success();
}

LogicalResult ReluOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                       ValueRange operands, DictionaryAttr,
                                       OpaqueProperties, RegionRange,
                                       SmallVectorImpl<Type> &inferred) {
  inferred.push_back(operands[0].getType());
  return success();
}

//===----------------------------------------------------------------------===//
// ToPartialOp
//===----------------------------------------------------------------------===//

LogicalResult
ToPartialOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto grid = symbolTable.lookupNearestSymbolFrom<shard::GridOp>(
      *this, getGridAttr());
  if (!grid)
    return emitOpError() << "no shard.grid named '" << getGrid() << "'";
  for (int64_t axis : getGridAxes())
    if (axis < 0 || axis >= grid.getRank())
      return emitOpError() << "grid axis " << axis << " is out of range for a "
                           << grid.getRank() << "-d grid";
  return success();
}

//===----------------------------------------------------------------------===//
// SwapGridAxesOp
//===----------------------------------------------------------------------===//

LogicalResult
SwapGridAxesOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto grid = symbolTable.lookupNearestSymbolFrom<shard::GridOp>(
      *this, getGridAttr());
  if (!grid)
    return emitOpError() << "no shard.grid named '" << getGrid() << "'";
  ArrayRef<int64_t> axes = getGridAxes();
  if (axes.size() != 2 || axes[0] == axes[1])
    return emitOpError() << "needs two different grid axes, got "
                         << axes.size();
  for (int64_t axis : axes)
    if (axis < 0 || axis >= grid.getRank())
      return emitOpError() << "grid axis " << axis << " is out of range for a "
                           << grid.getRank() << "-d grid";
  if (grid.getShape()[axes[0]] != grid.getShape()[axes[1]])
    return emitOpError() << "grid axes " << axes[0] << " and " << axes[1]
                         << " have different sizes "
                         << grid.getShape()[axes[0]] << " and "
                         << grid.getShape()[axes[1]];
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise operations
//===----------------------------------------------------------------------===//

/// Unary ops keep the operand type.
#define AUTOPAR_SAME_TYPE_INFERENCE(OP)                                        \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location>, ValueRange operands,             \
      DictionaryAttr, OpaqueProperties, RegionRange,                           \
      SmallVectorImpl<Type> &inferred) {                                       \
    inferred.push_back(operands[0].getType());                                 \
    return success();                                                          \
  }
AUTOPAR_SAME_TYPE_INFERENCE(AbsOp)
AUTOPAR_SAME_TYPE_INFERENCE(NegOp)
AUTOPAR_SAME_TYPE_INFERENCE(SqrtOp)
AUTOPAR_SAME_TYPE_INFERENCE(ReciprocalOp)
AUTOPAR_SAME_TYPE_INFERENCE(ExpOp)
AUTOPAR_SAME_TYPE_INFERENCE(LogOp)
AUTOPAR_SAME_TYPE_INFERENCE(SigmoidOp)
AUTOPAR_SAME_TYPE_INFERENCE(TanhOp)
AUTOPAR_SAME_TYPE_INFERENCE(ErfOp)
AUTOPAR_SAME_TYPE_INFERENCE(NotOp)
AUTOPAR_SAME_TYPE_INFERENCE(LeakyReluOp)
AUTOPAR_SAME_TYPE_INFERENCE(GeluOp)
AUTOPAR_SAME_TYPE_INFERENCE(ClipOp)
AUTOPAR_SAME_TYPE_INFERENCE(SinOp)
AUTOPAR_SAME_TYPE_INFERENCE(CosOp)
AUTOPAR_SAME_TYPE_INFERENCE(TanOp)
AUTOPAR_SAME_TYPE_INFERENCE(AsinOp)
AUTOPAR_SAME_TYPE_INFERENCE(AcosOp)
AUTOPAR_SAME_TYPE_INFERENCE(AtanOp)
AUTOPAR_SAME_TYPE_INFERENCE(SinhOp)
AUTOPAR_SAME_TYPE_INFERENCE(CoshOp)
AUTOPAR_SAME_TYPE_INFERENCE(AsinhOp)
AUTOPAR_SAME_TYPE_INFERENCE(AcoshOp)
AUTOPAR_SAME_TYPE_INFERENCE(AtanhOp)
AUTOPAR_SAME_TYPE_INFERENCE(FloorOp)
AUTOPAR_SAME_TYPE_INFERENCE(CeilOp)
AUTOPAR_SAME_TYPE_INFERENCE(RoundOp)
AUTOPAR_SAME_TYPE_INFERENCE(SignOp)
AUTOPAR_SAME_TYPE_INFERENCE(EluOp)
AUTOPAR_SAME_TYPE_INFERENCE(SeluOp)
AUTOPAR_SAME_TYPE_INFERENCE(CeluOp)
AUTOPAR_SAME_TYPE_INFERENCE(HardSigmoidOp)
AUTOPAR_SAME_TYPE_INFERENCE(HardSwishOp)
AUTOPAR_SAME_TYPE_INFERENCE(SoftplusOp)
AUTOPAR_SAME_TYPE_INFERENCE(SoftsignOp)
AUTOPAR_SAME_TYPE_INFERENCE(ThresholdedReluOp)
AUTOPAR_SAME_TYPE_INFERENCE(ShrinkOp)
#undef AUTOPAR_SAME_TYPE_INFERENCE

/// Float predicates: the operand's shape, boolean (i1) elements.
#define AUTOPAR_PREDICATE_INFERENCE(OP)                                        \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *ctx, std::optional<Location> loc, ValueRange operands,      \
      DictionaryAttr, OpaqueProperties, RegionRange,                           \
      SmallVectorImpl<Type> &inferred) {                                       \
    auto type = cast<RankedTensorType>(operands[0].getType());                 \
    if (!isa<FloatType>(type.getElementType()))                                \
      return emitInferError(loc, "operand must have a float element type");    \
    inferred.push_back(type.clone(IntegerType::get(ctx, 1)));                  \
    return success();                                                          \
  }
AUTOPAR_PREDICATE_INFERENCE(IsNaNOp)
AUTOPAR_PREDICATE_INFERENCE(IsInfOp)
#undef AUTOPAR_PREDICATE_INFERENCE

LogicalResult CastOp::verify() {
  if (getInput().getType().getShape() != getResult().getType().getShape())
    return emitOpError() << "changes the shape from "
                         << shapeStr(getInput().getType().getShape()) << " to "
                         << shapeStr(getResult().getType().getShape());
  return success();
}

//===----------------------------------------------------------------------===//
// Linear quantization
//===----------------------------------------------------------------------===//

static bool isQuantizedElementType(Type type) {
  auto integer = dyn_cast<IntegerType>(type);
  return integer && integer.getWidth() == 8 && !integer.isSigned();
}

/// Checks that `scale` and `zeroPoint` of a quantize or dequantize op are
/// per tensor (one element, rank 0 or 1) or per axis (1-D of `x`'s size
/// along `axis`) and agree with each other.
static LogicalResult verifyQuantizationParameters(Operation *op,
                                                  RankedTensorType x,
                                                  RankedTensorType scale,
                                                  RankedTensorType zeroPoint,
                                                  int64_t axis) {
  if (!scale.getElementType().isF32())
    return op->emitOpError()
           << "scale must be f32, got " << scale.getElementType();
  if (scale.getShape() != zeroPoint.getShape())
    return op->emitOpError()
           << "scale and zero point must have the same shape, got "
           << shapeStr(scale.getShape()) << " and "
           << shapeStr(zeroPoint.getShape());
  if (scale.getRank() > 1)
    return op->emitOpError() << "scale must be a scalar or 1-D, got "
                             << shapeStr(scale.getShape());
  if (scale.getNumElements() == 1)
    return success();
  if (axis < 0 || axis >= x.getRank())
    return op->emitOpError()
           << "axis " << axis << " is out of range for rank " << x.getRank();
  if (scale.getDimSize(0) != x.getDimSize(axis))
    return op->emitOpError() << "per-axis scale has " << scale.getDimSize(0)
                             << " elements but dimension " << axis
                             << " has size " << x.getDimSize(axis);
  return success();
}

LogicalResult
QuantizeLinearOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                   ValueRange operands, DictionaryAttr,
                                   OpaqueProperties, RegionRange,
                                   SmallVectorImpl<Type> &inferred) {
  auto x = cast<RankedTensorType>(operands[0].getType());
  Type zeroPoint =
      cast<RankedTensorType>(operands[2].getType()).getElementType();
  if (!isQuantizedElementType(zeroPoint))
    return emitInferError(loc, "zero point must be i8 or ui8");
  inferred.push_back(x.clone(zeroPoint));
  return success();
}

LogicalResult QuantizeLinearOp::verify() {
  Type element = getInput().getType().getElementType();
  if (!element.isF32() && !element.isSignlessInteger(32))
    return emitOpError() << "input must be f32 or i32, got " << element;
  return verifyQuantizationParameters(*this, getInput().getType(),
                                      getScale().getType(),
                                      getZeroPoint().getType(), getAxis());
}

LogicalResult DequantizeLinearOp::inferReturnTypes(
    MLIRContext *ctx, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr, OpaqueProperties, RegionRange,
    SmallVectorImpl<Type> &inferred) {
  auto x = cast<RankedTensorType>(operands[0].getType());
  inferred.push_back(x.clone(Float32Type::get(ctx)));
  return success();
}

LogicalResult DequantizeLinearOp::verify() {
  Type element = getInput().getType().getElementType();
  if (!isQuantizedElementType(element) && !element.isSignlessInteger(32))
    return emitOpError() << "input must be i8, ui8 or i32, got " << element;
  if (getZeroPoint().getType().getElementType() != element)
    return emitOpError() << "zero point must have the input's element type "
                         << element << ", got "
                         << getZeroPoint().getType().getElementType();
  return verifyQuantizationParameters(*this, getInput().getType(),
                                      getScale().getType(),
                                      getZeroPoint().getType(), getAxis());
}

/// Broadcast of all operands; `resultElement` (when set) replaces the
/// operands' element type, which must agree among `sameTypeOperands`.
static LogicalResult inferBroadcast(std::optional<Location> loc,
                                    ValueRange operands,
                                    ValueRange sameTypeOperands,
                                    Type resultElement,
                                    SmallVectorImpl<Type> &inferred) {
  if (!sameElementType(sameTypeOperands))
    return emitInferError(loc, "operands must have the same element type");
  SmallVector<int64_t> shape;
  std::string shapes;
  for (Value operand : operands) {
    ArrayRef<int64_t> next = cast<RankedTensorType>(operand.getType()).getShape();
    shapes += (shapes.empty() ? "" : " and ") + shapeStr(next);
    FailureOr<SmallVector<int64_t>> joined = broadcastShapes(shape, next);
    if (failed(joined))
      return emitInferError(loc,
                            "operand shapes " + shapes + " do not broadcast");
    shape = *joined;
  }
  Type element = resultElement
                     ? resultElement
                     : cast<ShapedType>(sameTypeOperands.front().getType())
                           .getElementType();
  inferred.push_back(RankedTensorType::get(shape, element));
  return success();
}

#define AUTOPAR_BINARY_INFERENCE(OP, RESULT_ELEMENT)                           \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *ctx, std::optional<Location> loc, ValueRange operands,      \
      DictionaryAttr, OpaqueProperties, RegionRange,                           \
      SmallVectorImpl<Type> &inferred) {                                       \
    return inferBroadcast(loc, operands, operands, RESULT_ELEMENT, inferred);  \
  }
AUTOPAR_BINARY_INFERENCE(SubOp, Type())
AUTOPAR_BINARY_INFERENCE(MulOp, Type())
AUTOPAR_BINARY_INFERENCE(DivOp, Type())
AUTOPAR_BINARY_INFERENCE(AndOp, Type())
AUTOPAR_BINARY_INFERENCE(EqualOp, IntegerType::get(ctx, 1))
AUTOPAR_BINARY_INFERENCE(LessOp, IntegerType::get(ctx, 1))
AUTOPAR_BINARY_INFERENCE(GreaterOp, IntegerType::get(ctx, 1))
AUTOPAR_BINARY_INFERENCE(GreaterOrEqualOp, IntegerType::get(ctx, 1))
AUTOPAR_BINARY_INFERENCE(LessOrEqualOp, IntegerType::get(ctx, 1))
AUTOPAR_BINARY_INFERENCE(OrOp, Type())
AUTOPAR_BINARY_INFERENCE(XorOp, Type())
AUTOPAR_BINARY_INFERENCE(MaxOp, Type())
AUTOPAR_BINARY_INFERENCE(MinOp, Type())
AUTOPAR_BINARY_INFERENCE(ModOp, Type())
AUTOPAR_BINARY_INFERENCE(BitShiftOp, Type())
#undef AUTOPAR_BINARY_INFERENCE

LogicalResult BitShiftOp::verify() {
  Type element = getLhs().getType().getElementType();
  if (!isa<IntegerType>(element) || element.isInteger(1))
    return emitOpError() << "operands must be integers, got " << element;
  return success();
}

LogicalResult PowOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      ValueRange operands, DictionaryAttr,
                                      OpaqueProperties, RegionRange,
                                      SmallVectorImpl<Type> &inferred) {
  // ONNX Pow allows an exponent of another type; the result is the base's.
  return inferBroadcast(loc, operands, operands.take_front(),
                        Type(), inferred);
}

/// PRelu: the slope broadcasts unidirectionally to X.
LogicalResult PReluOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        ValueRange operands, DictionaryAttr,
                                        OpaqueProperties, RegionRange,
                                        SmallVectorImpl<Type> &inferred) {
  if (failed(inferBroadcast(loc, operands, operands, Type(), inferred)))
    return failure();
  auto x = cast<RankedTensorType>(operands[0].getType());
  if (cast<RankedTensorType>(inferred.back()).getShape() != x.getShape())
    return emitInferError(
        loc,
        "slope of shape " +
            shapeStr(cast<RankedTensorType>(operands[1].getType()).getShape()) +
            " does not broadcast to X of shape " + shapeStr(x.getShape()));
  return success();
}

LogicalResult WhereOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        ValueRange operands, DictionaryAttr,
                                        OpaqueProperties, RegionRange,
                                        SmallVectorImpl<Type> &inferred) {
  if (!cast<ShapedType>(operands[0].getType()).getElementType().isInteger(1))
    return emitInferError(loc, "condition must be a boolean (i1) tensor");
  return inferBroadcast(loc, operands, operands.drop_front(), Type(),
                        inferred);
}

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

static LogicalResult checkAxis(std::optional<Location> loc, int64_t axis,
                               int64_t rank) {
  if (axis < 0 || axis >= rank)
    return emitInferError(loc, "axis " + std::to_string(axis) +
                                   " is out of range for rank " +
                                   std::to_string(rank));
  return success();
}

#define AUTOPAR_AXIS_SAME_TYPE_INFERENCE(OP)                                   \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, ValueRange operands,         \
      DictionaryAttr attributes, OpaqueProperties properties,                  \
      RegionRange regions, SmallVectorImpl<Type> &inferred) {                  \
    OP::Adaptor adaptor(operands, attributes, properties, regions);            \
    auto type = cast<RankedTensorType>(operands[0].getType());                 \
    if (failed(checkAxis(loc, adaptor.getAxis(), type.getRank())))             \
      return failure();                                                        \
    inferred.push_back(type);                                                  \
    return success();                                                          \
  }
AUTOPAR_AXIS_SAME_TYPE_INFERENCE(SoftmaxOp)
AUTOPAR_AXIS_SAME_TYPE_INFERENCE(LogSoftmaxOp)
#undef AUTOPAR_AXIS_SAME_TYPE_INFERENCE

LogicalResult LayerNormOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr attributes, OpaqueProperties properties,
    RegionRange regions, SmallVectorImpl<Type> &inferred) {
  LayerNormOp::Adaptor adaptor(operands, attributes, properties, regions);
  auto type = cast<RankedTensorType>(adaptor.getInput().getType());
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxis(loc, axis, type.getRank())))
    return failure();
  if (!sameElementType(operands))
    return emitInferError(loc, "operands must have the same element type");
  ArrayRef<int64_t> normalized = type.getShape().drop_front(axis);
  for (Value v : {adaptor.getScale(), adaptor.getBias()}) {
    if (!v)
      continue;
    ArrayRef<int64_t> shape = cast<RankedTensorType>(v.getType()).getShape();
    FailureOr<SmallVector<int64_t>> b = broadcastShapes(normalized, shape);
    if (failed(b) || ArrayRef<int64_t>(*b) != normalized)
      return emitInferError(loc, "scale/bias of shape " + shapeStr(shape) +
                                     " does not broadcast to the normalized "
                                     "shape " +
                                     shapeStr(normalized));
  }
  inferred.push_back(type);
  return success();
}

LogicalResult BatchNormOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr, OpaqueProperties, RegionRange,
    SmallVectorImpl<Type> &inferred) {
  auto type = cast<RankedTensorType>(operands[0].getType());
  if (type.getRank() < 2)
    return emitInferError(loc, "batch_norm input must have rank >= 2, got " +
                                   std::to_string(type.getRank()));
  if (!sameElementType(operands))
    return emitInferError(loc, "operands must have the same element type");
  int64_t channels = type.getDimSize(1);
  for (Value v : operands.drop_front()) {
    auto vType = cast<RankedTensorType>(v.getType());
    if (vType.getRank() != 1 || !dimsCompatible(vType.getDimSize(0), channels))
      return emitInferError(loc, "batch_norm parameters must be vectors of " +
                                     std::to_string(channels) +
                                     " channels, got " +
                                     shapeStr(vType.getShape()));
  }
  inferred.push_back(type);
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

static LogicalResult inferReduce(std::optional<Location> loc, Value input,
                                 ArrayRef<int64_t> axes, bool keepdims,
                                 SmallVectorImpl<Type> &inferred) {
  auto type = cast<RankedTensorType>(input.getType());
  int64_t previous = -1;
  for (int64_t axis : axes) {
    if (failed(checkAxis(loc, axis, type.getRank())))
      return failure();
    if (axis <= previous)
      return emitInferError(loc, "reduction axes must be sorted and unique");
    previous = axis;
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    if (!llvm::is_contained(axes, d))
      shape.push_back(type.getDimSize(d));
    else if (keepdims)
      shape.push_back(1);
  }
  inferred.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
}

#define AUTOPAR_REDUCE_INFERENCE(OP)                                           \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, ValueRange operands,         \
      DictionaryAttr attributes, OpaqueProperties properties,                  \
      RegionRange regions, SmallVectorImpl<Type> &inferred) {                  \
    OP::Adaptor adaptor(operands, attributes, properties, regions);            \
    return inferReduce(loc, adaptor.getInput(), adaptor.getAxes(),             \
                       adaptor.getKeepdims(), inferred);                       \
  }
AUTOPAR_REDUCE_INFERENCE(ReduceSumOp)
AUTOPAR_REDUCE_INFERENCE(ReduceMeanOp)
AUTOPAR_REDUCE_INFERENCE(ReduceMaxOp)
AUTOPAR_REDUCE_INFERENCE(ReduceMinOp)
AUTOPAR_REDUCE_INFERENCE(ReduceProdOp)
AUTOPAR_REDUCE_INFERENCE(ReduceL1Op)
AUTOPAR_REDUCE_INFERENCE(ReduceL2Op)
AUTOPAR_REDUCE_INFERENCE(ReduceLogSumOp)
AUTOPAR_REDUCE_INFERENCE(ReduceLogSumExpOp)
AUTOPAR_REDUCE_INFERENCE(ReduceSumSquareOp)
#undef AUTOPAR_REDUCE_INFERENCE

/// ArgMax / ArgMin: int64 result without the axis (size 1 with keepdims).
#define AUTOPAR_ARG_REDUCE_INFERENCE(OP)                                       \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *ctx, std::optional<Location> loc, ValueRange operands,      \
      DictionaryAttr attributes, OpaqueProperties properties,                  \
      RegionRange regions, SmallVectorImpl<Type> &inferred) {                  \
    OP::Adaptor adaptor(operands, attributes, properties, regions);            \
    auto type = cast<RankedTensorType>(adaptor.getInput().getType());          \
    if (failed(checkAxis(loc, adaptor.getAxis(), type.getRank())))             \
      return failure();                                                        \
    SmallVector<int64_t> shape(type.getShape());                               \
    if (adaptor.getKeepdims())                                                 \
      shape[adaptor.getAxis()] = 1;                                            \
    else                                                                       \
      shape.erase(shape.begin() + adaptor.getAxis());                          \
    inferred.push_back(                                                        \
        RankedTensorType::get(shape, IntegerType::get(ctx, 64)));              \
    return success();                                                          \
  }
AUTOPAR_ARG_REDUCE_INFERENCE(ArgMaxOp)
AUTOPAR_ARG_REDUCE_INFERENCE(ArgMinOp)
#undef AUTOPAR_ARG_REDUCE_INFERENCE

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr attributes, OpaqueProperties properties,
    RegionRange regions, SmallVectorImpl<Type> &inferred) {
  TransposeOp::Adaptor adaptor(operands, attributes, properties, regions);
  auto type = cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> perm = adaptor.getPerm();
  SmallVector<bool> seen(type.getRank(), false);
  if ((int64_t)perm.size() != type.getRank())
    return emitInferError(loc, "perm has " + std::to_string(perm.size()) +
                                   " entries for rank " +
                                   std::to_string(type.getRank()));
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= type.getRank() || seen[p])
      return emitInferError(loc, "perm is not a permutation");
    seen[p] = true;
    shape.push_back(type.getDimSize(p));
  }
  inferred.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
}

LogicalResult ReshapeOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError() << "changes the element type";
  if (!in.hasStaticShape() || !out.hasStaticShape())
    return emitOpError() << "needs static shapes";
  if (in.getNumElements() != out.getNumElements())
    return emitOpError() << "changes the element count from "
                         << in.getNumElements() << " to "
                         << out.getNumElements();
  return success();
}

LogicalResult ExpandOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError() << "changes the element type";
  FailureOr<SmallVector<int64_t>> b =
      broadcastShapes(in.getShape(), out.getShape());
  if (failed(b) || ArrayRef<int64_t>(*b) != out.getShape())
    return emitOpError() << "input shape " << shapeStr(in.getShape())
                         << " does not broadcast to "
                         << shapeStr(out.getShape());
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr attributes, OpaqueProperties properties,
    RegionRange regions, SmallVectorImpl<Type> &inferred) {
  ConcatOp::Adaptor adaptor(operands, attributes, properties, regions);
  if (operands.empty())
    return emitInferError(loc, "concat needs at least one input");
  if (!sameElementType(operands))
    return emitInferError(loc, "operands must have the same element type");
  auto first = cast<RankedTensorType>(operands[0].getType());
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxis(loc, axis, first.getRank())))
    return failure();
  SmallVector<int64_t> shape(first.getShape());
  shape[axis] = 0;
  for (Value v : operands) {
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getRank() != first.getRank())
      return emitInferError(loc, "concat inputs must have the same rank");
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (d != axis && !dimsCompatible(type.getDimSize(d), first.getDimSize(d)))
        return emitInferError(loc, "concat inputs differ outside the axis: " +
                                       shapeStr(type.getShape()) + " vs " +
                                       shapeStr(first.getShape()));
    shape[axis] = ShapedType::isDynamic(type.getDimSize(axis)) ||
                          ShapedType::isDynamic(shape[axis])
                      ? ShapedType::kDynamic
                      : shape[axis] + type.getDimSize(axis);
  }
  inferred.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

LogicalResult SplitOp::verify() {
  auto in = getInput().getType();
  int64_t axis = getAxis();
  if (axis < 0 || axis >= in.getRank())
    return emitOpError() << "axis " << axis << " is out of range for rank "
                         << in.getRank();
  int64_t total = 0;
  for (Type t : getResultTypes()) {
    auto type = cast<RankedTensorType>(t);
    if (type.getRank() != in.getRank() ||
        type.getElementType() != in.getElementType())
      return emitOpError() << "results must have the input's rank and type";
    for (int64_t d = 0; d < in.getRank(); ++d)
      if (d != axis && type.getDimSize(d) != in.getDimSize(d))
        return emitOpError() << "results differ from the input outside the "
                                "axis";
    total += type.getDimSize(axis);
  }
  if (total != in.getDimSize(axis))
    return emitOpError() << "pieces add up to " << total << ", input has "
                         << in.getDimSize(axis);
  return success();
}

LogicalResult SliceOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  int64_t rank = in.getRank();
  if ((int64_t)getStarts().size() != rank ||
      (int64_t)getSteps().size() != rank || out.getRank() != rank)
    return emitOpError() << "needs one start and step per dimension of rank "
                         << rank;
  if (in.getElementType() != out.getElementType())
    return emitOpError() << "changes the element type";
  for (int64_t d = 0; d < rank; ++d) {
    int64_t start = getStarts()[d], step = getSteps()[d];
    int64_t size = out.getDimSize(d), inSize = in.getDimSize(d);
    if (step == 0)
      return emitOpError() << "step of dimension " << d << " is 0";
    if (size == 0)
      continue;
    int64_t last = start + (size - 1) * step;
    if (start < 0 || start >= inSize || last < 0 || last >= inSize)
      return emitOpError() << "dimension " << d << " reads [" << start << ", "
                           << last << "] outside [0, " << inSize << ")";
  }
  return success();
}

LogicalResult GatherOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr attributes, OpaqueProperties properties,
    RegionRange regions, SmallVectorImpl<Type> &inferred) {
  GatherOp::Adaptor adaptor(operands, attributes, properties, regions);
  auto data = cast<RankedTensorType>(adaptor.getData().getType());
  auto indices = cast<RankedTensorType>(adaptor.getIndices().getType());
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxis(loc, axis, data.getRank())))
    return failure();
  if (!isa<IntegerType>(indices.getElementType()))
    return emitInferError(loc, "gather indices must be integers");
  SmallVector<int64_t> shape(data.getShape().take_front(axis));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, data.getShape().drop_front(axis + 1));
  inferred.push_back(RankedTensorType::get(shape, data.getElementType()));
  return success();
}

LogicalResult GatherElementsOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<Type> &inferred) {
  GatherElementsOp::Adaptor adaptor(operands, attributes, properties, regions);
  auto data = cast<RankedTensorType>(adaptor.getData().getType());
  auto indices = cast<RankedTensorType>(adaptor.getIndices().getType());
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxis(loc, axis, data.getRank())))
    return failure();
  if (!isa<IntegerType>(indices.getElementType()))
    return emitInferError(loc, "gather_elements indices must be integers");
  if (indices.getRank() != data.getRank())
    return emitInferError(loc, "indices of shape " +
                                   shapeStr(indices.getShape()) +
                                   " must have the rank of data of shape " +
                                   shapeStr(data.getShape()));
  for (int64_t d = 0; d < data.getRank(); ++d)
    if (d != axis && !ShapedType::isDynamic(indices.getDimSize(d)) &&
        !ShapedType::isDynamic(data.getDimSize(d)) &&
        indices.getDimSize(d) > data.getDimSize(d))
      return emitInferError(
          loc, "indices of shape " + shapeStr(indices.getShape()) +
                   " exceed data of shape " + shapeStr(data.getShape()) +
                   " in dimension " + std::to_string(d));
  inferred.push_back(indices.clone(data.getElementType()));
  return success();
}

LogicalResult
PadOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                        ValueRange operands, DictionaryAttr attributes,
                        OpaqueProperties properties, RegionRange regions,
                        SmallVectorImpl<Type> &inferred) {
  PadOp::Adaptor adaptor(operands, attributes, properties, regions);
  auto type = cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> pads = adaptor.getPads();
  int64_t rank = type.getRank();
  if ((int64_t)pads.size() != 2 * rank)
    return emitInferError(loc,
                          "pad needs 2 * rank = " + std::to_string(2 * rank) +
                              " pads, got " + std::to_string(pads.size()));
  StringRef mode = adaptor.getMode();
  if (mode != "constant" && mode != "reflect" && mode != "edge" &&
      mode != "wrap")
    return emitInferError(loc, "unknown pad mode '" + mode.str() + "'");
  if (Value value = adaptor.getValue()) {
    auto valueType = cast<RankedTensorType>(value.getType());
    if (valueType.getNumElements() != 1 ||
        valueType.getElementType() != type.getElementType())
      return emitInferError(loc, "pad value must be one element of the "
                                 "input's type, got " +
                                     shapeStr(valueType.getShape()));
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t size = type.getDimSize(d) + pads[d] + pads[rank + d];
    if (size < 0)
      return emitInferError(
          loc, "pads crop dimension " + std::to_string(d) + " of size " +
                   std::to_string(type.getDimSize(d)) + " below zero");
    if (mode != "constant" && type.getDimSize(d) == 0 && size > 0)
      return emitInferError(loc, "mode '" + mode.str() +
                                     "' cannot pad the empty dimension " +
                                     std::to_string(d));
    if (mode == "reflect" &&
        (pads[d] >= type.getDimSize(d) ||
         pads[rank + d] >= type.getDimSize(d)) &&
        (pads[d] > 0 || pads[rank + d] > 0))
      return emitInferError(loc, "reflect pads of dimension " +
                                     std::to_string(d) +
                                     " must be smaller than its size " +
                                     std::to_string(type.getDimSize(d)));
    shape.push_back(size);
  }
  inferred.push_back(type.clone(shape));
  return success();
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

/// Output size of a sliding window (ONNX formula).
static int64_t windowOutput(int64_t in, int64_t kernel, int64_t stride,
                            int64_t padBegin, int64_t padEnd, int64_t dilation,
                            bool ceilMode) {
  int64_t span = dilation * (kernel - 1) + 1;
  int64_t numerator = in + padBegin + padEnd - span;
  if (numerator < 0)
    return 0;
  int64_t out = (ceilMode ? (numerator + stride - 1) / stride
                          : numerator / stride) +
                1;
  // A window must start inside the input or the begin padding.
  if (ceilMode && (out - 1) * stride >= in + padBegin)
    --out;
  return out;
}

static LogicalResult checkWindowAttrs(std::optional<Location> loc,
                                      size_t spatial,
                                      ArrayRef<int64_t> strides,
                                      ArrayRef<int64_t> pads,
                                      ArrayRef<int64_t> dilations) {
  if (strides.size() != spatial || dilations.size() != spatial ||
      pads.size() != 2 * spatial)
    return emitInferError(loc, "expected " + std::to_string(spatial) +
                                   " strides and dilations and " +
                                   std::to_string(2 * spatial) + " pads");
  for (int64_t v : strides)
    if (v <= 0)
      return emitInferError(loc, "strides must be positive");
  for (int64_t v : dilations)
    if (v <= 0)
      return emitInferError(loc, "dilations must be positive");
  for (int64_t v : pads)
    if (v < 0)
      return emitInferError(loc, "pads must be non-negative");
  return success();
}

OpClass MatMulOp::getCostClass() {
  auto a = dyn_cast<RankedTensorType>(getA().getType());
  auto b = dyn_cast<RankedTensorType>(getB().getType());
  if (!a || !b || a.getRank() < 3 || b.getRank() < 3)
    return OpClass::MatMul;
  int64_t matrices = 1;
  for (int64_t size : b.getShape().drop_back(2))
    matrices = ShapedType::isDynamic(size) || matrices == ShapedType::kDynamic
                   ? ShapedType::kDynamic
                   : matrices * size;
  return matrices == 1 ? OpClass::MatMul : OpClass::BatchedMatMul;
}

OpClass ConvOp::getCostClass() {
  auto weight = dyn_cast<RankedTensorType>(getWeight().getType());
  if (getGroup() > 1 && weight && weight.getRank() >= 2 &&
      weight.getDimSize(1) == 1)
    return OpClass::DepthwiseConv;
  return OpClass::Conv;
}

LogicalResult ConvOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       ValueRange operands,
                                       DictionaryAttr attributes,
                                       OpaqueProperties properties,
                                       RegionRange regions,
                                       SmallVectorImpl<Type> &inferred) {
  ConvOp::Adaptor adaptor(operands, attributes, properties, regions);
  auto x = cast<RankedTensorType>(adaptor.getInput().getType());
  auto w = cast<RankedTensorType>(adaptor.getWeight().getType());
  if (!sameElementType(operands))
    return emitInferError(loc, "operands must have the same element type");
  if (x.getRank() < 3 || w.getRank() != x.getRank())
    return emitInferError(loc, "conv needs input and weight of the same rank "
                               ">= 3, got " +
                                   shapeStr(x.getShape()) + " and " +
                                   shapeStr(w.getShape()));
  size_t spatial = x.getRank() - 2;
  if (failed(checkWindowAttrs(loc, spatial, adaptor.getStrides(),
                              adaptor.getPads(), adaptor.getDilations())))
    return failure();
  int64_t group = adaptor.getGroup();
  int64_t c = x.getDimSize(1), m = w.getDimSize(0);
  if (group <= 0 || c % group != 0 || m % group != 0 ||
      w.getDimSize(1) * group != c)
    return emitInferError(loc, "conv channels do not match: input " +
                                   shapeStr(x.getShape()) + ", weight " +
                                   shapeStr(w.getShape()) + ", group " +
                                   std::to_string(group));
  if (Value b = adaptor.getBias()) {
    auto bType = cast<RankedTensorType>(b.getType());
    if (bType.getRank() != 1 || bType.getDimSize(0) != m)
      return emitInferError(loc, "conv bias must be a vector of " +
                                     std::to_string(m) + " channels");
  }
  SmallVector<int64_t> shape = {x.getDimSize(0), m};
  for (size_t i = 0; i < spatial; ++i)
    shape.push_back(windowOutput(
        x.getDimSize(2 + i), w.getDimSize(2 + i), adaptor.getStrides()[i],
        adaptor.getPads()[i], adaptor.getPads()[spatial + i],
        adaptor.getDilations()[i], /*ceilMode=*/false));
  inferred.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

static LogicalResult inferPool(std::optional<Location> loc, Value input,
                               ArrayRef<int64_t> kernel,
                               ArrayRef<int64_t> strides,
                               ArrayRef<int64_t> pads,
                               ArrayRef<int64_t> dilations, bool ceilMode,
                               SmallVectorImpl<Type> &inferred) {
  auto x = cast<RankedTensorType>(input.getType());
  if (x.getRank() < 3)
    return emitInferError(loc, "pooling needs rank >= 3, got " +
                                   shapeStr(x.getShape()));
  size_t spatial = x.getRank() - 2;
  if (kernel.size() != spatial)
    return emitInferError(loc, "expected " + std::to_string(spatial) +
                                   " kernel sizes");
  if (failed(checkWindowAttrs(loc, spatial, strides, pads, dilations)))
    return failure();
  SmallVector<int64_t> shape = {x.getDimSize(0), x.getDimSize(1)};
  for (size_t i = 0; i < spatial; ++i)
    shape.push_back(windowOutput(x.getDimSize(2 + i), kernel[i], strides[i],
                                 pads[i], pads[spatial + i], dilations[i],
                                 ceilMode));
  inferred.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

#define AUTOPAR_POOL_INFERENCE(OP)                                             \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, ValueRange operands,         \
      DictionaryAttr attributes, OpaqueProperties properties,                  \
      RegionRange regions, SmallVectorImpl<Type> &inferred) {                  \
    OP::Adaptor adaptor(operands, attributes, properties, regions);            \
    return inferPool(loc, adaptor.getInput(), adaptor.getKernelShape(),        \
                     adaptor.getStrides(), adaptor.getPads(),                  \
                     adaptor.getDilations(), adaptor.getCeilMode(), inferred); \
  }
AUTOPAR_POOL_INFERENCE(MaxPoolOp)
AUTOPAR_POOL_INFERENCE(AveragePoolOp)
#undef AUTOPAR_POOL_INFERENCE

LogicalResult GlobalAveragePoolOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr, OpaqueProperties, RegionRange,
    SmallVectorImpl<Type> &inferred) {
  auto x = cast<RankedTensorType>(operands[0].getType());
  if (x.getRank() < 3)
    return emitInferError(loc, "pooling needs rank >= 3, got " +
                                   shapeStr(x.getShape()));
  SmallVector<int64_t> shape(x.getRank(), 1);
  shape[0] = x.getDimSize(0);
  shape[1] = x.getDimSize(1);
  inferred.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Einsum
//===----------------------------------------------------------------------===//

FailureOr<EinsumEquation> mlir::autopar::parseEinsumEquation(StringRef text) {
  EinsumEquation eq;
  auto [lhs, rhs] = text.split("->");
  if (lhs.size() == text.size())
    return failure();
  SmallVector<StringRef> inputs;
  lhs.split(inputs, ',');
  auto valid = [](StringRef term) {
    return llvm::all_of(term, [](char c) { return c >= 'a' && c <= 'z'; });
  };
  for (StringRef term : inputs) {
    term = term.trim();
    if (!valid(term))
      return failure();
    eq.inputs.push_back(term.str());
  }
  rhs = rhs.trim();
  if (!valid(rhs))
    return failure();
  eq.output = rhs.str();
  for (char c : eq.output)
    if (llvm::count(eq.output, c) != 1 ||
        llvm::none_of(eq.inputs, [&](const std::string &t) {
          return t.find(c) != std::string::npos;
        }))
      return failure();
  return eq;
}

LogicalResult EinsumOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         ValueRange operands,
                                         DictionaryAttr attributes,
                                         OpaqueProperties properties,
                                         RegionRange regions,
                                         SmallVectorImpl<Type> &inferred) {
  EinsumOp::Adaptor adaptor(operands, attributes, properties, regions);
  FailureOr<EinsumEquation> eq = parseEinsumEquation(adaptor.getEquation());
  if (failed(eq))
    return emitInferError(loc, "unsupported einsum equation '" +
                                   adaptor.getEquation().str() +
                                   "': expected lowercase terms and an "
                                   "explicit '->' output, without '...'");
  if (eq->inputs.size() != operands.size())
    return emitInferError(loc, "einsum equation has " +
                                   std::to_string(eq->inputs.size()) +
                                   " inputs, op has " +
                                   std::to_string(operands.size()));
  if (!sameElementType(operands))
    return emitInferError(loc, "operands must have the same element type");
  llvm::DenseMap<char, int64_t> sizes;
  for (auto [term, operand] : llvm::zip(eq->inputs, operands)) {
    auto type = cast<RankedTensorType>(operand.getType());
    if ((int64_t)term.size() != type.getRank())
      return emitInferError(loc, "einsum term '" + term + "' does not match " +
                                     shapeStr(type.getShape()));
    for (auto [c, size] : llvm::zip(term, type.getShape())) {
      auto [it, inserted] = sizes.try_emplace(c, size);
      if (!inserted && it->second != size) {
        if (it->second == 1)
          it->second = size;
        else if (size != 1)
          return emitInferError(loc, std::string("einsum letter '") + c +
                                         "' has sizes " +
                                         std::to_string(it->second) + " and " +
                                         std::to_string(size));
      }
    }
  }
  SmallVector<int64_t> shape;
  for (char c : eq->output)
    shape.push_back(sizes[c]);
  inferred.push_back(RankedTensorType::get(
      shape, cast<ShapedType>(operands[0].getType()).getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Top-k and scatter (AutoparIndexingOps.td)
//===----------------------------------------------------------------------===//

LogicalResult
TopKOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                         ValueRange operands, DictionaryAttr attributes,
                         OpaqueProperties properties, RegionRange regions,
                         SmallVectorImpl<Type> &inferred) {
  TopKOp::Adaptor adaptor(operands, attributes, properties, regions);
  auto type = cast<RankedTensorType>(adaptor.getInput().getType());
  int64_t axis = adaptor.getAxis(), k = adaptor.getK();
  if (failed(checkAxis(loc, axis, type.getRank())))
    return failure();
  int64_t size = type.getDimSize(axis);
  if (k < 0 || (!ShapedType::isDynamic(size) && k > size))
    return emitInferError(loc, "k = " + std::to_string(k) +
                                   " is out of range for axis " +
                                   std::to_string(axis) + " of " +
                                   shapeStr(type.getShape()));
  SmallVector<int64_t> shape(type.getShape());
  shape[axis] = k;
  inferred.push_back(RankedTensorType::get(shape, type.getElementType()));
  inferred.push_back(RankedTensorType::get(shape, IntegerType::get(ctx, 64)));
  return success();
}

/// The reductions ScatterElements and ScatterND accept.
static LogicalResult checkScatterReduction(std::optional<Location> loc,
                                           StringRef reduction) {
  if (reduction == "none" || reduction == "add" || reduction == "mul" ||
      reduction == "max" || reduction == "min")
    return success();
  return emitInferError(loc, "unknown scatter reduction '" + reduction.str() +
                                 "' (none, add, mul, max, min)");
}

LogicalResult ScatterElementsOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<Type> &inferred) {
  ScatterElementsOp::Adaptor adaptor(operands, attributes, properties,
                                     regions);
  auto data = cast<RankedTensorType>(adaptor.getData().getType());
  auto indices = cast<RankedTensorType>(adaptor.getIndices().getType());
  auto updates = cast<RankedTensorType>(adaptor.getUpdates().getType());
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxis(loc, axis, data.getRank())) ||
      failed(checkScatterReduction(loc, adaptor.getReduction())))
    return failure();
  if (!isa<IntegerType>(indices.getElementType()))
    return emitInferError(loc, "scatter_elements indices must be integers");
  if (updates.getElementType() != data.getElementType())
    return emitInferError(loc, "updates must have the element type of data");
  if (indices.getShape() != updates.getShape())
    return emitInferError(loc, "indices of shape " +
                                   shapeStr(indices.getShape()) +
                                   " and updates of shape " +
                                   shapeStr(updates.getShape()) +
                                   " must have the same shape");
  if (indices.getRank() != data.getRank())
    return emitInferError(loc, "indices of shape " +
                                   shapeStr(indices.getShape()) +
                                   " must have the rank of data of shape " +
                                   shapeStr(data.getShape()));
  for (int64_t d = 0; d < data.getRank(); ++d)
    if (d != axis && indices.getDimSize(d) > data.getDimSize(d))
      return emitInferError(
          loc, "indices of shape " + shapeStr(indices.getShape()) +
                   " exceed data of shape " + shapeStr(data.getShape()) +
                   " in dimension " + std::to_string(d));
  inferred.push_back(data);
  return success();
}

LogicalResult ScatterNDOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<Type> &inferred) {
  ScatterNDOp::Adaptor adaptor(operands, attributes, properties, regions);
  auto data = cast<RankedTensorType>(adaptor.getData().getType());
  auto indices = cast<RankedTensorType>(adaptor.getIndices().getType());
  auto updates = cast<RankedTensorType>(adaptor.getUpdates().getType());
  if (failed(checkScatterReduction(loc, adaptor.getReduction())))
    return failure();
  if (!isa<IntegerType>(indices.getElementType()))
    return emitInferError(loc, "scatter_nd indices must be integers");
  if (updates.getElementType() != data.getElementType())
    return emitInferError(loc, "updates must have the element type of data");
  if (indices.getRank() < 1 || data.getRank() < 1)
    return emitInferError(loc, "scatter_nd needs data and indices of rank >= 1");
  int64_t k = indices.getDimSize(indices.getRank() - 1);
  if (ShapedType::isDynamic(k) || k < 1 || k > data.getRank())
    return emitInferError(loc, "the last dimension of indices of shape " +
                                   shapeStr(indices.getShape()) +
                                   " must be in [1, rank of data " +
                                   shapeStr(data.getShape()) + "]");
  SmallVector<int64_t> expected(indices.getShape().drop_back());
  llvm::append_range(expected, data.getShape().drop_front(k));
  if (updates.getShape() != ArrayRef<int64_t>(expected))
    return emitInferError(loc, "updates of shape " +
                                   shapeStr(updates.getShape()) +
                                   " must have shape " + shapeStr(expected) +
                                   " (indices[:-1] ++ data[k:])");
  inferred.push_back(data);
  return success();
}

#define GET_OP_CLASSES
#include "autopar/Dialect/Autopar/IR/AutoparOps.cpp.inc"

//===----------------------------------------------------------------------===//
// AssignOp
//===----------------------------------------------------------------------===//

LogicalResult AssignOp::verify() {
  if (!getWeight().getDefiningOp<WeightOp>())
    return emitOpError() << "needs the result of an 'autopar.weight' as its "
                            "first operand";
  return success();
}

//===----------------------------------------------------------------------===//
// RandomUniformOp
//===----------------------------------------------------------------------===//

LogicalResult RandomUniformOp::verify() {
  auto type = getResult().getType();
  if (!type.hasStaticShape())
    return emitOpError() << "needs a statically shaped result, got " << type;
  if (Value counter = getCounter()) {
    auto counterType = cast<RankedTensorType>(counter.getType());
    if (!counterType.hasStaticShape() || counterType.getNumElements() != 1)
      return emitOpError() << "needs a one-element counter, got "
                           << counterType;
  }
  int64_t rank = type.getRank();
  if (!getOffsets().empty() && (int64_t)getOffsets().size() != rank)
    return emitOpError() << "needs one offset per result dimension, got "
                         << getOffsets().size() << " offsets for rank " << rank;
  if (std::optional<ArrayRef<int64_t>> global = getGlobalShape()) {
    if ((int64_t)global->size() != rank)
      return emitOpError() << "global_shape has rank " << global->size()
                           << ", the result has rank " << rank;
    for (int64_t d = 0; d < rank; ++d)
      if ((*global)[d] < type.getDimSize(d))
        return emitOpError()
               << "global_shape dimension " << d << " (" << (*global)[d]
               << ") is smaller than the result's (" << type.getDimSize(d)
               << ")";
  }
  std::optional<ArrayRef<int64_t>> whole = getWholeShape();
  if (!whole && getWholeOffsets())
    return emitOpError() << "has whole_offsets without whole_shape";
  if (whole) {
    if ((int64_t)whole->size() != rank)
      return emitOpError() << "whole_shape has rank " << whole->size()
                           << ", the result has rank " << rank;
    ArrayRef<int64_t> global =
        getGlobalShape() ? *getGlobalShape() : type.getShape();
    std::optional<ArrayRef<int64_t>> offsets = getWholeOffsets();
    if (offsets && (int64_t)offsets->size() != rank)
      return emitOpError() << "whole_offsets has " << offsets->size()
                           << " entries for rank " << rank;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t offset = offsets ? (*offsets)[d] : 0;
      if (offset < 0 || offset + global[d] > (*whole)[d])
        return emitOpError() << "block of " << global[d] << " at offset "
                             << offset << " along dimension " << d
                             << " leaves whole_shape (" << (*whole)[d] << ")";
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// SendOp and RecvOp
//===----------------------------------------------------------------------===//

/// A boundary tensor crosses stages as raw bytes of a static shape.
static LogicalResult verifyBoundaryType(Operation *op, Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return op->emitOpError()
           << "needs a statically shaped tensor, got " << type;
  return success();
}

LogicalResult SendOp::verify() {
  return verifyBoundaryType(*this, getInput().getType());
}

LogicalResult RecvOp::verify() {
  return verifyBoundaryType(*this, getResult().getType());
}
