//===- SearchReport.h - why the planner chose what it chose -----*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The per-op part of the plan report: each op's chosen strategy, its cost
// with every neighbour fixed, and the runner-up. PlanReport.cpp merges these
// into plan.json and plan.txt.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_LIB_TRANSFORMS_PLANNING_SEARCHREPORT_H
#define AUTOPAR_LIB_TRANSFORMS_PLANNING_SEARCHREPORT_H

#include "Pricing.h"

#include "llvm/Support/JSON.h"

#include <map>

namespace mlir::autopar::planning {

/// Fills `details` with the decision of every compute op and weight of
/// `choice`: strategy, cost, loops, runner-up and the node it shares its
/// strategy with.
void describeDecisions(const StrategyGraph &graph, const PlanPricer &pricer,
                       const Choice &choice,
                       std::map<Operation *, llvm::json::Object> &details);

/// The report of a plan already written on `annotated` (a pipeline stage's
/// plan, planned before): describeDecisions of the annotated choice priced
/// with `options`, and the repeated blocks of its compute ops, returned as
/// plan.json's `search.repeated_blocks`. An op of a later block instance
/// whose strategy is the first instance's gets `shares_strategy_with`.
FailureOr<llvm::json::Array>
describeAnnotatedPlan(ModuleOp annotated, const AutoPlanOptions &options,
                      std::map<Operation *, llvm::json::Object> &details);

} // namespace mlir::autopar::planning

#endif // AUTOPAR_LIB_TRANSFORMS_PLANNING_SEARCHREPORT_H
