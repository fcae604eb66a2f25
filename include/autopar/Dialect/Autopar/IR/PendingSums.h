//===- PendingSums.h - ops that carry a pending sum through -------*- C++
//-*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Which autopar ops are linear in their operands, so that a pending sum
// (#autopar.sharding partial axes) passes through them with no
// communication: f(a1 + a2, b1 + b2) = f(a1, b1) + f(a2, b2) for a sum or a
// transpose, f(a1 + a2, b) = f(a1, b) + f(a2, b) for a product. The planner
// keeps such a sum pending (the microbatches' gradients of a weight are added
// while pending and reduced once); the partitioner then requires the
// operands that carry it to be that pending sum.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_DIALECT_AUTOPAR_IR_PENDINGSUMS_H
#define AUTOPAR_DIALECT_AUTOPAR_IR_PENDINGSUMS_H

namespace mlir {
class Operation;
} // namespace mlir

namespace mlir::autopar {

/// How a pending sum passes through an op.
enum class PendingSumRule {
  /// The operands are summed before the op.
  None,
  /// Linear in all operands together (add, sub, neg, transpose, reshape):
  /// when every operand is a pending sum over the same grid axes, the result
  /// is that pending sum of the per-device results.
  AllOperands,
  /// Linear in each operand separately (mul, matmul, gemm without C): when
  /// one operand is a pending sum and the others do not vary over its axes
  /// (neither split nor pending there), the result is that pending sum.
  OneOperand,
};

/// The way `op` carries a pending sum of its operands to its result.
PendingSumRule getPendingSumRule(Operation *op);

} // namespace mlir::autopar

#endif // AUTOPAR_DIALECT_AUTOPAR_IR_PENDINGSUMS_H
