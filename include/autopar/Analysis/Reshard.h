//===- Reshard.h - decomposing a reshard into collectives ---------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// How a value moves from one sharding to another on an N-D grid, as a
// sequence of single-step collectives, and what each step moves. The
// partitioner emits these steps; the plan report lists and prices them.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_ANALYSIS_RESHARD_H
#define AUTOPAR_ANALYSIS_RESHARD_H

#include "autopar/Dialect/Autopar/IR/Autopar.h"

namespace mlir::autopar {

/// One single-step collective of a reshard.
struct ReshardStep {
  enum class Kind {
    AllReduce,     ///< pending sum over `axes` -> summed
    ReduceScatter, ///< pending sum over `axes` -> summed and split along `dim`
    AllGather,     ///< split of `dim` over trailing `axes` -> gathered
    AllToAll,      ///< split of `dim` over `axes` moves to `otherDim`
    AllSlice,      ///< split `dim` further over `axes` (local)
    ToPartial,     ///< replicated -> pending sum over `axes` (local)
    SwapAxes,      ///< split or pending sum over axes[0] moves to axes[1]
                   ///< (point to point, equal axis sizes)
  };
  Kind kind;
  SmallVector<int64_t> axes;
  int64_t dim = -1;      ///< tensor dimension split/gathered/scattered
  int64_t otherDim = -1; ///< AllToAll: dimension that becomes split
  ShardingAttr before;   ///< sharding before this step
  ShardingAttr after;    ///< sharding after this step
};

/// Lowercase name of a step kind ("all_reduce", ...).
StringRef stringifyReshardKind(ReshardStep::Kind kind);

/// Steps taking a value from `from` to `to` (same rank). Pending sums are
/// reduced first (reduce-scatter where the target splits a dimension over the
/// reduced axes), then a minor axis that moves between dimensions goes by
/// all-to-all, then gathers, then local slices, then new pending sums.
SmallVector<ReshardStep> planReshard(ShardingAttr from, ShardingAttr to);

/// The cheapest steps taking a value of `globalShape` (`elementBytes` per
/// element) on `gridShape` from `from` to `to`: fewest bytes sent per device,
/// then fewest collectives, over single-axis steps (merged where one
/// multi-axis collective moves the same bytes). nullopt when a sharding does
/// not divide or the search exceeds `maxStates` states.
std::optional<SmallVector<ReshardStep>>
searchCheapestReshard(ShardingAttr from, ShardingAttr to,
                      ArrayRef<int64_t> globalShape, int64_t elementBytes,
                      ArrayRef<int64_t> gridShape, int64_t maxStates = 20000);

/// searchCheapestReshard, or planReshard's fixed order when the search gives
/// no answer.
SmallVector<ReshardStep> planCheapestReshard(ShardingAttr from, ShardingAttr to,
                                             ArrayRef<int64_t> globalShape,
                                             int64_t elementBytes,
                                             ArrayRef<int64_t> gridShape);

/// Bytes one device sends for `step` on a value of `globalShape` with
/// `elementBytes` per element on `gridShape` (ring algorithms: all-reduce
/// 2(n-1)/n of the local bytes, all-gather (n-1)/n of the gathered bytes,
/// reduce-scatter and all-to-all (n-1)/n of the input bytes; local steps 0).
int64_t getReshardStepBytes(const ReshardStep &step,
                            ArrayRef<int64_t> globalShape, int64_t elementBytes,
                            ArrayRef<int64_t> gridShape);

} // namespace mlir::autopar

#endif // AUTOPAR_ANALYSIS_RESHARD_H
