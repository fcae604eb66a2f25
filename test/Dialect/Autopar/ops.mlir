// RUN: autopar-opt %s -split-input-file | autopar-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @compute
func.func @compute(%x: tensor<8x4xf32>, %v: tensor<4xf32>) -> tensor<8x16xf32> {
  // CHECK: autopar.weight "w" : tensor<4x16xf32>
  %w = autopar.weight "w" : tensor<4x16xf32>
  // CHECK: autopar.matmul %{{.*}}, %{{.*}} : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  %y = autopar.matmul %x, %w : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  // CHECK: autopar.matmul %{{.*}}, %{{.*}} : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8xf32>
  %mv = autopar.matmul %x, %v : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8xf32>
  // CHECK: autopar.gemm {{.*}} {alpha = 5.000000e-01 : f32, trans_a = true}
  %g = autopar.gemm %x, %x {trans_a = true, alpha = 0.5 : f32} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  // CHECK: autopar.add {{.*}} : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %b = autopar.weight "b" : tensor<16xf32>
  %z = autopar.add %y, %b : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  // CHECK: autopar.relu
  %r = autopar.relu %z : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

// -----

// CHECK-LABEL: func.func @batched
func.func @batched(%a: tensor<2x1x3x4xf32>, %b: tensor<5x4x6xf32>) -> tensor<2x5x3x6xf32> {
  // CHECK: -> tensor<2x5x3x6xf32>
  %y = autopar.matmul %a, %b : (tensor<2x1x3x4xf32>, tensor<5x4x6xf32>) -> tensor<2x5x3x6xf32>
  return %y : tensor<2x5x3x6xf32>
}

// -----

// CHECK: shard.grid @grid(shape = 2x2)
shard.grid @grid(shape = 2x2)
// CHECK-LABEL: func.func @shardings
// CHECK-SAME: #autopar.sharding<{{\[\[}}0, 1], []]>
func.func @shardings(%x: tensor<8x4xf32> {autopar.sharding = #autopar.sharding<[[0, 1], []]>}) -> tensor<8x4xf32> {
  // CHECK: autopar.relu {{.*}}#autopar.sharding<{{\[\[}}0], []], partial = [1]>
  %r = autopar.relu %x {autopar.shardings = [#autopar.sharding<[[0], []], partial = [1]>]} : (tensor<8x4xf32>) -> tensor<8x4xf32>
  // CHECK: autopar.to_partial %{{.*}} on @grid grid_axes = [1] : tensor<8x4xf32>
  %p = autopar.to_partial %r on @grid grid_axes = [1] : tensor<8x4xf32>
  return %p : tensor<8x4xf32>
}
