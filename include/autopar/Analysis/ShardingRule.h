//===- ShardingRule.h - loop-based sharding rules of ops ----------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The sharding rule of an op, read from its upstream `shard::ShardingInterface`
// (loop iterator types, indexing maps) and autopar's ShardingRuleInterface
// (additive operands, loops that must stay whole).
// A *loop assignment* gives each loop of the op the grid axes that split it;
// from it follow the sharding every operand must have and the sharding of the
// results (split parallel loops; split reduction loops make the results
// pending sums over those axes).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_ANALYSIS_SHARDINGRULE_H
#define AUTOPAR_ANALYSIS_SHARDINGRULE_H

#include "autopar/Dialect/Autopar/IR/Autopar.h"

#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"

namespace mlir::autopar {

/// Grid axes per loop of an op (major first).
using LoopAxes = SmallVector<SmallVector<int64_t>>;

/// The sharding rule of one op.
class ShardingRule {
public:
  /// Reads the rule of `op`; failure when `op` implements no sharding
  /// interface or its maps are not usable (no diagnostic).
  static FailureOr<ShardingRule> get(Operation *op);

  unsigned getNumLoops() const { return iterators.size(); }
  bool isReduction(unsigned loop) const {
    return iterators[loop] == utils::IteratorType::reduction;
  }
  /// False for a loop that must stay whole on every device.
  bool isSplittable(unsigned loop) const { return splittable[loop]; }
  /// Loop that dimension `dim` of operand `index` walks, or nullopt for a
  /// broadcast (constant) dimension.
  std::optional<unsigned> getOperandLoop(unsigned index, unsigned dim) const;
  std::optional<unsigned> getResultLoop(unsigned index, unsigned dim) const;

  /// The sharding operand `index` must have under `loops`.
  ShardingAttr getOperandSharding(MLIRContext *ctx, unsigned index,
                                  const LoopAxes &loops) const;
  /// The sharding of result `index` under `loops`.
  ShardingAttr getResultSharding(MLIRContext *ctx, unsigned index,
                                 const LoopAxes &loops) const;

  /// The loop assignment implied by the result shardings; pending-sum axes go
  /// to the reduction loop that an operand already splits over them, else to
  /// the first reduction loop. Fails with a diagnostic on `op` when the
  /// shardings are inconsistent (different results, a pending sum without a
  /// reduction loop).
  FailureOr<LoopAxes>
  getLoopsFromResults(Operation *op, ArrayRef<ShardingAttr> resultShardings,
                      ArrayRef<ShardingAttr> operandShardings) const;

  /// A loop assignment that follows the operands' splits (first operand
  /// first; an axis already taken is skipped; pending sums are ignored).
  /// Null entries are operands without a sharding yet.
  LoopAxes getLoopsFromOperands(ArrayRef<ShardingAttr> operandShardings) const;

  /// Grid axes of all split reduction loops, sorted.
  SmallVector<int64_t> getPartialAxes(const LoopAxes &loops) const;

  unsigned getNumOperands() const { return numOperands; }

private:
  SmallVector<utils::IteratorType> iterators;
  SmallVector<AffineMap> maps; ///< operands then results
  SmallVector<bool> additive;  ///< per operand
  SmallVector<bool> splittable; ///< per loop
  unsigned numOperands = 0;
};

/// How an annotated op runs under its plan: the loop assignment implied by
/// its result shardings and the sharding each operand must be brought to.
struct OpShardingPlan {
  LoopAxes loops;
  SmallVector<ShardingAttr> requiredOperands;
  SmallVector<ShardingAttr> results;
};

/// Reads the annotations of `op` (autopar-apply-plan output) and derives its
/// OpShardingPlan; emits an error on `op` and fails when an operand or result
/// lacks a sharding, `op` has no rule, or the shardings are inconsistent.
FailureOr<OpShardingPlan> getOpShardingPlan(Operation *op);

} // namespace mlir::autopar

#endif // AUTOPAR_ANALYSIS_SHARDINGRULE_H
