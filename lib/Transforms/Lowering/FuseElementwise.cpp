//===- FuseElementwise.cpp - fuse elementwise producers into consumers ----===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements autopar-fuse-elementwise: an elementwise
// `linalg.generic` whose only use is an operand of another `linalg.generic`
// read without broadcast is computed inside that consumer, so that the
// intermediate tensor is never written to memory.
//
//===----------------------------------------------------------------------===//

#include "autopar/Transforms/Lowering/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::autopar {
#define GEN_PASS_DEF_FUSEELEMENTWISEPASS
#include "autopar/Transforms/Lowering/Passes.h.inc"
} // namespace mlir::autopar

using namespace mlir;
using namespace mlir::autopar;

namespace {

/// Fuses when the producer has no other use (nothing is computed twice, and
/// no tensor stays live for another reader) and the consumer reads it with a
/// permutation (each producer element once: fusing into a broadcasting read
/// would recompute the producer for every broadcast copy).
bool shouldFuse(OpOperand *fused) {
  Operation *producer = fused->get().getDefiningOp();
  if (!producer || !producer->hasOneUse())
    return false;
  auto consumer = dyn_cast<linalg::GenericOp>(fused->getOwner());
  if (!consumer)
    return false;
  return consumer.getMatchingIndexingMap(fused).isPermutation();
}

struct FuseElementwisePass
    : public autopar::impl::FuseElementwisePassBase<FuseElementwisePass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(patterns, shouldFuse);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();

    // A zero (or lowest-value) padding of an elementwise result that has no
    // other use (a convolution's or pooling's input): the producer writes
    // into the interior of the filled, padded tensor
    // (`linalg::populateFuseTensorPadWithProducerLinalgOpPatterns`), so that
    // the pad's copy of the whole tensor goes.
    SmallVector<Operation *> pads, producers;
    getOperation().walk([&](tensor::PadOp pad) {
      auto producer = pad.getSource().getDefiningOp<linalg::GenericOp>();
      if (producer && producer->hasOneUse() &&
          producer.getNumParallelLoops() == producer.getNumLoops() &&
          pad.getConstantPaddingValue()) {
        pads.push_back(pad);
        producers.push_back(producer);
      }
    });
    RewritePatternSet padPatterns(&getContext());
    linalg::populateFuseTensorPadWithProducerLinalgOpPatterns(padPatterns);
    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingOps);
    if (failed(applyOpPatternsGreedily(pads, std::move(padPatterns), config)))
      return signalPassFailure();
    // The pattern computes a copy of the producer into the padded tensor.
    for (Operation *producer : producers)
      if (producer->use_empty())
        producer->erase();
  }
};

} // namespace
