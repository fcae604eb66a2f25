//===- ShapeFolding.h - Host evaluation of shape computations ---*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Values the importer knows at compile time (initializers, Constants, the
// Shape of a static tensor and what is computed from them) are kept on the
// host as ConstTensors, and the shape-computing ONNX operators (Shape, Gather,
// Concat, Unsqueeze, Slice, Cast, integer arithmetic, ...) are evaluated here
// when all their inputs are known. This is what folds PyTorch's
// Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains to static shapes.
//
// The functions are pure: they report bad input through `error` (one
// lowercase line, no node name; the caller adds it).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_LIB_IMPORT_SHAPEFOLDING_H
#define AUTOPAR_LIB_IMPORT_SHAPEFOLDING_H

#include "autopar/Import/Import.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <string>

namespace mlir::autopar::importer {

/// Largest tensor (in elements) the importer evaluates on the host; larger
/// results are computed by ops at run time.
constexpr int64_t kMaxFoldElements = int64_t(1) << 20;

/// A dense row-major tensor known at import time. Integer and boolean
/// elements are held as int64 (exact for shape arithmetic), float elements as
/// double (holding float32 values when `dtype` is F32).
struct ConstTensor {
  DType dtype = DType::I64;
  SmallVector<int64_t> shape;
  SmallVector<int64_t> ints;
  SmallVector<double> floats;

  bool isFloat() const { return dtype == DType::F32 || dtype == DType::F64; }
  int64_t getNumElements() const;
  /// Element `i` as an integer (floats truncate toward zero).
  int64_t getInt(int64_t i) const;
  /// Element `i` as a double.
  double getDouble(int64_t i) const;
  /// Appends element `i` of `other` (of the same dtype).
  void appendFrom(const ConstTensor &other, int64_t i);
  /// True when all elements are equal (and there is at least one).
  bool isSplat() const;
};

/// Decodes little-endian row-major `bytes` of `dtype`.
ConstTensor makeConstTensor(DType dtype, ArrayRef<int64_t> shape,
                            ArrayRef<char> bytes);
/// An int64 vector.
ConstTensor makeI64Vector(ArrayRef<int64_t> values);
/// A tensor of `shape` filled with element 0 of `value`.
ConstTensor makeSplat(const ConstTensor &value, ArrayRef<int64_t> shape);

/// Little-endian row-major bytes of `tensor`.
std::vector<char> toBytes(const ConstTensor &tensor);
/// The tensor type of `tensor`.
RankedTensorType getConstTensorType(MLIRContext *ctx,
                                    const ConstTensor &tensor);
/// `tensor` as an attribute of its type (a splat when all elements match).
DenseElementsAttr toAttr(MLIRContext *ctx, const ConstTensor &tensor);

/// Elementwise binary `op` (Add, Sub, Mul, Div, Mod, Pow, Equal, Less,
/// Greater, And) with multidirectional broadcasting. Mod follows ONNX: with
/// `fmod` the remainder has the dividend's sign (C's fmod, the only form for
/// floats), without it the divisor's sign (integers only).
FailureOr<ConstTensor> foldBinary(StringRef op, const ConstTensor &lhs,
                                  const ConstTensor &rhs, std::string &error,
                                  bool fmod = false);
/// Elementwise unary `op` (Neg, Abs, Not).
FailureOr<ConstTensor> foldUnary(StringRef op, const ConstTensor &input,
                                 std::string &error);
/// ONNX Where.
FailureOr<ConstTensor> foldWhere(const ConstTensor &cond, const ConstTensor &x,
                                 const ConstTensor &y, std::string &error);
/// ONNX Cast to `to` (float to integer truncates, to bool is `x != 0`).
ConstTensor foldCast(const ConstTensor &input, DType to);
/// ONNX Gather along a non-negative `axis`; negative indices count from the
/// end, out-of-range ones are an error.
FailureOr<ConstTensor> foldGather(const ConstTensor &data,
                                  const ConstTensor &indices, int64_t axis,
                                  std::string &error);
/// ONNX Concat along a non-negative `axis` of tensors of the same rank.
ConstTensor foldConcat(ArrayRef<const ConstTensor *> inputs, int64_t axis);
/// autopar.slice semantics: normalized starts and steps per dimension and
/// the result shape.
ConstTensor foldSlice(const ConstTensor &input, ArrayRef<int64_t> starts,
                      ArrayRef<int64_t> steps, ArrayRef<int64_t> resultShape);
/// Broadcasts `input` to `shape` (which must be its broadcast).
ConstTensor foldExpand(const ConstTensor &input, ArrayRef<int64_t> shape);
/// Transposes `input`: result dimension i is input dimension perm[i].
ConstTensor foldTranspose(const ConstTensor &input, ArrayRef<int64_t> perm);

/// Multidirectional broadcast of two shapes, or failure.
FailureOr<SmallVector<int64_t>> broadcastStatic(ArrayRef<int64_t> lhs,
                                                ArrayRef<int64_t> rhs);

/// Formats a shape as `[2, 3]` for diagnostics.
std::string formatShape(ArrayRef<int64_t> shape);

} // namespace mlir::autopar::importer

#endif // AUTOPAR_LIB_IMPORT_SHAPEFOLDING_H
