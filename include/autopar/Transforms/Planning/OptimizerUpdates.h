//===- OptimizerUpdates.h - the optimizer update of each weight -*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The ops of a training step that update each trained weight, found by the
// `autopar.optimizer_update` marker that autopar-differentiate puts on them
// (the optimizer's arithmetic, its state weights and their stores).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_TRANSFORMS_PLANNING_OPTIMIZERUPDATES_H
#define AUTOPAR_TRANSFORMS_PLANNING_OPTIMIZERUPDATES_H

#include "autopar/Dialect/Autopar/IR/Autopar.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::autopar {

/// The trained weights of a function and the ops of each one's update.
struct OptimizerUpdates {
  /// Loads of the weights that are not optimizer state, by name.
  llvm::StringMap<WeightOp> weights;
  /// The ops marked as part of each weight's update, in program order, by
  /// the weight's name (which need not name a load in `weights`).
  llvm::MapVector<StringRef, SmallVector<Operation *>> updates;
};

/// Collects the weights of `func` and the ops of their optimizer updates.
OptimizerUpdates collectOptimizerUpdates(func::FuncOp func);

} // namespace mlir::autopar

#endif // AUTOPAR_TRANSFORMS_PLANNING_OPTIMIZERUPDATES_H
