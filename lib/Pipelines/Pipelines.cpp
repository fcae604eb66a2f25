//===- Pipelines.cpp - planning, partitioning and whole pipelines ---------===//
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

void mlir::autopar::buildStageSplitPipeline(
    OpPassManager &pm, const StageSplitPipelineOptions &options) {
  SplitStagesPassOptions split;
  split.stages = options.stages;
  for (unsigned count : options.blocks)
    split.blocks.push_back(count);
  pm.addPass(createSplitStagesPass(split));
}

void mlir::autopar::buildPartitionPipeline(
    OpPassManager &pm, const PartitionPipelineOptions &) {
  pm.addPass(createVerifyShardedPass());
  pm.addPass(createPartitionPass());
  pm.addPass(createCSEPass());
}

void mlir::autopar::buildAutoparPipeline(
    OpPassManager &pm, const AutoparPipelineOptions &options) {
  PlanPipelineOptions plan;
  plan.grid = options.grid;
  plan.plan = options.plan;
  buildPlanPipeline(pm, plan);
  buildPartitionPipeline(pm, PartitionPipelineOptions());
  LowerToLLVMPipelineOptions lower;
  lower.isa = options.isa;
  lower.packWeights = false;
  lower.precision = options.precision;
  lower.minFlopsPerThread = options.minFlopsPerThread;
  buildLowerToLLVMPipeline(pm, lower);
}

void mlir::autopar::registerAutoparPipelines() {
  PassPipelineRegistration<PlanPipelineOptions>(
      "autopar-plan-pipeline",
      "annotate every value with the sharding of a plan and check the result",
      buildPlanPipeline);
  PassPipelineRegistration<StageSplitPipelineOptions>(
      "autopar-stage-split-pipeline",
      "split @main into one module per pipeline stage (MPMD)",
      buildStageSplitPipeline);
  PassPipelineRegistration<PartitionPipelineOptions>(
      "autopar-partition-pipeline",
      "partition an annotated module into the SPMD device program",
      buildPartitionPipeline);
  registerLowerToLLVMPipeline();
  PassPipelineRegistration<AutoparPipelineOptions>(
      "autopar-pipeline",
      "plan, partition and lower an imported module to the LLVM dialect "
      "(the autopar-plan, -partition and -lower-to-llvm pipelines in order)",
      buildAutoparPipeline);
}
