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
  /// Communication seconds of edge `e` when its ends use strategies s and t,
  /// as if its consumer were the value's only reader (training: a
  /// recomputed consumer repeats its forward collectives). A value with
  /// several readers is priced by getReshardTime, which shares reshards.
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
  /// for the register tile of the host's ISA, which the lowering uses, and
  /// those of a data-tiled convolution (convScratchBytes). 0 for other ops. A
  /// constant per strategy, so the memory rows stay linear.
  double scratchBytes(unsigned n, unsigned s) const;
  /// scratchBytes of a convolution: the per-call buffers of its data-tiled
  /// form (autopar/Analysis/ConvTiling.h) at the strategy's local shapes.
  double convScratchBytes(unsigned n, unsigned s) const;
  /// Step time and peak memory of a complete choice.
  PlanPrediction evaluate(const Choice &choice) const;

  //===--------------------------------------------------------------------===//
  // The reshards of a value
  //===--------------------------------------------------------------------===//
  //
  // The partitioner reshards a value once per layout its readers need and
  // shares the copy between them; gradients that arrive in one layout are
  // summed and then resharded once. The functions below are the one
  // definition of what the reshards of a value cost: `evaluate` and the
  // search report sum getReshardTime over the producers, and the integer
  // program prices one variable per value, kind, source layout and key with
  // getKeyedReshardTime (IntegerProgram.cpp).

  /// The kinds of reshard a value's readers share: the forward reshard into
  /// the layout a reader needs (in training, every microbatch, and a
  /// weight's once more for the backward pass), its repetition before the
  /// backward pass of a recomputed reader (training), and the reshard of the
  /// gradients that arrive in one layout into the value's (training).
  enum class ReshardKind { Forward, Recompute, Gradient };
  static constexpr ReshardKind kReshardKinds[] = {
      ReshardKind::Forward, ReshardKind::Recompute, ReshardKind::Gradient};

  /// Whether edge `e`'s communication is in its value's shared reshards:
  /// every edge but a weight store (which moves the update, not the value,
  /// and is priced on its own by edgeCost).
  bool isReshardShared(const Edge &e) const { return !isWeightStore(e); }
  /// Whether edge `e` (shared) has a reshard of kind `kind`.
  bool hasReshard(ReshardKind kind, const Edge &e) const;
  /// The layout that names edge `e`'s reshard of kind `kind` under its
  /// reader's strategy `t`: the layout the reader needs (Forward,
  /// Recompute) or the one its gradient arrives in (Gradient). Readers of a
  /// value with equal keys share one reshard.
  ShardingAttr getReshardKey(ReshardKind kind, const Edge &e, unsigned t) const;
  /// Seconds of the reshard of kind `kind` and key `key` of the value edge
  /// `e` reads, in its producer's layout under strategy `s`: once for all
  /// the readers with that key.
  double getKeyedReshardTime(ReshardKind kind, const Edge &e, unsigned s,
                             ShardingAttr key) const;
  /// Communication seconds of the reshards of every value node `n` produces
  /// under `choice`: each (result, kind, key) once, a weight store on its
  /// own edge.
  double getReshardTime(const Choice &choice, unsigned n) const;

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
