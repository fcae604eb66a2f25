//===- StageSplit.h - pipeline stages as programs of their own --*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The stage split of an executed pipeline (MPMD): @main is cut between its
// repeated blocks (the cut points the pipeline planner uses) into one module
// per stage. Each stage's @main says, on its arguments and results, where its
// tensors come from and go to: a runtime input or output of the model, or a
// boundary tensor sent point to point from one stage to another.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_TRANSFORMS_PLANNING_STAGESPLIT_H
#define AUTOPAR_TRANSFORMS_PLANNING_STAGESPLIT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

namespace mlir::autopar {

/// Argument attribute of a stage's @main: `{input = i}` (runtime input i of
/// the model) or `{boundary = b, from = s}` (boundary tensor b, received from
/// stage s).
constexpr StringLiteral kStageInputAttr = "autopar.stage_input";
/// Result attribute of a stage's @main: `{output = j}` (runtime output j of
/// the model) or `{boundary = b, to = [t, ...]}` (boundary tensor b, sent to
/// each stage t).
constexpr StringLiteral kStageOutputAttr = "autopar.stage_output";
/// Attribute of each stage module: its index.
constexpr StringLiteral kStageIndexAttr = "autopar.stage";

/// The repeated blocks @main of `module` may be cut between (the most
/// repeated block, as the pipeline planner finds it); fails with a
/// diagnostic when @main cannot be analysed.
FailureOr<unsigned> countPipelineBlocks(ModuleOp module);

/// `blocks` blocks over `stages` stages as evenly as possible, the later
/// stages taking one more (the first stage also holds the ops before the
/// blocks, such as the embedding).
SmallVector<unsigned> evenBlockSplit(unsigned blocks, unsigned stages);

/// Replaces @main of `module` by one nested module per stage (`module
/// @stage<s>` with attribute `autopar.stage = s`, holding its own @main):
/// stage s runs `blocksPerStage[s]` repeated blocks, the first stage also
/// the ops before the blocks and the last one the ops after. Weights and
/// constants are copied into every stage that reads them. Fails with a
/// diagnostic (and leaves `module` unchanged) when the counts do not add up
/// to the model's repeated blocks or a stage would be empty.
LogicalResult splitPipelineStages(ModuleOp module,
                                  ArrayRef<unsigned> blocksPerStage);

} // namespace mlir::autopar

#endif // AUTOPAR_TRANSFORMS_PLANNING_STAGESPLIT_H
