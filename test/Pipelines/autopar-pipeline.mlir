// The whole pipeline after import runs in autopar-opt: plan (tensor
// parallel on 2 devices), partition, lower to the LLVM dialect.
// RUN: autopar-opt %s --autopar-pipeline="grid=2 plan=tensor" | FileCheck %s
// RUN: autopar-opt %s --autopar-pipeline="grid=1 plan=replicated" | FileCheck %s --check-prefix=GRID1
// The matmuls' column panels (2 with the generic ISA's 8 columns) are an
// OpenMP work-sharing loop when each thread gets min-flops-per-thread (4096
// FLOPs per matmul and device: 2 threads of 1000), with no more threads than
// that; by default (a million FLOPs) they are too small for threads and run
// sequentially; with 0 every panel loop has all threads.
// RUN: autopar-opt %s --autopar-pipeline="grid=2 plan=tensor isa=generic min-flops-per-thread=1000" | FileCheck %s --check-prefix=OMP
// RUN: autopar-opt %s --autopar-pipeline="grid=2 plan=tensor isa=generic" | FileCheck %s --check-prefix=SEQ
// RUN: autopar-opt %s --autopar-pipeline="grid=2 plan=tensor isa=generic min-flops-per-thread=0" | FileCheck %s --check-prefix=ALL
// RUN: not autopar-opt %s --autopar-pipeline="isa=avx9" 2>&1 | FileCheck %s --check-prefix=BADISA
// In bf16 (f16) the weights and the all-reduce move the lower type, the graph
// input and output stay f32.
// RUN: autopar-opt %s --autopar-pipeline="grid=2 plan=tensor precision=bf16" | FileCheck %s --check-prefix=BF16
// RUN: autopar-opt %s --autopar-pipeline="grid=2 plan=tensor precision=f16" | FileCheck %s --check-prefix=F16
// RUN: not autopar-opt %s --autopar-pipeline="precision=f8" 2>&1 | FileCheck %s --check-prefix=BADPRECISION
// With AVX512-BF16 the bf16 matmuls are dot products of bf16 pairs (the
// vdpbf16ps intrinsic: 2 matmuls x 8 rows x 2 halves of the 8x32 tile); with
// AVX-512F alone, f32 FMAs of extended operands.
// RUN: autopar-opt %s --autopar-pipeline="grid=1 plan=replicated precision=bf16 isa=avx512bf16" | FileCheck %s --check-prefix=BF16DOT
// RUN: autopar-opt %s --autopar-pipeline="grid=1 plan=replicated precision=bf16 isa=avx512" | FileCheck %s --check-prefix=BF16EXT
// With AMX, AMX tiles (LLVM's internal tile intrinsics, which take the tile
// shape: 16 rows of 64 bytes), after the runtime's request for the tile
// state; no vdpbf16ps.
// RUN: autopar-opt %s --autopar-pipeline="grid=1 plan=replicated precision=bf16 isa=amx" | FileCheck %s --check-prefix=BF16AMX

// BF16DOT: llvm.func @autopar_main()
// BF16DOT-COUNT-32: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"(%{{.*}}, %{{.*}}, %{{.*}}) : (vector<16xf32>, vector<32xbf16>, vector<32xbf16>) -> vector<16xf32>
// BF16AMX: llvm.func @autopar_rt_require_amx()
// BF16AMX-NOT: dpbf16ps.512
// BF16AMX: llvm.func @autopar_main()
// BF16AMX: llvm.call @autopar_rt_require_amx() : () -> ()
// BF16AMX: llvm.call_intrinsic "llvm.x86.tileloadd64.internal"
// BF16AMX: llvm.call_intrinsic "llvm.x86.tdpbf16ps.internal"
// BF16AMX: llvm.call_intrinsic "llvm.x86.tilestored64.internal"
// BF16AMX-NOT: dpbf16ps.512
// BF16EXT: llvm.func @autopar_main()
// BF16EXT-NOT: dpbf16ps
// BF16EXT: llvm.intr.fmuladd
// BF16EXT-NOT: dpbf16ps

// BF16-NOT: autopar.
// BF16-DAG: llvm.func @autopar_rt_resident_weight_bf16(i64, i64, !llvm.ptr)
// BF16-DAG: llvm.func @autopar_rt_all_reduce_bf16(
// BF16-DAG: llvm.func @autopar_rt_read_input_f32(
// BF16-DAG: llvm.func @autopar_rt_write_output_f32(
// BF16: llvm.func @autopar_main()
// BF16: llvm.call @autopar_rt_all_reduce_bf16
// F16-DAG: llvm.func @autopar_rt_all_reduce_f16(
// F16-DAG: llvm.func @autopar_rt_read_input_f32(
// BADPRECISION: autopar-lower-precision: unknown precision 'f8' (expected f32, bf16 or f16)

// CHECK-NOT: autopar.
// CHECK-NOT: shard.
// CHECK-DAG: llvm.func @autopar_rt_resident_weight_f32(i64, i64, !llvm.ptr)
// CHECK-DAG: llvm.func @autopar_rt_all_reduce_f32(
// CHECK-DAG: llvm.func @autopar_rt_read_input_f32(
// CHECK-DAG: llvm.func @autopar_rt_write_output_f32(
// CHECK: llvm.func @autopar_main()
// CHECK: llvm.call @autopar_rt_all_reduce_f32

// OMP: llvm.func @autopar_main()
// OMP: %[[MAX:.*]] = llvm.call @omp_get_max_threads() : () -> i32
// OMP: %[[N:.*]] = llvm.intr.smin(%[[MAX]], %{{.*}}) : (i32, i32) -> i32
// OMP: omp.parallel num_threads(%[[N]] : i32) {
// OMP-NEXT: omp.wsloop nowait {
// OMP-NEXT: omp.loop_nest

// SEQ: llvm.func @autopar_main()
// SEQ-NOT: omp.parallel
// SEQ-NOT: omp_get_max_threads

// ALL: llvm.func @autopar_main()
// ALL-NOT: omp_get_max_threads
// ALL: omp.parallel {
// ALL-NEXT: omp.wsloop {
// ALL-NEXT: omp.loop_nest

// BADISA: unknown isa 'avx9' (expected auto, amx, avx512bf16, avx512, avx2 or generic)

// GRID1-NOT: all_reduce
// GRID1: llvm.func @autopar_main()
// GRID1-NOT: all_reduce

func.func @main(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %w1 = autopar.weight "fc1.weight" : tensor<16x32xf32>
  %h = autopar.matmul %x, %w1 : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %r = autopar.relu %h : (tensor<8x32xf32>) -> tensor<8x32xf32>
  %w2 = autopar.weight "fc2.weight" : tensor<32x16xf32>
  %y = autopar.matmul %r, %w2 : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}
