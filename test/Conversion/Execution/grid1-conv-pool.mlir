// Convolution (2-D grouped with strides, dilations, asymmetric pads and bias;
// 1x1; depthwise, over whole rows and over flattened padded rows with
// dilations and asymmetric pads; 1-D), max pooling (pads that never win, ceil mode,
// dilations), average pooling (count_include_pad off and on, ceil mode),
// global average pooling and einsum (batched matmul, transpose, diagonal,
// matrix-vector, attention scores, outer product, full sum), run under
// autopar-runner and compared with naive numpy references.
// REQUIRES: autopar-runner
// RUN: rm -rf %t && mkdir -p %t
// RUN: autopar-opt %s --autopar-lower-to-llvm-pipeline | mlir-translate --mlir-to-llvmir -o %t/program.ll
// RUN: llc -O2 -filetype=obj -relocation-model=pic %t/program.ll -o %t/program.o
// RUN: cc -shared -o %t/program.so %t/program.o %omp_libs -lm
// RUN: %python %S/Inputs/device_data.py gen conv_pool %t
// RUN: mpirun --allow-run-as-root --oversubscribe -np 1 autopar-runner --program %t/program.so --grid 1 --weights %t/weights --inputs %t/inputs --outputs %t/outputs
// RUN: %python %S/Inputs/device_data.py check conv_pool %t | FileCheck %s

// CHECK: conv_pool: 21 outputs match

shard.grid @grid(shape = 1)
func.func @main(%img: tensor<1x4x7x6xf32>, %w: tensor<4x2x3x3xf32>,
                %bias: tensor<4xf32>, %w1: tensor<3x4x1x1xf32>,
                %wd: tensor<4x1x3x3xf32>, %seq: tensor<2x3x9xf32>,
                %ws: tensor<2x3x3xf32>, %a: tensor<2x3x4xf32>,
                %b: tensor<2x4x5xf32>, %sq: tensor<3x3xf32>, %v: tensor<3xf32>,
                %q: tensor<1x2x3x4xf32>, %k: tensor<1x2x5x4xf32>)
    -> (tensor<1x4x4x3xf32>, tensor<1x3x7x6xf32>, tensor<1x4x7x6xf32>,
        tensor<2x2x4xf32>, tensor<1x4x4x3xf32>, tensor<1x4x4x3xf32>,
        tensor<1x4x5x4xf32>, tensor<1x4x4x3xf32>, tensor<1x4x4x3xf32>,
        tensor<1x4x4x3xf32>, tensor<1x4x1x1xf32>, tensor<2x3x5xf32>,
        tensor<4x3x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<1x2x3x5xf32>,
        tensor<3x4xf32>, tensor<f32>, tensor<2x3x4xf32>, tensor<2x3x3xf32>,
        tensor<1x4x6x5xf32>) {
  %0 = autopar.conv %img, %w, %bias {strides = array<i64: 2, 1>, pads = array<i64: 1, 0, 1, 1>, dilations = array<i64: 1, 2>, group = 2 : i64} : (tensor<1x4x7x6xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x4x3xf32>
  %1 = autopar.conv %img, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x4x7x6xf32>, tensor<3x4x1x1xf32>) -> tensor<1x3x7x6xf32>
  %2 = autopar.conv %img, %wd, %bias {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 4 : i64} : (tensor<1x4x7x6xf32>, tensor<4x1x3x3xf32>, tensor<4xf32>) -> tensor<1x4x7x6xf32>
  %3 = autopar.conv %seq, %ws {strides = array<i64: 2>, pads = array<i64: 1, 2>, dilations = array<i64: 2>} : (tensor<2x3x9xf32>, tensor<2x3x3xf32>) -> tensor<2x2x4xf32>
  %4 = autopar.max_pool %img {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x4x7x6xf32>) -> tensor<1x4x4x3xf32>
  %5 = autopar.max_pool %img {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = true} : (tensor<1x4x7x6xf32>) -> tensor<1x4x4x3xf32>
  %6 = autopar.max_pool %img {kernel_shape = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 2>} : (tensor<1x4x7x6xf32>) -> tensor<1x4x5x4xf32>
  %7 = autopar.average_pool %img {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x4x7x6xf32>) -> tensor<1x4x4x3xf32>
  %8 = autopar.average_pool %img {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, count_include_pad = true} : (tensor<1x4x7x6xf32>) -> tensor<1x4x4x3xf32>
  %9 = autopar.average_pool %img {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = true} : (tensor<1x4x7x6xf32>) -> tensor<1x4x4x3xf32>
  %10 = autopar.global_average_pool %img : (tensor<1x4x7x6xf32>) -> tensor<1x4x1x1xf32>
  %11 = autopar.einsum %a, %b {equation = "bij,bjk->bik"} : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  %12 = autopar.einsum %a {equation = "bij->jib"} : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
  %13 = autopar.einsum %sq {equation = "ii->i"} : (tensor<3x3xf32>) -> tensor<3xf32>
  %14 = autopar.einsum %sq, %v {equation = "ij,j->i"} : (tensor<3x3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %15 = autopar.einsum %q, %k {equation = "bhqd,bhkd->bhqk"} : (tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x3x5xf32>
  %16 = autopar.einsum %v, %bias {equation = "i,j->ij"} : (tensor<3xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  %17 = autopar.einsum %a {equation = "bij->"} : (tensor<2x3x4xf32>) -> tensor<f32>
  %18 = autopar.max_pool %a {kernel_shape = array<i64: 3>, strides = array<i64: 1>, pads = array<i64: 1, 1>, dilations = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %19 = autopar.average_pool %a {kernel_shape = array<i64: 2>, strides = array<i64: 2>, pads = array<i64: 1, 0>, dilations = array<i64: 1>, ceil_mode = true} : (tensor<2x3x4xf32>) -> tensor<2x3x3xf32>
  %20 = autopar.conv %img, %wd {strides = array<i64: 1, 1>, pads = array<i64: 2, 1, 1, 2>, dilations = array<i64: 2, 2>, group = 4 : i64} : (tensor<1x4x7x6xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x6x5xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,
         %16, %17, %18, %19, %20
    : tensor<1x4x4x3xf32>, tensor<1x3x7x6xf32>, tensor<1x4x7x6xf32>,
      tensor<2x2x4xf32>, tensor<1x4x4x3xf32>, tensor<1x4x4x3xf32>,
      tensor<1x4x5x4xf32>, tensor<1x4x4x3xf32>, tensor<1x4x4x3xf32>,
      tensor<1x4x4x3xf32>, tensor<1x4x1x1xf32>, tensor<2x3x5xf32>,
      tensor<4x3x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<1x2x3x5xf32>,
      tensor<3x4xf32>, tensor<f32>, tensor<2x3x4xf32>, tensor<2x3x3xf32>,
      tensor<1x4x6x5xf32>
}
