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
// and the code generation of the final module into a shared object.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_PIPELINES_PIPELINES_H
#define AUTOPAR_PIPELINES_PIPELINES_H

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

/// Options of the partitioning stage.
struct PartitionPipelineOptions
    : public PassPipelineOptions<PartitionPipelineOptions> {};

/// Options of the lowering stage.
struct LowerToLLVMPipelineOptions
    : public PassPipelineOptions<LowerToLLVMPipelineOptions> {};

/// Adds the grid, then annotates every value with a sharding
/// (autopar-apply-plan), then checks the plan contract
/// (autopar-verify-sharded).
void buildPlanPipeline(OpPassManager &pm, const PlanPipelineOptions &options);

/// Partitions an annotated module into the SPMD device program
/// (autopar-partition) and checks the device-program contract.
void buildPartitionPipeline(OpPassManager &pm,
                            const PartitionPipelineOptions &options);

/// Lowers a device program to the LLVM dialect: weights and graph I/O and
/// collectives to runtime calls, autopar ops to linalg, bufferization, loops,
/// LLVM. The result exports `autopar_main`.
void buildLowerToLLVMPipeline(OpPassManager &pm,
                              const LowerToLLVMPipelineOptions &options);

/// Registers the pipelines above with the pass registry (for autopar-opt).
void registerAutoparPipelines();

/// Registers `autopar-lower-to-llvm-pipeline` (buildLowerToLLVMPipeline) with
/// the pass registry.
void registerLowerToLLVMPipeline();

/// Translates an LLVM-dialect `module` to LLVM IR, compiles it for the host
/// (in process, LLVM TargetMachine, -O2) and links it into the shared object
/// `soPath` with the system C compiler. Errors are emitted on `module`.
LogicalResult emitSharedLibrary(ModuleOp module, StringRef soPath);

} // namespace mlir::autopar

#endif // AUTOPAR_PIPELINES_PIPELINES_H
