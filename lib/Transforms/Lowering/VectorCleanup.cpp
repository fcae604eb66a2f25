//===- VectorCleanup.cpp - shared vector simplification ------------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "VectorCleanup.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

LogicalResult mlir::autopar::simplifyVectors(func::FuncOp func) {
  MLIRContext *ctx = func.getContext();
  RewritePatternSet patterns(ctx);
  // Register tiles: the multi-reduction of a vectorized mmt4d becomes a
  // contraction.
  vector::populateVectorReductionToContractPatterns(patterns);
  vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
  vector::populateCastAwayVectorLeadingOneDimPatterns(patterns);
  vector::populateDropUnitDimWithShapeCastPatterns(patterns);
  tensor::populateFoldTensorSubsetOpPatterns(patterns);
  for (RegisteredOperationName name : ctx->getRegisteredOperations())
    if (isa<vector::VectorDialect, tensor::TensorDialect, scf::SCFDialect>(
            name.getDialect()))
      name.getCanonicalizationPatterns(patterns, ctx);
  return applyPatternsGreedily(func, std::move(patterns));
}
