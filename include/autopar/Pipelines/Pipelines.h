//===- Pipelines.h - autopar stage pipelines ----------------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The compiler's stages as library pipelines, each with an options struct and
// registered for autopar-opt:
//
//   imported module (autopar ops, func @main)
//     --autopar-plan-pipeline-->       every value annotated (#autopar.sharding)
//     --autopar-partition-pipeline-->  SPMD device program (local types,
//                                      shard.* collectives, autopar.to_partial)
//     --autopar-lower-to-llvm-pipeline--> LLVM dialect, `autopar_main()` calling
//                                      the runtime ABI (RuntimeABI.h)
//
// and `autopar-pipeline`, all three in order. The code generation of the
// final module into a shared object is separate (autopar/Target/Target.h).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_PIPELINES_PIPELINES_H
#define AUTOPAR_PIPELINES_PIPELINES_H

#include "autopar/Transforms/Lowering/ThreadTeams.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <string>

namespace mlir::autopar {

/// Options of the planning stage.
struct PlanPipelineOptions : public PassPipelineOptions<PlanPipelineOptions> {
  Option<std::string> grid{*this, "grid",
                           llvm::cl::desc("device grid, e.g. 4 or 2x2"),
                           llvm::cl::init("1")};
  Option<std::string> plan{
      *this, "plan",
      llvm::cl::desc("replicated, data, tensor, or a plan.json path"),
      llvm::cl::init("replicated")};
};

/// Options of the stage split (pipelines executed as one program per stage).
struct StageSplitPipelineOptions
    : public PassPipelineOptions<StageSplitPipelineOptions> {
  Option<unsigned> stages{*this, "stages",
                          llvm::cl::desc("pipeline stages (blocks split "
                                         "evenly)"),
                          llvm::cl::init(0)};
  ListOption<unsigned> blocks{
      *this, "blocks", llvm::cl::desc("repeated blocks per stage, e.g. 2,2")};
};

/// Options of the partitioning stage.
struct PartitionPipelineOptions
    : public PassPipelineOptions<PartitionPipelineOptions> {};

/// Options of the lowering stage.
struct LowerToLLVMPipelineOptions
    : public PassPipelineOptions<LowerToLLVMPipelineOptions> {
  Option<std::string> isa{
      *this, "isa",
      llvm::cl::desc("vector ISA the kernels are generated for: auto (the "
                     "host CPU), amx, avx512bf16, avx512, avx2 or generic"),
      llvm::cl::init("auto")};
  Option<bool> packWeights{
      *this, "pack-weights",
      llvm::cl::desc("weights that only feed data-tiled contractions take "
                     "the packed layout, so the weight files must be written "
                     "packed (the compiler driver does); otherwise they are "
                     "packed on every call"),
      llvm::cl::init(false)};
  Option<std::string> precision{
      *this, "precision",
      llvm::cl::desc("element type weights and activations are stored and "
                     "moved in: f32, bf16 or f16 (compute and contraction "
                     "accumulators stay f32; graph inputs and outputs keep "
                     "the model's f32)"),
      llvm::cl::init("f32")};
  Option<bool> winograd{
      *this, "winograd",
      llvm::cl::desc("compute qualifying 3x3 convolutions in the Winograd "
                     "form F(2x2, 3x3) (with pack-weights: their weights are "
                     "transformed when written)"),
      llvm::cl::init(true)};
  Option<int64_t> minFlopsPerThread{
      *this, "min-flops-per-thread",
      llvm::cl::desc("FLOPs each thread of a parallel loop must get for the "
                     "loop to be threaded (autopar-size-thread-teams; 0: "
                     "every parallel loop on all threads)"),
      llvm::cl::init(kDefaultMinFlopsPerThread)};
};

/// Options of the whole pipeline: the options of every stage.
struct AutoparPipelineOptions
    : public PassPipelineOptions<AutoparPipelineOptions> {
  Option<std::string> grid{*this, "grid",
                           llvm::cl::desc("device grid, e.g. 4 or 2x2"),
                           llvm::cl::init("1")};
  Option<std::string> plan{
      *this, "plan",
      llvm::cl::desc("replicated, data, tensor, or a plan.json path"),
      llvm::cl::init("replicated")};
  Option<std::string> isa{
      *this, "isa",
      llvm::cl::desc("vector ISA the kernels are generated for: auto (the "
                     "host CPU), amx, avx512bf16, avx512, avx2 or generic"),
      llvm::cl::init("auto")};
  Option<std::string> precision{
      *this, "precision",
      llvm::cl::desc("element type weights and activations are stored and "
                     "moved in: f32, bf16 or f16"),
      llvm::cl::init("f32")};
  Option<int64_t> minFlopsPerThread{
      *this, "min-flops-per-thread",
      llvm::cl::desc("FLOPs each thread of a parallel loop must get for the "
                     "loop to be threaded (0: every parallel loop on all "
                     "threads)"),
      llvm::cl::init(kDefaultMinFlopsPerThread)};
};

/// Adds the grid, then annotates every value with a sharding
/// (autopar-apply-plan), then checks the plan contract
/// (autopar-verify-sharded).
void buildPlanPipeline(OpPassManager &pm, const PlanPipelineOptions &options);

/// The stage split of a pipeline: `autopar-split-stages` (one nested module
/// per stage, each then planned, partitioned and lowered on its own).
void buildStageSplitPipeline(OpPassManager &pm,
                             const StageSplitPipelineOptions &options);

/// Partitions an annotated module into the SPMD device program
/// (autopar-partition) and checks the device-program contract.
void buildPartitionPipeline(OpPassManager &pm,
                            const PartitionPipelineOptions &options);

/// Lowers a device program to the LLVM dialect: data tiling
/// (`buildDataTilingPipeline`), then `buildLowerDataTiledPipeline`. The
/// result exports `autopar_main`.
void buildLowerToLLVMPipeline(OpPassManager &pm,
                              const LowerToLLVMPipelineOptions &options);

/// The first part of the lowering, on the device program: with
/// `options.precision` bf16 or f16, weights and activations take the lower
/// type (autopar-lower-precision); contractions become pack + mmt4d + unpack
/// with the register tile of `options.isa`, and with `options.packWeights`
/// their weights take the packed layout (the driver writes the weight files
/// between this part and the next).
void buildDataTilingPipeline(OpPassManager &pm,
                             const LowerToLLVMPipelineOptions &options);

/// The rest of the lowering: weights and graph I/O and collectives to runtime
/// calls, autopar ops to linalg, register tiles vectorized, bufferization,
/// loops, LLVM.
void buildLowerDataTiledPipeline(OpPassManager &pm,
                                 const LowerToLLVMPipelineOptions &options);

/// The whole compiler after import: plan, partition and lower to the LLVM
/// dialect (`autopar-pipeline`). The driver runs the same stages one by one
/// (it writes the plan files and weights in between, and can search a plan).
void buildAutoparPipeline(OpPassManager &pm,
                          const AutoparPipelineOptions &options);

/// Registers the pipelines above with the pass registry (for autopar-opt).
void registerAutoparPipelines();

/// Registers `autopar-lower-to-llvm-pipeline` (buildLowerToLLVMPipeline) with
/// the pass registry.
void registerLowerToLLVMPipeline();

} // namespace mlir::autopar

#endif // AUTOPAR_PIPELINES_PIPELINES_H
