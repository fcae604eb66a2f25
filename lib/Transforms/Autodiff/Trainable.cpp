//===- Trainable.cpp - which weights a training step trains ---------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "autopar/Transforms/Autodiff/Trainable.h"
#include "autopar/Dialect/Autopar/IR/WeightParts.h"

using namespace mlir;
using namespace mlir::autopar;

bool mlir::autopar::isTrainableWeight(WeightOp weight,
                                      const llvm::StringSet<> &frozen) {
  auto type = dyn_cast<RankedTensorType>(weight.getType());
  if (!type || !isa<FloatType>(type.getElementType()) || type.getRank() < 1 ||
      frozen.contains(weight.getName()))
    return false;
  // A part of an initializer (autopar-split-fused-projections) is frozen with
  // it.
  std::optional<WeightPart> part = getWeightPart(weight);
  return !part || !frozen.contains(part->source);
}

std::string
mlir::autopar::findMissingFrozenWeight(Operation *root,
                                       ArrayRef<std::string> frozen) {
  llvm::StringSet<> names;
  root->walk([&](WeightOp w) {
    names.insert(w.getName());
    if (std::optional<WeightPart> part = getWeightPart(w))
      names.insert(part->source);
  });
  for (const std::string &name : frozen)
    if (!names.contains(name))
      return name;
  return "";
}
