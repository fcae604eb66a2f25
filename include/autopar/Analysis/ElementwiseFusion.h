//===- ElementwiseFusion.h - elementwise chains run as one pass -*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Which values of a block a fusing lowering never stores, and which operand
// reads it never makes: the cost model prices a chain of elementwise ops as
// one pass over memory (getOpWork), as autopar-fuse-elementwise runs it.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_ANALYSIS_ELEMENTWISEFUSION_H
#define AUTOPAR_ANALYSIS_ELEMENTWISEFUSION_H

#include "mlir/IR/Block.h"
#include "mlir/IR/Operation.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <utility>

namespace mlir::autopar {

/// True for an op that lowers to one all-parallel loop nest: it declares the
/// elementwise cost class (CostInterface) and has one result.
bool isFusibleElementwiseOp(Operation *op);

/// True for the ops autopar-fuse-elementwise does not fuse across when the
/// producer's dying operands outgrow its result: contractions, convolutions,
/// reductions, and the ops that become runtime calls (send, recv, assign).
bool isElementwiseFusionBarrier(Operation *op);

/// The fused kernels of a block, decided from the graph alone (never from
/// layouts, so that each op's price under a strategy stays its own), with
/// the criteria of autopar-fuse-elementwise stated on autopar ops:
///   - A value is *fused* when it is the result of an elementwise op
///     (isFusibleElementwiseOp) and every use of it is by an elementwise op
///     whose result has the value's shape (it is read whole, element by
///     element; the consumer's other operands may broadcast), all of these
///     uses in one kernel, and fusing does not hold more memory: when the
///     producer's operands that die at it (defined by compute ops and used
///     neither by the kernel nor after it) are larger than the value, no
///     fusion barrier may lie between the producer and the kernel's last op.
///     A kernel is the set of ops joined by fused values; it runs at its
///     last op. A fused value is never written by its producer nor read by
///     its consumers.
///   - A kernel reads each other value once: an operand that an earlier op
///     of the kernel, or an earlier operand of the same op, already reads is
///     not read again (the lowering merges equal operands of a fused loop
///     nest). A lone elementwise op is a kernel of one.
/// Reductions (softmax, log-softmax, layer and batch norm, Reduce*) are
/// neither fused producers nor fused consumers: their lowerings read their
/// input in two loop nests (the maximum or sum, then the normalization), so
/// an elementwise producer of it has two uses after lowering and is stored,
/// and their last, elementwise loop nest fused into a consumer would read
/// the unnormalized tensor of the same size instead of the result. Megatron
/// fuses more (its softmax kernel reads the unscaled, unmasked scores once);
/// autopar prices the program its own lowering runs.
/// Views (reshape, split, slice) are neither: their users read the buffer.
class ElementwiseFusion {
public:
  explicit ElementwiseFusion(Block &block);

  /// Whether `value` is computed inside its consumers and never stored.
  bool isFused(Value value) const { return fused.contains(value); }
  /// Whether `op` reads its operand `operand` from memory.
  bool readsOperand(Operation *op, unsigned operand) const {
    return !skippedReads.contains({op, operand});
  }
  /// Whether `op` writes its result `result` to memory.
  bool writesResult(Operation *op, unsigned result) const {
    return !isFused(op->getResult(result));
  }
  /// The last op of the kernel `op` runs in: `op` itself when none of its
  /// results is fused.
  Operation *getKernel(Operation *op) const {
    auto it = kernelOf.find(op);
    return it == kernelOf.end() ? op : it->second;
  }

private:
  /// Whether fusing `producer` into `kernel` keeps its dying operands live
  /// across a fusion barrier, and they outgrow its result.
  bool holdsMore(Operation *producer, Operation *kernel) const;

  llvm::DenseSet<Value> fused;
  llvm::DenseMap<Operation *, Operation *> kernelOf;
  llvm::DenseSet<std::pair<Operation *, unsigned>> skippedReads;
};

} // namespace mlir::autopar

#endif // AUTOPAR_ANALYSIS_ELEMENTWISEFUSION_H
