//===- PendingSums.h - ops that carry a pending sum through -------*- C++
//-*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Which autopar ops are linear in all their operands together, so that a
// pending sum (#autopar.sharding partial axes) passes through them with no
// communication: f(a1 + a2, b1 + b2) = f(a1, b1) + f(a2, b2). The planner
// keeps such a sum pending (the microbatches' gradients of a weight are added
// while pending and reduced once); the partitioner then requires every
// operand to be the same pending sum.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_DIALECT_AUTOPAR_IR_PENDINGSUMS_H
#define AUTOPAR_DIALECT_AUTOPAR_IR_PENDINGSUMS_H

namespace mlir {
class Operation;
} // namespace mlir

namespace mlir::autopar {

/// True when `op` is linear in all its operands together (add, sub, neg,
/// transpose, reshape): when every operand is a pending sum over the same
/// grid axes, the result is that pending sum of the per-device results.
bool forwardsPendingSum(Operation *op);

} // namespace mlir::autopar

#endif // AUTOPAR_DIALECT_AUTOPAR_IR_PENDINGSUMS_H
