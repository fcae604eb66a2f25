//===- AppendLossPass.cpp - a training loss as a pass ---------------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "autopar/Transforms/Passes.h"
#include "autopar/Transforms/Planning/TrainingLoss.h"

namespace mlir::autopar {
#define GEN_PASS_DEF_APPENDLOSSPASS
#include "autopar/Transforms/Passes.h.inc"
} // namespace mlir::autopar

using namespace mlir;
using namespace mlir::autopar;

namespace {
struct AppendLossPass
    : public mlir::autopar::impl::AppendLossPassBase<AppendLossPass> {
  using Base::Base;
  void runOnOperation() override;
};
} // namespace

void AppendLossPass::runOnOperation() {
  std::optional<LossKind> kind = symbolizeLossKind(loss);
  if (!kind) {
    getOperation().emitError() << "unknown loss '" << loss
                               << "', expected cross_entropy, mse or output";
    return signalPassFailure();
  }
  if (failed(appendTrainingLoss(getOperation(), *kind)))
    signalPassFailure();
}
