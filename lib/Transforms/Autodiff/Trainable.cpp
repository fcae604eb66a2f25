//===- Trainable.cpp - which weights a training step trains ---------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "autopar/Transforms/Autodiff/Trainable.h"

using namespace mlir;
using namespace mlir::autopar;

bool mlir::autopar::isTrainableWeight(WeightOp weight,
                                      const llvm::StringSet<> &frozen) {
  auto type = dyn_cast<RankedTensorType>(weight.getType());
  return type && isa<FloatType>(type.getElementType()) && type.getRank() >= 1 &&
         !frozen.contains(weight.getName());
}

std::string
mlir::autopar::findMissingFrozenWeight(Operation *root,
                                       ArrayRef<std::string> frozen) {
  llvm::StringSet<> names;
  root->walk([&](WeightOp w) { names.insert(w.getName()); });
  for (const std::string &name : frozen)
    if (!names.contains(name))
      return name;
  return "";
}
