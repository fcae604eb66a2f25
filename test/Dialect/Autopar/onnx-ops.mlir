// RUN: autopar-opt %s -split-input-file | autopar-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%x: tensor<2x3xf32>, %y: tensor<3xf32>, %c: tensor<2x1xi1>) -> tensor<2x3xf32> {
  // CHECK: autopar.abs
  %0 = autopar.abs %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: autopar.leaky_relu {{.*}} {alpha = 2.000000e-01 : f32}
  %1 = autopar.leaky_relu %0 {alpha = 0.2 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: autopar.gelu {{.*}} {approximate = "tanh"}
  %2 = autopar.gelu %1 {approximate = "tanh"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: autopar.clip {{.*}} {max = 6.000000e+00 : f64, min = 0.000000e+00 : f64}
  %3 = autopar.clip %2 {min = 0.0 : f64, max = 6.0 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: autopar.sub {{.*}} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %4 = autopar.sub %3, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: autopar.less {{.*}} -> tensor<2x3xi1>
  %5 = autopar.less %4, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  // CHECK: autopar.where {{.*}} : (tensor<2x1xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %6 = autopar.where %c, %4, %y : (tensor<2x1xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: autopar.cast {{.*}} : (tensor<2x3xi1>) -> tensor<2x3xf32>
  %7 = autopar.cast %5 : (tensor<2x3xi1>) -> tensor<2x3xf32>
  %8 = autopar.mul %6, %7 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %8 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @normalize_reduce
func.func @normalize_reduce(%x: tensor<2x4x8xf32>, %s: tensor<8xf32>) -> tensor<2x1x8xf32> {
  // CHECK: autopar.softmax {{.*}} {axis = 2 : i64}
  %0 = autopar.softmax %x {axis = 2} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // CHECK: autopar.layer_norm
  %1 = autopar.layer_norm %0, %s, %s {axis = 2, epsilon = 1.0e-5 : f32} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  // CHECK: autopar.reduce_mean {{.*}} {axes = array<i64: 1>} : (tensor<2x4x8xf32>) -> tensor<2x1x8xf32>
  %2 = autopar.reduce_mean %1 {axes = array<i64: 1>} : (tensor<2x4x8xf32>) -> tensor<2x1x8xf32>
  return %2 : tensor<2x1x8xf32>
}

// -----

// CHECK-LABEL: func.func @movement
func.func @movement(%x: tensor<2x4x8xf32>, %i: tensor<3xi64>) -> (tensor<8x2x4xf32>, tensor<2x32xf32>, tensor<2x3x8xf32>, tensor<2x1x4xf32>, tensor<2x4x16xf32>) {
  // CHECK: autopar.transpose {{.*}} -> tensor<8x2x4xf32>
  %t = autopar.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x4x8xf32>) -> tensor<8x2x4xf32>
  // CHECK: autopar.reshape {{.*}} -> tensor<2x32xf32>
  %r = autopar.reshape %x : (tensor<2x4x8xf32>) -> tensor<2x32xf32>
  // CHECK: autopar.gather {{.*}} -> tensor<2x3x8xf32>
  %g = autopar.gather %x, %i {axis = 1} : (tensor<2x4x8xf32>, tensor<3xi64>) -> tensor<2x3x8xf32>
  // CHECK: autopar.slice {{.*}} -> tensor<2x1x4xf32>
  %s = autopar.slice %x {starts = array<i64: 0, 3, 7>, steps = array<i64: 1, 1, -2>} : (tensor<2x4x8xf32>) -> tensor<2x1x4xf32>
  // CHECK: autopar.split {{.*}} -> (tensor<2x4x3xf32>, tensor<2x4x5xf32>)
  %a, %b = autopar.split %x {axis = 2} : (tensor<2x4x8xf32>) -> (tensor<2x4x3xf32>, tensor<2x4x5xf32>)
  // CHECK: autopar.concat {{.*}} -> tensor<2x4x16xf32>
  %c = autopar.concat %a, %b, %x {axis = 2} : (tensor<2x4x3xf32>, tensor<2x4x5xf32>, tensor<2x4x8xf32>) -> tensor<2x4x16xf32>
  return %t, %r, %g, %s, %c : tensor<8x2x4xf32>, tensor<2x32xf32>, tensor<2x3x8xf32>, tensor<2x1x4xf32>, tensor<2x4x16xf32>
}

// -----

// CHECK-LABEL: func.func @conv_pool
func.func @conv_pool(%x: tensor<1x4x8x8xf32>, %w: tensor<6x2x3x3xf32>, %b: tensor<6xf32>) -> (tensor<1x6x4x4xf32>, tensor<1x4x4x4xf32>, tensor<1x4x1x1xf32>) {
  // CHECK: autopar.conv {{.*}} -> tensor<1x6x4x4xf32>
  %y = autopar.conv %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<1x6x4x4xf32>
  // CHECK: autopar.max_pool {{.*}} -> tensor<1x4x4x4xf32>
  %p = autopar.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  // CHECK: autopar.global_average_pool {{.*}} -> tensor<1x4x1x1xf32>
  %g = autopar.global_average_pool %x : (tensor<1x4x8x8xf32>) -> tensor<1x4x1x1xf32>
  return %y, %p, %g : tensor<1x6x4x4xf32>, tensor<1x4x4x4xf32>, tensor<1x4x1x1xf32>
}

// -----

// CHECK-LABEL: func.func @einsum
func.func @einsum(%q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>) -> tensor<2x4x6xf32> {
  // CHECK: autopar.einsum {{.*}} {equation = "bqd,bkd->bqk"} {{.*}} -> tensor<2x4x6xf32>
  %s = autopar.einsum %q, %k {equation = "bqd,bkd->bqk"} : (tensor<2x4x8xf32>, tensor<2x6x8xf32>) -> tensor<2x4x6xf32>
  return %s : tensor<2x4x6xf32>
}
