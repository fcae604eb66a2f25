//===- Recomputation.h - activations recomputed, not stored -----*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Activation recomputation in a training step (Korthikanti et al. 2022), as
// a change of the strategy graph's memory rows and prices: the values a
// recomputed region produces leave the stored activations, its ops run their
// forward pass a second time before their backward pass (with the forward
// collectives on their operands), and its working set is live during that
// backward pass (one extra liveness point per region).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_LIB_TRANSFORMS_PLANNING_RECOMPUTATION_H
#define AUTOPAR_LIB_TRANSFORMS_PLANNING_RECOMPUTATION_H

#include "BlockFolding.h"
#include "StrategyGraph.h"

namespace mlir::autopar::planning {

/// What a recomputation setting covers in one graph.
struct RecomputeRegions {
  /// The recomputed regions: each a set of compute nodes.
  std::vector<std::vector<unsigned>> regions;
  /// Repeated blocks in program order (for `Full`).
  unsigned availableBlocks = 0;
};

/// The attention cores of `graph`: per contraction of two activations (both
/// operands depend on a runtime input), the ops it reaches up to and
/// including the next such contraction, when none of them reaches an output
/// any other way.
std::vector<std::vector<unsigned>>
findAttentionCores(const StrategyGraph &graph);

/// Applies `spec` to `graph` (training): sets `recomputed`, rebuilds
/// `persistent` without the dropped activations and appends one working-set
/// point per region. `blocks` are the repeated blocks (found whether or not
/// they are folded). Fails with a diagnostic at `loc` when the setting does
/// not apply (no attention core, no repeated blocks, more blocks than the
/// model has).
FailureOr<RecomputeRegions> applyRecomputation(StrategyGraph &graph,
                                               ArrayRef<FoldedBlock> blocks,
                                               const RecomputeSpec &spec,
                                               Location loc);

} // namespace mlir::autopar::planning

#endif // AUTOPAR_LIB_TRANSFORMS_PLANNING_RECOMPUTATION_H
