// RUN: autopar-opt %s -split-input-file --autopar-partition | FileCheck %s

// Each case pins a value's sharding and a consumer that needs another one;
// the partitioner must pick the single-step collectives noted per case.

shard.grid @grid(shape = 4)
// CHECK-LABEL: func.func @partial_to_replicated
// CHECK-SAME: (%[[S:.*]]: tensor<8x4xf32> {autopar.global_type = tensor<8x16xf32>
func.func @partial_to_replicated(%x: tensor<8x16xf32> {autopar.sharding = #autopar.sharding<[[], [0]]>})
    -> (tensor<8x4xf32> {autopar.sharding = #autopar.sharding<[[], []]>}) {
  %w = autopar.weight "w" {autopar.shardings = [#autopar.sharding<[[0], []]>]} : tensor<16x4xf32>
  // CHECK: %[[M:.*]] = autopar.matmul %[[S]], %{{.*}} : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %y = autopar.matmul %x, %w {autopar.shardings = [#autopar.sharding<[[], []], partial = [0]>]} : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  // CHECK: %[[R:.*]] = shard.all_reduce %[[M]] on @grid grid_axes = [0] : tensor<8x4xf32> -> tensor<8x4xf32>
  // CHECK: return %[[R]]
  return %y : tensor<8x4xf32>
}

// -----

shard.grid @grid(shape = 4)
// CHECK-LABEL: func.func @partial_to_split
func.func @partial_to_split(%x: tensor<8x16xf32> {autopar.sharding = #autopar.sharding<[[], [0]]>})
    -> (tensor<8x4xf32> {autopar.sharding = #autopar.sharding<[[], []]>}) {
  %w = autopar.weight "w" {autopar.shardings = [#autopar.sharding<[[0], []]>]} : tensor<16x4xf32>
  %y = autopar.matmul %x, %w {autopar.shardings = [#autopar.sharding<[[], []], partial = [0]>]} : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  // CHECK: %[[RS:.*]] = shard.reduce_scatter %{{.*}} on @grid grid_axes = [0] scatter_axis = 0 : tensor<8x4xf32> -> tensor<2x4xf32>
  // CHECK: autopar.relu %[[RS]] : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %r = autopar.relu %y {autopar.shardings = [#autopar.sharding<[[0], []]>]} : (tensor<8x4xf32>) -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

shard.grid @grid(shape = 4)
// CHECK-LABEL: func.func @move_split_dim
func.func @move_split_dim(%x: tensor<8x16xf32> {autopar.sharding = #autopar.sharding<[[0], []]>})
    -> (tensor<8x16xf32> {autopar.sharding = #autopar.sharding<[[], []]>}) {
  %a = autopar.relu %x {autopar.shardings = [#autopar.sharding<[[0], []]>]} : (tensor<8x16xf32>) -> tensor<8x16xf32>
  // CHECK: %[[T:.*]] = shard.all_to_all %{{.*}} on @grid grid_axes = [0] split_axis = 1 concat_axis = 0 : tensor<2x16xf32> -> tensor<8x4xf32>
  // CHECK: autopar.relu %[[T]] : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %b = autopar.relu %a {autopar.shardings = [#autopar.sharding<[[], [0]]>]} : (tensor<8x16xf32>) -> tensor<8x16xf32>
  // CHECK: shard.all_gather %{{.*}} on @grid grid_axes = [0] gather_axis = 1 : tensor<8x4xf32> -> tensor<8x16xf32>
  return %b : tensor<8x16xf32>
}

// -----

shard.grid @grid(shape = 2x2)
// A 2-d reshard: the minor axis of dimension 0 moves to dimension 1 in one
// all-to-all; the major axis stays.
// CHECK-LABEL: func.func @two_axes
func.func @two_axes(%x: tensor<8x4xf32> {autopar.sharding = #autopar.sharding<[[0, 1], []]>})
    -> (tensor<8x4xf32> {autopar.sharding = #autopar.sharding<[[], []]>}) {
  // CHECK-SAME: (%{{.*}}: tensor<2x4xf32>
  %a = autopar.relu %x {autopar.shardings = [#autopar.sharding<[[0, 1], []]>]} : (tensor<8x4xf32>) -> tensor<8x4xf32>
  // CHECK: %[[T:.*]] = shard.all_to_all %{{.*}} on @grid grid_axes = [1] split_axis = 1 concat_axis = 0 : tensor<2x4xf32> -> tensor<4x2xf32>
  // CHECK: autopar.relu %[[T]] : (tensor<4x2xf32>) -> tensor<4x2xf32>
  // CHECK: shard.all_gather %{{.*}} on @grid grid_axes = [0] gather_axis = 0 : tensor<4x2xf32> -> tensor<8x2xf32>
  // CHECK: shard.all_gather %{{.*}} on @grid grid_axes = [1] gather_axis = 1 : tensor<8x2xf32> -> tensor<8x4xf32>
  %b = autopar.relu %a {autopar.shardings = [#autopar.sharding<[[0], [1]]>]} : (tensor<8x4xf32>) -> tensor<8x4xf32>
  return %b : tensor<8x4xf32>
}

// -----

shard.grid @grid(shape = 2)
// An added operand (Gemm's C) joins a pending sum through a local to_partial.
// CHECK-LABEL: func.func @bias_to_partial
func.func @bias_to_partial(%x: tensor<4x8xf32> {autopar.sharding = #autopar.sharding<[[], [0]]>})
    -> (tensor<4x6xf32> {autopar.sharding = #autopar.sharding<[[], []]>}) {
  %w = autopar.weight "w" {autopar.shardings = [#autopar.sharding<[[], [0]]>]} : tensor<6x8xf32>
  %c = autopar.weight "c" {autopar.shardings = [#autopar.sharding<[[]]>]} : tensor<6xf32>
  // CHECK: %[[C:.*]] = autopar.weight "c"
  // CHECK: %[[P:.*]] = autopar.to_partial %[[C]] on @grid grid_axes = [0] : tensor<6xf32>
  // CHECK: autopar.gemm %{{.*}}, %{{.*}}, %[[P]] {trans_b = true} : (tensor<4x4xf32>, tensor<6x4xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  %y = autopar.gemm %x, %w, %c {trans_b = true, autopar.shardings = [#autopar.sharding<[[], []], partial = [0]>]} : (tensor<4x8xf32>, tensor<6x8xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  // CHECK: shard.all_reduce
  return %y : tensor<4x6xf32>
}

// -----

shard.grid @grid(shape = 2)
// A runtime input read as its block, then resharded for its consumer.
// CHECK-LABEL: func.func @input_resharded
// CHECK-SAME: (%[[S:.*]]: tensor<8x2xf32> {autopar.global_type = tensor<8x4xf32>, autopar.sharding = #autopar.sharding<{{\[\[}}], [0]]>})
func.func @input_resharded(%x: tensor<8x4xf32> {autopar.sharding = #autopar.sharding<[[], [0]]>})
    -> (tensor<8x4xf32> {autopar.sharding = #autopar.sharding<[[], []]>}) {
  // CHECK: %[[T:.*]] = shard.all_to_all %[[S]] on @grid grid_axes = [0] split_axis = 0 concat_axis = 1 : tensor<8x2xf32> -> tensor<4x4xf32>
  // CHECK: autopar.relu %[[T]] : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %r = autopar.relu %x {autopar.shardings = [#autopar.sharding<[[0], []]>]} : (tensor<8x4xf32>) -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

shard.grid @grid(shape = 2x2)
// Rows split over axis 0 move to axis 1 by a point-to-point exchange.
// CHECK-LABEL: func.func @swap_axes
// CHECK-SAME: (%[[S:.*]]: tensor<4x4xf32>
func.func @swap_axes(%x: tensor<8x4xf32> {autopar.sharding = #autopar.sharding<[[0], []]>})
    -> (tensor<8x4xf32> {autopar.sharding = #autopar.sharding<[[], []]>}) {
  // CHECK: %[[W:.*]] = autopar.swap_grid_axes %[[S]] on @grid grid_axes = [0, 1] : tensor<4x4xf32>
  // CHECK: autopar.relu %[[W]] : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %r = autopar.relu %x {autopar.shardings = [#autopar.sharding<[[1], []]>]} : (tensor<8x4xf32>) -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}
