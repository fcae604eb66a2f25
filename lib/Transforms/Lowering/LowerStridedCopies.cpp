//===- LowerStridedCopies.cpp - memref.copy of strided views to linalg ----===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements autopar-lower-strided-copies: copies that
// finalize-memref-to-llvm would lower to a call of `memrefCopy` (MLIR's C
// runner utilities, not linked into device programs) become linalg.copy.
//
//===----------------------------------------------------------------------===//

#include "autopar/Transforms/Lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::autopar {
#define GEN_PASS_DEF_LOWERSTRIDEDCOPIESPASS
#include "autopar/Transforms/Lowering/Passes.h.inc"
} // namespace mlir::autopar

using namespace mlir;
using namespace mlir::autopar;

namespace {

struct LowerStridedCopiesPass
    : public autopar::impl::LowerStridedCopiesPassBase<LowerStridedCopiesPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp copy) {
      auto source = dyn_cast<MemRefType>(copy.getSource().getType());
      auto target = dyn_cast<MemRefType>(copy.getTarget().getType());
      if (source && target &&
          !(source.getLayout().isIdentity() && target.getLayout().isIdentity()))
        copies.push_back(copy);
    });
    IRRewriter rewriter(&getContext());
    for (memref::CopyOp copy : copies) {
      rewriter.setInsertionPoint(copy);
      linalg::CopyOp::create(rewriter, copy.getLoc(),
                             ValueRange{copy.getSource()},
                             ValueRange{copy.getTarget()});
      rewriter.eraseOp(copy);
    }
  }
};

} // namespace
