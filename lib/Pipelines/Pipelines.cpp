//===- Pipelines.cpp - planning and partitioning pipelines ----------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "autopar/Pipelines/Pipelines.h"

#include "autopar/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::autopar;

void mlir::autopar::buildPlanPipeline(OpPassManager &pm,
                                      const PlanPipelineOptions &options) {
  ApplyPlanPassOptions applyOptions;
  applyOptions.grid = options.grid;
  applyOptions.plan = options.plan;
  pm.addPass(createApplyPlanPass(applyOptions));
  pm.addPass(createVerifyShardedPass());
}

void mlir::autopar::buildPartitionPipeline(
    OpPassManager &pm, const PartitionPipelineOptions &) {
  pm.addPass(createVerifyShardedPass());
  pm.addPass(createPartitionPass());
  pm.addPass(createCSEPass());
}

void mlir::autopar::registerAutoparPipelines() {
  PassPipelineRegistration<PlanPipelineOptions>(
      "autopar-plan-pipeline",
      "annotate every value with the sharding of a plan and check the result",
      buildPlanPipeline);
  PassPipelineRegistration<PartitionPipelineOptions>(
      "autopar-partition-pipeline",
      "partition an annotated module into the SPMD device program",
      buildPartitionPipeline);
  registerLowerToLLVMPipeline();
}
