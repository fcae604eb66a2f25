// Softmax, log-softmax (with large logits: the maximum is subtracted first),
// layer and batch normalization, and reductions (sum, mean, max; keepdims;
// all axes; integers) run under autopar-runner and compared with numpy.
// REQUIRES: autopar-runner
// RUN: rm -rf %t && mkdir -p %t
// RUN: autopar-opt %s --autopar-lower-to-llvm-pipeline | mlir-translate --mlir-to-llvmir -o %t/program.ll
// RUN: llc -O2 -filetype=obj -relocation-model=pic %t/program.ll -o %t/program.o
// RUN: cc -shared -o %t/program.so %t/program.o %omp_libs -lm
// RUN: %python %S/Inputs/device_data.py gen normalization %t
// RUN: mpirun --allow-run-as-root --oversubscribe -np 1 autopar-runner --program %t/program.so --grid 1 --weights %t/weights --inputs %t/inputs --outputs %t/outputs
// RUN: %python %S/Inputs/device_data.py check normalization %t | FileCheck %s

// CHECK: normalization: 17 outputs match

shard.grid @grid(shape = 1)
func.func @main(%x: tensor<2x3x4xf32>, %big: tensor<2x5xf32>,
                %scale: tensor<4xf32>, %bias: tensor<4xf32>,
                %scale2: tensor<3x4xf32>, %xb: tensor<2x3x2x2xf32>,
                %bscale: tensor<3xf32>, %bbias: tensor<3xf32>,
                %bmean: tensor<3xf32>, %bvar: tensor<3xf32>,
                %i: tensor<3x4xi64>)
    -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>,
        tensor<2x3x4xf32>, tensor<2x5xf32>, tensor<2x5xf32>,
        tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x2x2xf32>,
        tensor<2x1x4xf32>, tensor<3xf32>, tensor<2x3x1xf32>, tensor<f32>,
        tensor<2x4xf32>, tensor<3xi64>, tensor<1x4xi64>, tensor<3xi64>) {
  %0 = autopar.softmax %x {axis = 2 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %1 = autopar.softmax %x {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %2 = autopar.log_softmax %x {axis = 2 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %3 = autopar.log_softmax %x {axis = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %4 = autopar.softmax %big {axis = 1 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  %5 = autopar.log_softmax %big {axis = 1 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  %6 = autopar.layer_norm %x, %scale, %bias {axis = 2 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  %7 = autopar.layer_norm %x, %scale2 {axis = 1 : i64, epsilon = 1.0e-3 : f32} : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
  %8 = autopar.batch_norm %xb, %bscale, %bbias, %bmean, %bvar {epsilon = 1.0e-5 : f32} : (tensor<2x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x2x2xf32>
  %9 = autopar.reduce_sum %x {axes = array<i64: 1>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  %10 = autopar.reduce_sum %x {axes = array<i64: 0, 2>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %11 = autopar.reduce_mean %x {axes = array<i64: 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  %12 = autopar.reduce_mean %x {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<f32>
  %13 = autopar.reduce_max %x {axes = array<i64: 1>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  %14 = autopar.reduce_max %i {axes = array<i64: 1>, keepdims = false} : (tensor<3x4xi64>) -> tensor<3xi64>
  %15 = autopar.reduce_sum %i {axes = array<i64: 0>} : (tensor<3x4xi64>) -> tensor<1x4xi64>
  %16 = autopar.reduce_mean %i {axes = array<i64: 1>, keepdims = false} : (tensor<3x4xi64>) -> tensor<3xi64>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16
    : tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>,
      tensor<2x3x4xf32>, tensor<2x5xf32>, tensor<2x5xf32>,
      tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x2x2xf32>,
      tensor<2x1x4xf32>, tensor<3xf32>, tensor<2x3x1xf32>, tensor<f32>,
      tensor<2x4xf32>, tensor<3xi64>, tensor<1x4xi64>, tensor<3xi64>
}
