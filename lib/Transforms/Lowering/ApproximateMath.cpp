//===- ApproximateMath.cpp - vectorizable transcendental functions -------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements autopar-approximate-math: f32 erf, tanh, exp, log and
// their relatives become MLIR's polynomial approximations (arith/math ops
// without library calls), so that the loops computing them vectorize.
//
//===----------------------------------------------------------------------===//

#include "autopar/Transforms/Lowering/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/StringSet.h"

namespace mlir::autopar {
#define GEN_PASS_DEF_APPROXIMATEMATHPASS
#include "autopar/Transforms/Lowering/Passes.h.inc"
} // namespace mlir::autopar

using namespace mlir;
using namespace mlir::autopar;

namespace {

struct ApproximateMathPass
    : public autopar::impl::ApproximateMathPassBase<ApproximateMathPass> {
  using Base::Base;

  void runOnOperation() override {
    // The functions the ONNX lowering emits (Erf, Gelu, Tanh, Exp, Log,
    // Sigmoid, Softmax, LogSoftmax) whose approximations keep the node
    // tests' tolerance (rtol 1e-3, atol 1e-7).
    static const llvm::StringSet<> approximated = {
        "math.erf", "math.tanh", "math.exp",
        "math.log", "math.log1p", "math.expm1"};
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(
        patterns, [](StringRef name) { return approximated.contains(name); });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
