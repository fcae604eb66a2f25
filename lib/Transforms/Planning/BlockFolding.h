//===- BlockFolding.h - repeated blocks share a strategy --------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Finds repeated blocks (transformer layers) in the compute ops of a
// strategy graph and makes every member of a block share the variables of
// the first block, so the integer program grows with the number of distinct
// blocks, not layers.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_LIB_TRANSFORMS_PLANNING_BLOCKFOLDING_H
#define AUTOPAR_LIB_TRANSFORMS_PLANNING_BLOCKFOLDING_H

#include "StrategyGraph.h"

#include "llvm/Support/JSON.h"

namespace mlir::autopar::planning {

/// `repeats` consecutive copies of `period` compute ops from position
/// `start` in program order.
struct FoldedBlock {
  unsigned start, period, repeats;
};

/// Scans the compute ops for the period and start that cover the most ops
/// with identical consecutive blocks (same ops, attributes, types, and edges
/// at the same relative offsets), and points every member node's `rep` (and
/// the weights and constants it reads) at the first block. Returns the
/// blocks, sorted by start. With `share` false the blocks are only found
/// (for recomputation), every node keeping its own variables.
std::vector<FoldedBlock> foldRepeatedBlocks(StrategyGraph &graph,
                                            bool share = true);

/// The blocks for plan.json: first and last node, ops per block, repeats.
llvm::json::Array describeBlocks(const StrategyGraph &graph,
                                 ArrayRef<FoldedBlock> blocks);

} // namespace mlir::autopar::planning

#endif // AUTOPAR_LIB_TRANSFORMS_PLANNING_BLOCKFOLDING_H
