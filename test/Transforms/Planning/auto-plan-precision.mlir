// Training accounting by precision, on a two-layer MLP with 8388608
// parameters that stays replicated (1 kB/s links: nothing is worth sending).
// Memory = parameter state + the stored activations (x, h, a, y: 655360
// elements).
//
// f32 (the model's type): 16 bytes per parameter (weight, gradient, Adam m
// and v) + 4 bytes per activation element: 134217728 + 2621440.
// RUN: env AUTOPAR_CPU_ISA=avx512 autopar-opt %s --mlir-print-op-on-diagnostic=false --autopar-auto-plan="grid=2 cluster=%S/Inputs/cluster-slow.json mode=training remarks=1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=F32
// RUN: env AUTOPAR_CPU_ISA=avx512 autopar-opt %s --mlir-print-op-on-diagnostic=false --autopar-auto-plan="grid=2 cluster=%S/Inputs/cluster-slow.json mode=training remarks=1 precision=f32" -o /dev/null 2>&1 | FileCheck %s --check-prefix=F32
// F32: predicted step 3.222012e+00 s {{.*}} peak memory 136839168 bytes
//
// bf16: 18 bytes per parameter (bf16 weight, fp32 gradient, fp32 master,
// Adam m and v) + 2 bytes per activation element: 150994944 + 1310720.
// RUN: env AUTOPAR_CPU_ISA=avx512 autopar-opt %s --mlir-print-op-on-diagnostic=false --autopar-auto-plan="grid=2 cluster=%S/Inputs/cluster-slow.json mode=training remarks=1 precision=bf16" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BF16
// BF16: peak memory 152305664 bytes
//
// The optimizer state sharded over the 2 replicas: 6 + 12/2 bytes per
// parameter (f16 counts as bf16): 100663296 + 1310720.
// RUN: env AUTOPAR_CPU_ISA=avx512 autopar-opt %s --mlir-print-op-on-diagnostic=false --autopar-auto-plan="grid=2 cluster=%S/Inputs/cluster-slow.json mode=training remarks=1 precision=bf16 shard-optimizer=1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SHARDED
// RUN: env AUTOPAR_CPU_ISA=avx512 autopar-opt %s --mlir-print-op-on-diagnostic=false --autopar-auto-plan="grid=2 cluster=%S/Inputs/cluster-slow.json mode=training remarks=1 precision=f16 shard-optimizer=1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SHARDED
// SHARDED: peak memory 101974016 bytes
//
// Inference in bf16: 2 bytes per weight and per activation element; the
// peak is at relu (x, h and a live): 16777216 + 1179648.
// RUN: env AUTOPAR_CPU_ISA=avx512 autopar-opt %s --mlir-print-op-on-diagnostic=false --autopar-auto-plan="grid=2 cluster=%S/Inputs/cluster-slow.json remarks=1 precision=bf16" -o /dev/null 2>&1 | FileCheck %s --check-prefix=INFER
// INFER: peak memory 19529728 bytes
//
// flops_by_dtype: the cluster's bf16 rate is 4x its f32 rate, so the bf16
// step takes a quarter of the f32 one; f32 keeps `flops`.
// RUN: env AUTOPAR_CPU_ISA=avx512 autopar-opt %s --mlir-print-op-on-diagnostic=false --autopar-auto-plan="grid=2 cluster=%S/Inputs/cluster-slow-bf16.json mode=training remarks=1 precision=bf16" -o /dev/null 2>&1 | FileCheck %s --check-prefix=RATE
// RATE: predicted step 8.055030e-01 s
// RUN: env AUTOPAR_CPU_ISA=avx512 autopar-opt %s --mlir-print-op-on-diagnostic=false --autopar-auto-plan="grid=2 cluster=%S/Inputs/cluster-slow-bf16.json mode=training remarks=1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=F32
//
// RUN: not env AUTOPAR_CPU_ISA=avx512 autopar-opt %s --mlir-print-op-on-diagnostic=false --autopar-auto-plan="grid=2 cluster=%S/Inputs/cluster-slow.json precision=fp8" 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: unknown precision 'fp8', expected model, f32, f16 or bf16

func.func @main(%x: tensor<64x1024xf32> loc("x")) -> tensor<64x1024xf32> {
  %w1 = autopar.weight "w1" : tensor<1024x4096xf32>
  %w2 = autopar.weight "w2" : tensor<4096x1024xf32>
  %h = autopar.matmul %x, %w1 : (tensor<64x1024xf32>, tensor<1024x4096xf32>) -> tensor<64x4096xf32> loc(fused<"mm1">["h"])
  %a = autopar.relu %h : (tensor<64x4096xf32>) -> tensor<64x4096xf32> loc(fused<"relu">["a"])
  %y = autopar.matmul %a, %w2 : (tensor<64x4096xf32>, tensor<4096x1024xf32>) -> tensor<64x1024xf32> loc(fused<"mm2">["y"])
  return %y : tensor<64x1024xf32>
}
