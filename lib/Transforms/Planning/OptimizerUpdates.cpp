//===- OptimizerUpdates.cpp - the optimizer update of each weight --------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "autopar/Transforms/Planning/OptimizerUpdates.h"
#include "autopar/Transforms/Autodiff/Markers.h"

using namespace mlir;
using namespace mlir::autopar;

OptimizerUpdates mlir::autopar::collectOptimizerUpdates(func::FuncOp func) {
  OptimizerUpdates result;
  func.walk([&](Operation *op) {
    if (auto w = dyn_cast<WeightOp>(op);
        w && !w->hasAttr(kOptimizerUpdateAttrName))
      result.weights.try_emplace(w.getName(), w);
    if (auto name = op->getAttrOfType<StringAttr>(kOptimizerUpdateAttrName))
      result.updates[name.getValue()].push_back(op);
  });
  return result;
}
