// Data movement: transpose, reshape (nesting, non-nesting, of a strided
// slice), expand, concat, split, slices with positive and negative steps and
// gathers (negative indices, scalar index, int64 data, i32 indices) on f32,
// i64 and i1, run under autopar-runner and compared with numpy.
// REQUIRES: autopar-runner
// RUN: rm -rf %t && mkdir -p %t
// RUN: autopar-opt %s --autopar-lower-to-llvm-pipeline | mlir-translate --mlir-to-llvmir -o %t/program.ll
// RUN: llc -O2 -filetype=obj -relocation-model=pic %t/program.ll -o %t/program.o
// RUN: cc -shared -o %t/program.so %t/program.o %omp_libs -lm
// RUN: %python %S/Inputs/device_data.py gen movement %t
// RUN: mpirun --allow-run-as-root --oversubscribe -np 1 autopar-runner --program %t/program.so --grid 1 --weights %t/weights --inputs %t/inputs --outputs %t/outputs
// RUN: %python %S/Inputs/device_data.py check movement %t | FileCheck %s

// CHECK: movement: 20 outputs match

shard.grid @grid(shape = 1)
func.func @main(%x: tensor<2x3x4xf32>, %x2: tensor<2x1x4xf32>,
                %r: tensor<3x1xf32>, %idx: tensor<2x2xi64>, %t: tensor<4xi64>,
                %b: tensor<2x3xi1>, %idx32: tensor<3xi32>)
    -> (tensor<4x2x3xf32>, tensor<6x4xf32>, tensor<4x6xf32>, tensor<24xf32>,
        tensor<2x3x4xf32>, tensor<2x4x4xf32>, tensor<8xi64>, tensor<2x6xi1>,
        tensor<2x3x1xf32>, tensor<2x3x3xf32>, tensor<1x2x2xf32>,
        tensor<2x2x2xf32>, tensor<8xf32>, tensor<2x2x2x4xf32>, tensor<3x4xf32>,
        tensor<2x2xi64>, tensor<3x2xi1>, tensor<2x3x3xf32>, tensor<1x1x2x12xf32>,
        tensor<4x3x2xf32>) {
  %0 = autopar.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %1 = autopar.reshape %x : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %2 = autopar.reshape %x : (tensor<2x3x4xf32>) -> tensor<4x6xf32>
  %3 = autopar.reshape %x : (tensor<2x3x4xf32>) -> tensor<24xf32>
  %4 = autopar.expand %r : (tensor<3x1xf32>) -> tensor<2x3x4xf32>
  %5 = autopar.concat %x, %x2 {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x1x4xf32>) -> tensor<2x4x4xf32>
  %6 = autopar.concat %t, %t {axis = 0 : i64} : (tensor<4xi64>, tensor<4xi64>) -> tensor<8xi64>
  %7 = autopar.concat %b, %b {axis = 1 : i64} : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x6xi1>
  %8:2 = autopar.split %x {axis = 2 : i64} : (tensor<2x3x4xf32>) -> (tensor<2x3x1xf32>, tensor<2x3x3xf32>)
  %10 = autopar.slice %x {starts = array<i64: 1, 0, 3>, steps = array<i64: 1, 2, -2>} : (tensor<2x3x4xf32>) -> tensor<1x2x2xf32>
  %11 = autopar.slice %x {starts = array<i64: 0, 1, 1>, steps = array<i64: 1, 1, 2>} : (tensor<2x3x4xf32>) -> tensor<2x2x2xf32>
  %12 = autopar.reshape %11 : (tensor<2x2x2xf32>) -> tensor<8xf32>
  %13 = autopar.gather %x, %idx {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x2xi64>) -> tensor<2x2x2x4xf32>
  %minus1 = autopar.constant dense<-1> : tensor<i64>
  %14 = autopar.gather %x, %minus1 {axis = 0 : i64} : (tensor<2x3x4xf32>, tensor<i64>) -> tensor<3x4xf32>
  %15 = autopar.gather %t, %idx {axis = 0 : i64} : (tensor<4xi64>, tensor<2x2xi64>) -> tensor<2x2xi64>
  %16 = autopar.transpose %b {perm = array<i64: 1, 0>} : (tensor<2x3xi1>) -> tensor<3x2xi1>
  %17 = autopar.gather %x, %idx32 {axis = 2 : i64} : (tensor<2x3x4xf32>, tensor<3xi32>) -> tensor<2x3x3xf32>
  %18 = autopar.reshape %x : (tensor<2x3x4xf32>) -> tensor<1x1x2x12xf32>
  %19 = autopar.slice %0 {starts = array<i64: 3, 1, 2>, steps = array<i64: -1, -1, -1>} : (tensor<4x2x3xf32>) -> tensor<4x2x3xf32>
  %20 = autopar.transpose %19 {perm = array<i64: 0, 2, 1>} : (tensor<4x2x3xf32>) -> tensor<4x3x2xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8#0, %8#1, %10, %11, %12, %13, %14,
         %15, %16, %17, %18, %20
    : tensor<4x2x3xf32>, tensor<6x4xf32>, tensor<4x6xf32>, tensor<24xf32>,
      tensor<2x3x4xf32>, tensor<2x4x4xf32>, tensor<8xi64>, tensor<2x6xi1>,
      tensor<2x3x1xf32>, tensor<2x3x3xf32>, tensor<1x2x2xf32>,
      tensor<2x2x2xf32>, tensor<8xf32>, tensor<2x2x2x4xf32>, tensor<3x4xf32>,
      tensor<2x2xi64>, tensor<3x2xi1>, tensor<2x3x3xf32>, tensor<1x1x2x12xf32>,
      tensor<4x3x2xf32>
}
