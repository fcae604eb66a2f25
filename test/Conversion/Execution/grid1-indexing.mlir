// top_k (largest and smallest, along either axis, ties to the lower index,
// f32 and i64, k = 1 and the whole axis), scatter_elements (none with a
// repeated index: the later update wins; add; max; negative indices) and
// scatter_nd (rows with mul, elements with none), run under autopar-runner
// and compared with numpy.
// REQUIRES: autopar-runner
// RUN: rm -rf %t && mkdir -p %t
// RUN: autopar-opt %s --autopar-lower-to-llvm-pipeline | mlir-translate --mlir-to-llvmir -o %t/program.ll
// RUN: llc -O2 -filetype=obj -relocation-model=pic %t/program.ll -o %t/program.o
// RUN: cc -shared -o %t/program.so %t/program.o %omp_libs -lm
// RUN: %python %S/Inputs/device_data.py gen indexing %t
// RUN: mpirun --allow-run-as-root --oversubscribe -np 1 autopar-runner --program %t/program.so --grid 1 --weights %t/weights --inputs %t/inputs --outputs %t/outputs
// RUN: %python %S/Inputs/device_data.py check indexing %t | FileCheck %s

// CHECK: indexing: 13 outputs match

shard.grid @grid(shape = 1)
func.func @main(%x: tensor<3x6xf32>, %xi: tensor<4x3xi64>,
                %d: tensor<3x4xf32>, %i0: tensor<2x4xi64>,
                %u0: tensor<2x4xf32>, %i1: tensor<3x2xi64>,
                %u1: tensor<3x2xf32>, %n: tensor<4x3xf32>,
                %ni: tensor<2x1xi64>, %nu: tensor<2x3xf32>,
                %ei: tensor<3x2xi32>, %eu: tensor<3xf32>)
    -> (tensor<3x3xf32>, tensor<3x3xi64>, tensor<2x6xf32>, tensor<2x6xi64>,
        tensor<4x3xi64>, tensor<4x3xi64>, tensor<3x1xf32>, tensor<3x1xi64>,
        tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<4x3xf32>,
        tensor<4x3xf32>) {
  %0:2 = autopar.top_k %x {axis = 1 : i64, k = 3 : i64} : (tensor<3x6xf32>) -> (tensor<3x3xf32>, tensor<3x3xi64>)
  %1:2 = autopar.top_k %x {axis = 0 : i64, k = 2 : i64, largest = false} : (tensor<3x6xf32>) -> (tensor<2x6xf32>, tensor<2x6xi64>)
  %2:2 = autopar.top_k %xi {axis = 0 : i64, k = 4 : i64} : (tensor<4x3xi64>) -> (tensor<4x3xi64>, tensor<4x3xi64>)
  %3:2 = autopar.top_k %x {axis = 1 : i64, k = 1 : i64, largest = false} : (tensor<3x6xf32>) -> (tensor<3x1xf32>, tensor<3x1xi64>)
  %4 = autopar.scatter_elements %d, %i0, %u0 {axis = 0 : i64} : (tensor<3x4xf32>, tensor<2x4xi64>, tensor<2x4xf32>) -> tensor<3x4xf32>
  %5 = autopar.scatter_elements %d, %i1, %u1 {axis = 1 : i64, reduction = "add"} : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>
  %6 = autopar.scatter_elements %d, %i1, %u1 {axis = 1 : i64, reduction = "max"} : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>
  %7 = autopar.scatter_nd %n, %ni, %nu {reduction = "mul"} : (tensor<4x3xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %8 = autopar.scatter_nd %n, %ei, %eu : (tensor<4x3xf32>, tensor<3x2xi32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %0#0, %0#1, %1#0, %1#1, %2#0, %2#1, %3#0, %3#1, %4, %5, %6, %7, %8
    : tensor<3x3xf32>, tensor<3x3xi64>, tensor<2x6xf32>, tensor<2x6xi64>,
      tensor<4x3xi64>, tensor<4x3xi64>, tensor<3x1xf32>, tensor<3x1xi64>,
      tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<4x3xf32>,
      tensor<4x3xf32>
}
