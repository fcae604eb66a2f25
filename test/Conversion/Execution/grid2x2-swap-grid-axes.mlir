// Lowers a hand-written 2x2 device program that moves values between grid
// axes with autopar.swap_grid_axes and runs it on 4 MPI ranks under
// autopar-runner.
// REQUIRES: autopar-runner
// RUN: rm -rf %t && mkdir -p %t
// RUN: autopar-opt %s --autopar-lower-to-llvm-pipeline | mlir-translate --mlir-to-llvmir -o %t/program.ll
// RUN: llc -O2 -filetype=obj -relocation-model=pic %t/program.ll -o %t/program.o
// RUN: cc -shared -o %t/program.so %t/program.o %omp_libs
// RUN: %python %S/Inputs/device_data.py gen grid2x2_swap %t
// RUN: mpirun --allow-run-as-root --oversubscribe -np 4 autopar-runner --program %t/program.so --grid 2x2 --weights %t/weights --inputs %t/inputs --outputs %t/outputs
// RUN: %python %S/Inputs/device_data.py check grid2x2_swap %t | FileCheck %s

// CHECK: grid2x2_swap: 3 outputs match

shard.grid @grid(shape = 2x2)
func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8x3xi64>) {
  // 0: row blocks split over axis 0, swapped to axis 1, gathered over axis 1.
  %s = shard.all_slice %x on @grid grid_axes = [0] slice_axis = 0 : tensor<4x8xf32> -> tensor<2x8xf32>
  %t = autopar.swap_grid_axes %s on @grid grid_axes = [0, 1] : tensor<2x8xf32>
  %y = shard.all_gather %t on @grid grid_axes = [1] gather_axis = 0 : tensor<2x8xf32> -> tensor<4x8xf32>
  // 1: the swapped block of every device, in rank order.
  %all = shard.all_gather %t on @grid grid_axes = [0, 1] gather_axis = 0 : tensor<2x8xf32> -> tensor<8x8xf32>
  // 2: a per-rank i64 weight swapped over [1, 0], gathered in rank order.
  %w = autopar.weight "w" : tensor<2x3xi64>
  %ws = autopar.swap_grid_axes %w on @grid grid_axes = [1, 0] : tensor<2x3xi64>
  %wg = shard.all_gather %ws on @grid grid_axes = [0, 1] gather_axis = 0 : tensor<2x3xi64> -> tensor<8x3xi64>
  return %y, %all, %wg : tensor<4x8xf32>, tensor<8x8xf32>, tensor<8x3xi64>
}
