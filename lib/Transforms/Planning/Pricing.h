//===- Pricing.h - time and memory of a choice ------------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The prices the planner optimizes: seconds per node strategy and per edge
// (the collectives a pair of layouts implies), bytes per stored value and per
// resharded copy, and the full prediction of a choice (step time and the peak
// over all liveness points). The integer program and the self-check after it
// both read these, so the program's objective is the plan's price.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_LIB_TRANSFORMS_PLANNING_PRICING_H
#define AUTOPAR_LIB_TRANSFORMS_PLANNING_PRICING_H

#include "StrategyGraph.h"

#include "autopar/Analysis/CostModel.h"

#include "llvm/ADT/DenseMap.h"

#include <memory>

namespace mlir::autopar::planning {

/// Seconds of a node's backward pass per second of its forward pass (input
/// and weight gradients: two contractions per forward one).
constexpr double kBackwardComputeFactor = 2;

class PlanPricer {
public:
  explicit PlanPricer(const StrategyGraph &graph)
      : graph(graph), options(graph.options) {}

  /// Seconds of node `n` under strategy `s` (training: forward + backward,
  /// plus a second forward when the node is recomputed).
  double nodeCost(unsigned n, unsigned s) const {
    return nodeCost(n, s, graph.isRecomputed(n));
  }
  double nodeCost(unsigned n, unsigned s, bool recomputed) const;
  /// Communication seconds of edge `e` when its ends use strategies s and t
  /// (training: a recomputed consumer repeats its forward collectives).
  double edgeCost(const Edge &e, unsigned s, unsigned t) const {
    return edgeCost(e, s, t, graph.isRecomputed(e.consumer));
  }
  double edgeCost(const Edge &e, unsigned s, unsigned t, bool recomputed) const;
  /// Bytes a value takes per device (training: weights hold their
  /// optimizer state too).
  double valueBytes(unsigned n, unsigned r, ShardingAttr layout) const;
  /// Extra bytes at the consumer of `e` for a resharded copy.
  double transientBytes(const Edge &e, unsigned s, unsigned t) const;
  /// The runtime's scratch copy while the collective that makes `e`'s
  /// resharded copy runs (autopar/Runtime/CollectiveScratch.h): held with
  /// the copies made before it, not with the consumer's results or
  /// per-call buffers.
  double collectiveScratchBytes(const Edge &e, unsigned s, unsigned t) const;
  /// Whether `e` is the stored weight of an `autopar.assign`. The
  /// partitioner stores in the weight's own layout whatever the assign's
  /// strategy, so such an edge is priced the other way round: the update,
  /// which arrives in the assign's layout, is resharded into the weight's
  /// (an update split where the weight is whole is all-gathered).
  bool isWeightStore(const Edge &e) const;
  /// Whether, under its consumer's strategy `t`, edge `e` reads the value
  /// of an earlier operand of the same op in the same layout: the
  /// partitioner makes one reshard per value and layout, so such an edge
  /// has no communication and no copy of its own (the square `g * g` of
  /// Adam's second moment reads one all-reduced gradient).
  bool sharesReshard(const Edge &e, unsigned t) const;
  /// Extra bytes node `n` holds while it runs under strategy `s`, beyond its
  /// operands and results: the per-call buffers of a matmul or gemm that
  /// autopar-pack-contractions data-tiles (autopar/Analysis/DataTiling.h),
  /// for the register tile of the host's ISA, which the lowering uses. 0 for
  /// other ops. A constant per strategy, so the memory rows stay linear.
  double scratchBytes(unsigned n, unsigned s) const;
  /// Step time and peak memory of a complete choice.
  PlanPrediction evaluate(const Choice &choice) const;
  /// The seconds of the reshards that `evaluate` counts once although
  /// several consumers read the same value in the same layout (the
  /// partitioner makes one reshard for them). The integer program prices
  /// every consumer's edge on its own, so its objective exceeds the plan's
  /// price by exactly this much.
  double getSharedReshardTime(const Choice &choice) const;

private:
  const ReshardCost &reshard(RankedTensorType type, ShardingAttr from,
                             ShardingAttr to) const;

  const StrategyGraph &graph;
  const AutoPlanOptions &options;
  /// options.reshardCache where it matches, else ownCache (made on first
  /// use).
  mutable ReshardCostCache *cache = nullptr;
  mutable std::unique_ptr<ReshardCostCache> ownCache;
};

} // namespace mlir::autopar::planning

#endif // AUTOPAR_LIB_TRANSFORMS_PLANNING_PRICING_H
