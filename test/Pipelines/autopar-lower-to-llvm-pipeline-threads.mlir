// Threads in the lowering pipeline: of a 64x64x64 matmul (0.5 MFLOP, two
// column panels of the 8x32 register tile) and a 256x256x512 one (67 MFLOP,
// 16 panels), only the big one's panel loop is a contraction's OpenMP
// parallel region, with at most 16 threads; the small one runs on the
// calling thread (the default grain: a million FLOPs per thread). The big
// matmul's data movement is chunked (autopar-chunk-parallel-loops) and
// threaded too, as much as its bytes fill at 4 FLOPs a byte (the same work
// model in both passes): the packing of its activation (256 KB read and
// written: 2 threads), of its weight, the unpacking transpose and the copy
// into the result (512 KB each way: 4 threads). With
// min-flops-per-thread=0 both panel loops and the chunked loops are parallel
// regions on all the rank's threads.
// RUN: autopar-opt %s --autopar-lower-to-llvm-pipeline=isa=avx512 | FileCheck %s
// RUN: autopar-opt %s --autopar-lower-to-llvm-pipeline="isa=avx512 min-flops-per-thread=0" | FileCheck %s --check-prefix=ALL

// CHECK: llvm.func @autopar_main()
// CHECK-DAG: %[[C2:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK-DAG: %[[C4:.*]] = llvm.mlir.constant(4 : i32) : i32
// CHECK-DAG: %[[C16:.*]] = llvm.mlir.constant(16 : i32) : i32
// CHECK: llvm.intr.smin(%{{.*}}, %[[C2]]) : (i32, i32) -> i32
// CHECK-NEXT: omp.parallel num_threads(
// CHECK: llvm.intr.smin(%{{.*}}, %[[C4]]) : (i32, i32) -> i32
// CHECK-NEXT: omp.parallel num_threads(
// CHECK: %[[MAX:.*]] = llvm.call @omp_get_max_threads() : () -> i32
// CHECK-NEXT: %[[N:.*]] = llvm.intr.smin(%[[MAX]], %[[C16]]) : (i32, i32) -> i32
// CHECK-NEXT: omp.parallel num_threads(%[[N]] : i32) {
// CHECK-NEXT: omp.wsloop nowait {
// CHECK: llvm.intr.smin(%{{.*}}, %[[C4]]) : (i32, i32) -> i32
// CHECK-NEXT: omp.parallel num_threads(
// CHECK: llvm.intr.smin(%{{.*}}, %[[C4]]) : (i32, i32) -> i32
// CHECK-NEXT: omp.parallel num_threads(
// CHECK-NOT: omp.parallel

// ALL: llvm.func @autopar_main()
// ALL-NOT: omp_get_max_threads
// ALL-COUNT-6: omp.parallel {
// ALL-NOT: omp.parallel

shard.grid @grid(shape = 1)
func.func @main(%x: tensor<64x64xf32>, %y: tensor<256x256xf32>) -> (tensor<64x64xf32>, tensor<256x512xf32>) {
  %w1 = autopar.weight "small" : tensor<64x64xf32>
  %a = autopar.matmul %x, %w1 : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %w2 = autopar.weight "big" : tensor<256x512xf32>
  %b = autopar.matmul %y, %w2 : (tensor<256x256xf32>, tensor<256x512xf32>) -> tensor<256x512xf32>
  return %a, %b : tensor<64x64xf32>, tensor<256x512xf32>
}
