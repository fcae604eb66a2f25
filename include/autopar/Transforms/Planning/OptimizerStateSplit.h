//===- OptimizerStateSplit.h - the ZeRO-1 split of an update ----*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The rule by which the distributed optimizer (`--distributed-optimizer`,
// ZeRO-1) splits a weight's optimizer update over the devices that hold
// replicas of the weight. It is stated once, here:
// autopar-shard-optimizer-state applies it to an annotated step, and the
// plan search (StrategyGraph) prices every plan with it, so that the plan
// the search picks is the program the pass leaves.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_TRANSFORMS_PLANNING_OPTIMIZERSTATESPLIT_H
#define AUTOPAR_TRANSFORMS_PLANNING_OPTIMIZERSTATESPLIT_H

#include "autopar/Dialect/Autopar/IR/Autopar.h"

#include "llvm/ADT/STLFunctionalExtras.h"

namespace mlir::autopar {

/// The sharding of the optimizer state of a weight of `shape` laid out as
/// `weightSharding` on a grid of `gridShape`: the weight's sharding with the
/// grid axes that neither split a dimension nor hold a pending sum (the
/// weight's replica axes) added to the dimension whose local extent they
/// divide and that is the largest. Null when there is no such axis or no
/// such dimension (the update is left as planned).
ShardingAttr getOptimizerStateSharding(ShardingAttr weightSharding,
                                       ArrayRef<int64_t> shape,
                                       ArrayRef<int64_t> gridShape);

/// A value the split gives a sharding of its own.
struct SplitValue {
  Value value;
  ShardingAttr sharding;
};

/// The shardings the split gives the values of `weight`'s optimizer update
/// (`update`, the ops collectOptimizerUpdates finds for it) when the weight
/// has sharding `weightSharding`, in the order the split sets them:
///   - every result of the weight's shape of an op of the update, but the
///     store of the weight itself (which keeps the weight's sharding, so the
///     partitioner all-gathers the updated slices into it), takes
///     getOptimizerStateSharding;
///   - the transposes and unit reshapes between a gradient (an operand of
///     the weight's shape made outside the update) and the update, read by
///     the update alone, take the split moved up through them, until a
///     pending sum (which the partitioner then reduce-scatters into the
///     split instead of all-reducing it).
/// `getSharding` gives the sharding a value has before the split. Empty when
/// the weight has no replica axis the split can use.
SmallVector<SplitValue>
getOptimizerStateSplit(WeightOp weight, ArrayRef<Operation *> update,
                       ShardingAttr weightSharding, ArrayRef<int64_t> gridShape,
                       llvm::function_ref<ShardingAttr(Value)> getSharding);

} // namespace mlir::autopar

#endif // AUTOPAR_TRANSFORMS_PLANNING_OPTIMIZERSTATESPLIT_H
