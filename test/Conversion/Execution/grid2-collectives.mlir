// Lowers a hand-written 2-rank device program (Megatron-style MLP with a bias
// joined through autopar.to_partial, then every collective) to a shared object
// and runs it on 2 MPI ranks under autopar-runner.
// REQUIRES: autopar-runner
// RUN: rm -rf %t && mkdir -p %t
// RUN: autopar-opt %s --autopar-lower-to-llvm-pipeline | mlir-translate --mlir-to-llvmir -o %t/program.ll
// RUN: llc -O2 -filetype=obj -relocation-model=pic %t/program.ll -o %t/program.o
// RUN: cc -shared -o %t/program.so %t/program.o %omp_libs
// RUN: %python %S/Inputs/device_data.py gen grid2 %t
// RUN: mpirun --allow-run-as-root --oversubscribe -np 2 autopar-runner --program %t/program.so --grid 2 --weights %t/weights --inputs %t/inputs --outputs %t/outputs
// RUN: %python %S/Inputs/device_data.py check grid2 %t | FileCheck %s

// CHECK: grid2: 5 outputs match

shard.grid @grid(shape = 2)
func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x4xf32>) {
  // Column-parallel first layer, row-parallel second layer: a pending sum.
  %w1 = autopar.weight "w1" {autopar.global_type = tensor<8x16xf32>} : tensor<8x8xf32>
  %h = autopar.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %r = autopar.relu %h : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %w2 = autopar.weight "w2" {autopar.global_type = tensor<16x8xf32>} : tensor<8x8xf32>
  %p = autopar.matmul %r, %w2 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %b = autopar.weight "b" : tensor<8xf32>
  %bp = autopar.to_partial %b on @grid grid_axes = [0] : tensor<8xf32>
  %pb = autopar.add %p, %bp : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // 0: all_reduce.
  %y = shard.all_reduce %pb on @grid grid_axes = [0] : tensor<4x8xf32> -> tensor<4x8xf32>
  // 1: reduce_scatter then all_gather.
  %rs = shard.reduce_scatter %pb on @grid grid_axes = [0] scatter_axis = 0 : tensor<4x8xf32> -> tensor<2x8xf32>
  %g = shard.all_gather %rs on @grid grid_axes = [0] gather_axis = 0 : tensor<2x8xf32> -> tensor<4x8xf32>
  // 2: column block (all_slice), all_to_all to a row block, all_gather.
  %s = shard.all_slice %y on @grid grid_axes = [0] slice_axis = 1 : tensor<4x8xf32> -> tensor<4x4xf32>
  %t = shard.all_to_all %s on @grid grid_axes = [0] split_axis = 0 concat_axis = 1 : tensor<4x4xf32> -> tensor<2x8xf32>
  %tg = shard.all_gather %t on @grid grid_axes = [0] gather_axis = 0 : tensor<2x8xf32> -> tensor<4x8xf32>
  // 3: all_gather of the (strided) column block.
  %gs = shard.all_gather %s on @grid grid_axes = [0] gather_axis = 1 : tensor<4x4xf32> -> tensor<4x8xf32>
  // 4: the column block of rank 0 (rank 0 writes outputs).
  %xs = shard.all_slice %x on @grid grid_axes = [0] slice_axis = 1 : tensor<4x8xf32> -> tensor<4x4xf32>
  %xs1 = shard.all_to_all %xs on @grid grid_axes = [0] split_axis = 1 concat_axis = 1 : tensor<4x4xf32> -> tensor<4x4xf32>
  return %y, %g, %tg, %gs, %xs1 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x4xf32>
}
