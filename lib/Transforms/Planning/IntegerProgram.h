//===- IntegerProgram.h - the plan search as an integer program -*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The exact search over a (folded) strategy graph: binaries x(node, strategy)
// with one per representative node, continuous e(edge, producer layout,
// consumer layout) tied to them (the marginals of e are the x's), objective =
// compute + collectives, and one memory row per distinct liveness point;
// solved by COIN-OR CBC.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_LIB_TRANSFORMS_PLANNING_INTEGERPROGRAM_H
#define AUTOPAR_LIB_TRANSFORMS_PLANNING_INTEGERPROGRAM_H

#include "IlpSolver.h"
#include "Pricing.h"

#include <map>
#include <string>

namespace mlir::autopar::planning {

/// The outcome of one solve.
struct SolvedProgram {
  /// The choice, expanded to every node (empty without a solution).
  Choice choice;
  IlpSolution::Status status = IlpSolution::Status::Failed;
  /// Microseconds of step time (0 when minimizing memory).
  double objective = 0;
  double gap = 0;
  size_t variables = 0, rows = 0;
  /// Whether a choice came back (optimal, or feasible at the time limit).
  bool hasSolution() const {
    return status == IlpSolution::Status::Optimal ||
           status == IlpSolution::Status::Feasible;
  }
};

/// Solves the program over `graph`; `memoryLimit` < 0 means unconstrained,
/// `minimizeMemory` finds the smallest peak instead of the fastest plan.
/// `cutoffSeconds` >= 0 (fastest plan only): only plans of at most that step
/// time are sought; without one the status is Infeasible.
SolvedProgram solvePlanProgram(const StrategyGraph &graph,
                               const PlanPricer &pricer, double memoryLimit,
                               bool minimizeMemory, double timeLimitSeconds,
                               double cutoffSeconds = -1);

} // namespace mlir::autopar::planning

namespace mlir::autopar {

/// What the plans of one module share (AutoPlanOptions::memo): the proven
/// optimum of the memory-unconstrained program per recomputation setting
/// (`none`, `selective`, `full`, ...). That program has no memory rows, so
/// it does not depend on the microbatches in flight or the memory limit.
struct PlanSearchMemo {
  std::map<std::string, planning::SolvedProgram> unconstrained;
  /// What a memory-constrained solve proved about a setting's fastest plan
  /// that fits: its step is at least `seconds`, or more than `seconds` when
  /// `strict` (a solve under that cutoff found nothing; infinity: no plan
  /// fits). More microbatches in flight or less memory only remove plans,
  /// so the bound holds for every count of at least `copies` and every
  /// limit of at most `memoryLimit` bytes.
  struct ConstrainedBound {
    int64_t copies;
    double memoryLimit;
    double seconds;
    bool strict;
  };
  /// Per recomputation setting, the bounds proven so far.
  std::map<std::string, std::vector<ConstrainedBound>> constrained;
  /// Unconstrained solves answered from the memo.
  unsigned reused = 0;
  /// Memory-constrained searches cut short: their setting's unconstrained
  /// plan was already slower than a plan that fits with another setting, or
  /// the solve under that plan's step as a cutoff found nothing as fast.
  unsigned pruned = 0;
  /// Memory-constrained searches decided without a solve: a bound proven
  /// with fewer microbatches in flight (`constrained`) already exceeds the
  /// cutoff (counted in `pruned` too), or says that no plan fits.
  unsigned bounded = 0;
};

} // namespace mlir::autopar

#endif // AUTOPAR_LIB_TRANSFORMS_PLANNING_INTEGERPROGRAM_H
