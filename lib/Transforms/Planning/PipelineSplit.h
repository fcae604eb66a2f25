//===- PipelineSplit.h - block counts of pipeline stages --------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// How many repeated blocks each of p pipeline stages takes, given what each
// stage position costs with each block count. Exhaustive when the splits are
// few (every one simulated); otherwise Alpa's formulation: for every bound on
// the busiest stage's per-microbatch time, a dynamic program finds the split
// with the least total per-microbatch time under it (the two terms of
// 1F1B's step, (m - 1) max_s t_s + sum_s t_s), and the event simulator
// prices each such split. Independent of MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_LIB_TRANSFORMS_PLANNING_PIPELINESPLIT_H
#define AUTOPAR_LIB_TRANSFORMS_PLANNING_PIPELINESPLIT_H

#include "PipelineSimulator.h"

#include <functional>
#include <optional>
#include <vector>

namespace mlir::autopar::planning {

/// Stage s with k blocks: its seconds per microbatch, and whether it can run
/// (it was planned and fits in memory).
struct StageCost {
  bool feasible = false;
  double forward = 0, backward = 0;
  /// Gradient reductions once per step.
  double perStep = 0;
  /// Seconds to receive its boundary activations from the previous stage.
  double receive = 0;
};

struct SplitProblem {
  unsigned stages = 1, blocks = 1;
  /// Each stage takes between kMin and kMax blocks.
  unsigned kMin = 1, kMax = 1;
  /// The schedule, microbatches and chunks simulated (times are filled in).
  PipelineProblem schedule;
  /// The cost of stage s with k blocks (kMin <= k <= kMax).
  std::function<StageCost(unsigned s, unsigned k)> cost;
  /// At most this many splits are simulated exhaustively.
  unsigned long exhaustiveLimit = 4096;
};

struct SplitResult {
  std::vector<unsigned> blocks;
  /// The problem simulated (the stages' times filled in).
  PipelineProblem problem;
  PipelineResult run;
  /// The makespan plus the largest per-step time.
  double step = 0;
  unsigned simulated = 0;
  bool exhaustive = false;
};

/// The number of splits (block counts in [kMin, kMax] summing to blocks).
unsigned long countSplits(const SplitProblem &problem);

/// The simulated step of one split.
SplitResult simulateSplit(const SplitProblem &problem,
                          const std::vector<unsigned> &blocks);

/// The best split: exhaustive under `exhaustiveLimit` splits, the dynamic
/// program otherwise (or always, with `forceDynamicProgram`). nullopt when no
/// split is feasible.
std::optional<SplitResult> searchSplit(const SplitProblem &problem,
                                       bool forceDynamicProgram = false);

/// The dynamic program's objective minimum: min over feasible splits of
/// (m - 1) max_s t_s + sum_s t_s, t_s = forward + backward (for tests).
std::optional<double> minimizeSplitFormula(const SplitProblem &problem);

} // namespace mlir::autopar::planning

#endif // AUTOPAR_LIB_TRANSFORMS_PLANNING_PIPELINESPLIT_H
