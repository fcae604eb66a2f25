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

bool GemmOp::isAdditiveOperand(unsigned index) { return index == 2; }

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

#define GET_OP_CLASSES
#include "autopar/Dialect/Autopar/IR/AutoparOps.cpp.inc"
