// Threads in the lowering pipeline: of a 64x64x64 matmul (0.5 MFLOP, two
// column panels of the 8x32 register tile) and a 256x256x512 one (67 MFLOP,
// 16 panels), only the big one's panel loop is an OpenMP parallel region,
// with at most 16 threads; the small one runs on the calling thread (the
// default grain: a million FLOPs per thread). Nothing but the contractions'
// panel loops is threaded (packing, the zero fill of outputs and the
// unpacking are sequential loops). With min-flops-per-thread=0 both panel
// loops are parallel regions on all the rank's threads.
// RUN: autopar-opt %s --autopar-lower-to-llvm-pipeline=isa=avx512 | FileCheck %s
// RUN: autopar-opt %s --autopar-lower-to-llvm-pipeline="isa=avx512 min-flops-per-thread=0" | FileCheck %s --check-prefix=ALL

// CHECK: llvm.func @autopar_main()
// CHECK: %[[C16:.*]] = llvm.mlir.constant(16 : i32) : i32
// CHECK: %[[MAX:.*]] = llvm.call @omp_get_max_threads() : () -> i32
// CHECK: %[[N:.*]] = llvm.intr.smin(%[[MAX]], %[[C16]]) : (i32, i32) -> i32
// CHECK: omp.parallel num_threads(%[[N]] : i32) {
// CHECK-NEXT: omp.wsloop nowait {
// CHECK-NOT: omp.parallel

// ALL: llvm.func @autopar_main()
// ALL-NOT: omp_get_max_threads
// ALL-COUNT-2: omp.parallel {
// ALL-NOT: omp.parallel

shard.grid @grid(shape = 1)
func.func @main(%x: tensor<64x64xf32>, %y: tensor<256x256xf32>) -> (tensor<64x64xf32>, tensor<256x512xf32>) {
  %w1 = autopar.weight "small" : tensor<64x64xf32>
  %a = autopar.matmul %x, %w1 : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %w2 = autopar.weight "big" : tensor<256x512xf32>
  %b = autopar.matmul %y, %w2 : (tensor<256x256xf32>, tensor<256x512xf32>) -> tensor<256x512xf32>
  return %a, %b : tensor<64x64xf32>, tensor<256x512xf32>
}
