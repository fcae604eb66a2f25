//===- Trainable.h - which weights a training step trains -------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The one definition of a trainable parameter, shared by what compiles a
// training step (autopar-differentiate, autopar-build-stage-step) and what
// plans one (the planner's pricing of gradients and optimizer state): a
// float initializer of rank >= 1 that `--freeze` does not name. Everything
// else (integer tables, scalars, frozen buffers such as a causal mask) is
// read, never updated: no gradient, no optimizer state.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_TRANSFORMS_AUTODIFF_TRAINABLE_H
#define AUTOPAR_TRANSFORMS_AUTODIFF_TRAINABLE_H

#include "autopar/Dialect/Autopar/IR/Autopar.h"

#include "llvm/ADT/StringSet.h"

#include <string>

namespace mlir::autopar {

/// Whether a training step trains `weight`: its type is a float tensor of
/// rank >= 1 and `frozen` does not hold its name.
bool isTrainableWeight(WeightOp weight, const llvm::StringSet<> &frozen);

/// The first of `frozen` that no `autopar.weight` nested in `root` is named
/// (empty when every name is found), for the `--freeze` diagnostic.
std::string findMissingFrozenWeight(Operation *root,
                                    ArrayRef<std::string> frozen);

} // namespace mlir::autopar

#endif // AUTOPAR_TRANSFORMS_AUTODIFF_TRAINABLE_H
