//===- LowerToLLVM.cpp - device program to the LLVM dialect -----*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements the lowering stage: a partitioned device program
// (autopar ops, shard collectives, autopar.weight) becomes an LLVM-dialect
// module exporting `autopar_main`, which calls the runtime ABI
// (autopar/Runtime/RuntimeABI.h).
//
//===----------------------------------------------------------------------===//

#include "autopar/Conversion/Passes.h"
#include "autopar/Pipelines/Pipelines.h"

#include "autopar/Target/Target.h"
#include "autopar/Transforms/Lowering/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/ConvertToLLVM/ToLLVMPass.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/OpenMPToLLVM/ConvertOpenMPToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/SCFToOpenMP/SCFToOpenMP.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::autopar;

void mlir::autopar::buildDataTilingPipeline(
    OpPassManager &pm, const LowerToLLVMPipelineOptions &options) {
  // Weights and activations in bf16/f16 (a no-op for f32), before the data
  // tiling packs the lower-type operands of contractions.
  LowerPrecisionPassOptions lowerPrecision;
  lowerPrecision.precision = options.precision;
  pm.addPass(createLowerPrecisionPass(lowerPrecision));
  PackContractionsPassOptions pack;
  pack.isa = options.isa;
  pack.packWeights = options.packWeights;
  pack.winograd = options.winograd;
  pm.addPass(createPackContractionsPass(pack));
}

void mlir::autopar::buildLowerToLLVMPipeline(
    OpPassManager &pm, const LowerToLLVMPipelineOptions &options) {
  buildDataTilingPipeline(pm, options);
  buildLowerDataTiledPipeline(pm, options);
}

void mlir::autopar::buildLowerDataTiledPipeline(
    OpPassManager &pm, const LowerToLLVMPipelineOptions &options) {
  // Device program -> autopar_main() on tensors calling the runtime.
  pm.addPass(createLowerProgramToRuntimePass());
  pm.addNestedPass<func::FuncOp>(createConvertAutoparToLinalgPass());
  // Runtime checks (gather indices) report through autopar_rt_fail.
  pm.addPass(createLowerAssertsToRuntimePass());
  pm.addPass(createCanonicalizerPass());
  // Chains of elementwise generics become one loop nest.
  pm.addNestedPass<func::FuncOp>(createFuseElementwisePass());
  // Register tiles of the data-tiled contractions, vectorized (bf16 tiles as
  // dot products of bf16 pairs where the ISA has them).
  TileContractionsPassOptions tileContractions;
  tileContractions.isa = options.isa;
  pm.addNestedPass<func::FuncOp>(createTileContractionsPass(tileContractions));
  // Elementwise ops, transposes and copies in vectors of the ISA's width.
  VectorizeElementwisePassOptions vectorize;
  vectorize.isa = options.isa;
  pm.addNestedPass<func::FuncOp>(createVectorizeElementwisePass(vectorize));
  // Transcendentals as polynomials, so that their loops vectorize.
  pm.addNestedPass<func::FuncOp>(createApproximateMathPass());

  // Tensors -> buffers. Function boundaries use identity layouts (the runtime
  // requires row-major contiguous buffers); every buffer allocated here or by
  // the program-to-runtime lowering is freed by the deallocation pipeline
  // (autopar_main returns nothing, so nothing escapes).
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  bufferization::buildBufferDeallocationPipeline(pm);
  // Free each buffer after its last use, not at the end of the program.
  pm.addNestedPass<func::FuncOp>(createFreeBuffersEarlyPass());
  pm.addNestedPass<func::FuncOp>(createLowerStridedCopiesPass());
  // bf16 contractions on AMX tiles (isa=amx; a no-op elsewhere), on buffers.
  AmxContractionsPassOptions amx;
  amx.isa = options.isa;
  pm.addPass(createAmxContractionsPass(amx));

  // The parallel loops of the register tiles (scf.forall over column
  // panels) become OpenMP work-sharing loops run by the threads of the rank
  // (libomp; their number is set by the runner).
  pm.addNestedPass<func::FuncOp>(createForallToParallelLoopPass());
  pm.addPass(createConvertSCFToOpenMPPass());
  // Each loop gets no more threads than its iterations and its work fill
  // (min-flops-per-thread each); one too small for two runs sequentially,
  // without a fork and join.
  SizeThreadTeamsPassOptions teams;
  teams.minFlopsPerThread = options.minFlopsPerThread;
  pm.addPass(createSizeThreadTeamsPass(teams));

  // Buffers -> loops -> LLVM. Vector transfers unroll to 1-D (fully: a
  // partial unroll leaves allocas inside loops).
  pm.addNestedPass<func::FuncOp>(createConvertVectorToSCFPass(
      VectorTransferToSCFOptions().enableFullUnroll()));
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  // bf16 conversions (autopar-lower-precision) as integer operations: the
  // rounding of f32 -> bf16 then needs no library call (Debian's libgcc 12
  // has no __truncsfbf2) and vectorizes on every ISA. f16 conversions stay
  // LLVM's (F16C instructions, or libgcc's __truncsfhf2/__extendhfsf2).
  if (options.precision == "bf16") {
    arith::ArithExpandOpsPassOptions expand;
    expand.includeBf16 = true;
    pm.addPass(arith::createArithExpandOpsPass(expand));
  }
  // Buffers are allocated and freed through the runtime
  // (_mlir_memref_to_llvm_alloc/free), which counts the live bytes. Before
  // scf-to-cf: memref.alloca_scope inside OpenMP regions must still have
  // one block.
  FinalizeMemRefToLLVMConversionPassOptions memrefToLLVM;
  memrefToLLVM.useGenericFunctions = true;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefToLLVM));
  // Without rollback, each loop's block split moves the rest of the block
  // in one splice; with it, the conversion moves (and records) the ops one
  // by one, quadratic in the ops of a device program: mobilenet_v2's
  // training step spent 160 of its 189 s of compile here.
  SCFToControlFlowPassOptions scfToCf;
  scfToCf.allowPatternRollback = false;
  pm.addPass(createSCFToControlFlowPass(scfToCf));
  std::optional<CpuIsa> isa = parseCpuIsa(options.isa);
  bool amxTiles = isa && hasAmxTiles(*isa);
  // Register-tile contractions become outer products: one broadcast FMA
  // per row of the tile; x86vector dot products of bf16 pairs become their
  // LLVM intrinsic (vdpbf16ps).
  ConvertVectorToLLVMPassOptions vectorToLLVM;
  vectorToLLVM.vectorContractLowering =
      vector::VectorContractLowering::OuterProduct;
  vectorToLLVM.x86Vector = true;
  vectorToLLVM.amx = amxTiles;
  pm.addPass(createConvertVectorToLLVMPass(vectorToLLVM));
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  // What has no LLVM intrinsic (math.erf) calls libm (erff: correctly
  // rounded to about 1 ulp, unlike a polynomial expansion).
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createConvertFuncToLLVMPass());
  // AMX tiles carried through loops are block arguments, whose type
  // convert-cf-to-llvm does not convert: convert-to-llvm (every dialect's
  // patterns with one type converter that knows the AMX tile) does, before
  // the OpenMP regions that hold them are converted.
  if (amxTiles)
    pm.addPass(createConvertToLLVMPass());
  else
    pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}

void mlir::autopar::registerLowerToLLVMPipeline() {
  // Idempotent: both autopar-opt and registerAutoparPipelines may call it.
  static bool registered = false;
  if (registered)
    return;
  registered = true;
  PassPipelineRegistration<LowerToLLVMPipelineOptions>(
      "autopar-lower-to-llvm-pipeline",
      "lower a device program to the LLVM dialect (exports autopar_main)",
      buildLowerToLLVMPipeline);
}
