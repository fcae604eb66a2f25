//===- StageExtraction.h - cutting @main into stage modules -----*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// What the pipeline planner (PipelinePlan.cpp) and the executed stage split
// (StageSplit.cpp) share: where stages may be cut, and how a run of ops is
// copied into a module of its own.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_LIB_TRANSFORMS_PLANNING_STAGEEXTRACTION_H
#define AUTOPAR_LIB_TRANSFORMS_PLANNING_STAGEEXTRACTION_H

#include "StrategyGraph.h"

#include "mlir/IR/OwningOpRef.h"

namespace mlir::autopar::planning {

/// Where the stages may be cut: the compute ops before the repeated blocks
/// (prefix), `blocks` blocks of `period` ops, and the ops after (suffix), in
/// positions of the graph's compute sequence.
struct CutPoints {
  unsigned prefixEnd = 0, period = 0, blocks = 0, numOps = 0;
  unsigned blockBegin(unsigned b) const { return prefixEnd + b * period; }
};

/// The cut points of `graph` (built): its most repeated block. Fails with a
/// diagnostic at `loc` when it has fewer than `stages` repeats.
FailureOr<CutPoints> findCutPoints(StrategyGraph &graph, unsigned stages,
                                   Location loc);

/// Copies `ops` (ops of the body of `func`, in program order) into a new
/// module's @main. Operands produced outside the copied ops become
/// arguments, in order of first use, named after the values, and are
/// appended to `external`; the weights and constants they read are copied.
/// Results: the results of `func` that the ops produce (in return order),
/// then `exports`. `results` gets them in that order.
OwningOpRef<ModuleOp> extractStageModule(func::FuncOp func,
                                         ArrayRef<Operation *> ops,
                                         ArrayRef<Value> exports,
                                         SmallVectorImpl<Value> &external,
                                         SmallVectorImpl<Value> &results);

} // namespace mlir::autopar::planning

#endif // AUTOPAR_LIB_TRANSFORMS_PLANNING_STAGEEXTRACTION_H
