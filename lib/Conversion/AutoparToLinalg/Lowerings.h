//===- Lowerings.h - helpers of autopar-convert-to-linalg -------*- C++ -*-===//
//-*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Private to lib/Conversion/AutoparToLinalg: IR-building helpers shared by
// the op families of autopar-convert-to-linalg and the functions that
// populate each family's patterns.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_LIB_CONVERSION_AUTOPARTOLINALG_LOWERINGS_H
#define AUTOPAR_LIB_CONVERSION_AUTOPARTOLINALG_LOWERINGS_H

#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::autopar::tolinalg {

//===----------------------------------------------------------------------===//
// Scalars
//===----------------------------------------------------------------------===//

// Scalars of every element type go in and come out with their own type:
// unsigned integers (`ui8`, ONNX UINT8) enter arith as the signless integers
// of their width (toSignless) and leave it recast (fromSignless), and the
// signedness of an integer operation (division, remainder, min/max,
// comparisons, widening) comes from that type.

/// An `arith.constant` of scalar `type` (float or integer, unsigned ones
/// recast) holding `value` (truncated toward zero for integers, clamped into
/// the range of `type`).
Value createConstant(OpBuilder &b, Location loc, Type type, double value);
/// The lowest value of `type`: -inf for floats, the minimum of integers (0
/// for unsigned ones and bool).
Value createLowest(OpBuilder &b, Location loc, Type type);

/// True for integers whose arithmetic is unsigned: explicitly unsigned types
/// and bool (i1).
bool isUnsignedInteger(Type type);
/// `build(signless lhs, signless rhs, isUnsigned)` computed on the integer
/// scalars `lhs` and `rhs` (of one type), recast to that type.
Value createIntegerOp(
    OpBuilder &b, Location loc, Value lhs, Value rhs,
    function_ref<Value(OpBuilder &, Location, Value, Value, bool)> build);

/// Float or integer arithmetic picked from the operand type. Integers are
/// signed unless their type is explicitly unsigned; division truncates toward
/// zero as ONNX does.
Value createAdd(OpBuilder &b, Location loc, Value lhs, Value rhs);
Value createSub(OpBuilder &b, Location loc, Value lhs, Value rhs);
Value createMul(OpBuilder &b, Location loc, Value lhs, Value rhs);
Value createDiv(OpBuilder &b, Location loc, Value lhs, Value rhs);
/// NaN-propagating maximum / minimum for floats.
Value createMax(OpBuilder &b, Location loc, Value lhs, Value rhs);
Value createMin(OpBuilder &b, Location loc, Value lhs, Value rhs);

/// The index `index` (any integer width) wrapped when negative, checked
/// against `size` with `cf.assert` (`message`) and clamped into range, as an
/// `index` value.
Value wrapAndCheckIndex(OpBuilder &b, Location loc, Value index, int64_t size,
                        StringRef message);

//===----------------------------------------------------------------------===//
// Tensors and linalg
//===----------------------------------------------------------------------===//

/// `tensor.empty` of the static `type`.
/// `scalar` as a signless integer when it is a signed or unsigned one (`ui8`
/// values enter arith this way), else `scalar` itself.
Value toSignless(OpBuilder &b, Location loc, Value scalar);
/// `scalar` (signless) as type `to` (e.g. `ui8`); `scalar` when it has it.
Value fromSignless(OpBuilder &b, Location loc, Value scalar, Type to);

Value createEmpty(OpBuilder &b, Location loc, RankedTensorType type);
/// A tensor of `type` filled with the scalar `value`.
Value createFilled(OpBuilder &b, Location loc, RankedTensorType type,
                   Value value);

/// Result expressions of the indexing map of an operand of shape
/// `operandShape` broadcast (numpy rules: aligned to the right) to the loops
/// `firstLoop .. firstLoop + loopShape.size()` whose sizes are `loopShape`. A
/// size-1 dimension against a larger loop reads index 0.
SmallVector<AffineExpr> getBroadcastExprs(ArrayRef<int64_t> operandShape,
                                          ArrayRef<int64_t> loopShape,
                                          unsigned firstLoop, MLIRContext *ctx);
/// The map of getBroadcastExprs over exactly the loops of `loopShape`.
AffineMap getBroadcastMap(ArrayRef<int64_t> operandShape,
                          ArrayRef<int64_t> loopShape, MLIRContext *ctx);
/// The map from `rank` loops to the loops that are not in `dropped`.
AffineMap getDroppedDimsMap(unsigned rank, ArrayRef<int64_t> dropped,
                            MLIRContext *ctx);

/// Computes the scalar result from the scalar operands (block arguments of
/// the inputs only).
using ScalarFn = function_ref<Value(OpBuilder &, Location, ValueRange)>;

/// A parallel `linalg.generic` over the dimensions of `resultType` whose
/// inputs are `operands` read through `maps` (one per operand) and whose
/// body yields `body(inputs)`.
Value buildGeneric(OpBuilder &b, Location loc, RankedTensorType resultType,
                   ValueRange operands, ArrayRef<AffineMap> maps,
                   ScalarFn body);
/// buildGeneric with each operand broadcast (numpy rules) to `resultType`.
Value buildBroadcastGeneric(OpBuilder &b, Location loc,
                            RankedTensorType resultType, ValueRange operands,
                            ScalarFn body);
/// Reduces `input` over `axes` (sorted) into a tensor without those
/// dimensions, starting from `init` and combining with
/// `combine(b, loc, {element, accumulator})`.
Value buildReduction(OpBuilder &b, Location loc, Value input,
                     ArrayRef<int64_t> axes, Value init, ScalarFn combine);
/// The type that sums of `element` values accumulate in: f64 for f32 (as
/// PyTorch's CPU batch statistics; a sequential f32 sum of n terms loses
/// about log2(n) bits, which a training step through batch norms with
/// variances near epsilon amplifies past float32's tolerance), f32 for
/// 16-bit floats, `element` itself otherwise.
Type getSumAccumulatorType(Type element);
/// The sum of `input` over `axes` (sorted), of `square(x)` per element when
/// `squares` is set, accumulated in getSumAccumulatorType and rounded back
/// to the element type.
Value buildSum(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> axes,
               bool squares = false);
/// Row-major reshape of `value` to the static `type` with
/// `tensor.collapse_shape` / `tensor.expand_shape` (through a 1-D tensor
/// when the two shapes do not nest).
Value createReshape(OpBuilder &b, Location loc, Value value,
                    RankedTensorType type);

//===----------------------------------------------------------------------===//
// Pattern families
//===----------------------------------------------------------------------===//

/// matmul, gemm, einsum.
void populateContractionPatterns(RewritePatternSet &patterns);
/// Unary, binary (broadcasting), comparison, logical ops, where, cast, clip,
/// gelu, relu, leaky_relu.
void populateElementwisePatterns(RewritePatternSet &patterns);
/// softmax, log_softmax, layer_norm, batch_norm, reduce_sum/mean/max.
void populateNormalizationPatterns(RewritePatternSet &patterns);
/// transpose, reshape, expand, concat, split, slice, gather.
void populateMovementPatterns(RewritePatternSet &patterns);
/// conv, max_pool, average_pool, global_average_pool.
void populateConvPoolPatterns(RewritePatternSet &patterns);
/// top_k, scatter_elements, scatter_nd (scf loops over tensors).
void populateIndexingPatterns(RewritePatternSet &patterns);
void populateQuantizationPatterns(RewritePatternSet &patterns);
/// random_uniform (Philox4x32-10 per element).
void populateRandomPatterns(RewritePatternSet &patterns);

} // namespace mlir::autopar::tolinalg

#endif // AUTOPAR_LIB_CONVERSION_AUTOPARTOLINALG_LOWERINGS_H
