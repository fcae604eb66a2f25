// RUN: autopar-opt %s -split-input-file --autopar-partition -verify-diagnostics | FileCheck %s

// Partitioning of ops whose rules keep loops whole or regroup dimensions.

shard.grid @grid(shape = 2)
// Softmax along a split axis: the operand is gathered first.
// CHECK-LABEL: func.func @softmax_axis
func.func @softmax_axis(%x: tensor<4x8xf32> {autopar.sharding = #autopar.sharding<[[], [0]]>})
    -> (tensor<4x8xf32> {autopar.sharding = #autopar.sharding<[[], []]>}) {
  // CHECK-SAME: (%[[S:.*]]: tensor<4x4xf32> {autopar.global_type = tensor<4x8xf32>, autopar.sharding = #autopar.sharding<{{\[\[}}], [0]]>})
  // CHECK-NOT: shard.all_slice
  // CHECK: %[[T:.*]] = shard.all_to_all %[[S]] on @grid grid_axes = [0] split_axis = 0 concat_axis = 1 : tensor<4x4xf32> -> tensor<2x8xf32>
  // CHECK: autopar.softmax %[[T]] {axis = 1 : i64} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %y = autopar.softmax %x {axis = 1, autopar.shardings = [#autopar.sharding<[[0], []]>]} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

shard.grid @grid(shape = 2)
// Attention heads: [B, S, H*D] split along H*D reshapes to [B, S, H, D] split
// along H with no communication.
// CHECK-LABEL: func.func @reshape_heads
func.func @reshape_heads(%x: tensor<2x4x12xf32> {autopar.sharding = #autopar.sharding<[[], [], [0]]>})
    -> (tensor<2x4x6x2xf32> {autopar.sharding = #autopar.sharding<[[], [], [], []]>}) {
  // CHECK-SAME: (%[[S:.*]]: tensor<2x4x6xf32>
  // CHECK: %[[R:.*]] = autopar.reshape %[[S]] : (tensor<2x4x6xf32>) -> tensor<2x4x3x2xf32>
  // CHECK-NOT: shard.all_to_all
  // CHECK: shard.all_gather %[[R]] on @grid grid_axes = [0] gather_axis = 2
  %y = autopar.reshape %x {autopar.shardings = [#autopar.sharding<[[], [], [0], []]>]} : (tensor<2x4x12xf32>) -> tensor<2x4x6x2xf32>
  return %y : tensor<2x4x6x2xf32>
}

// -----

shard.grid @grid(shape = 2)
// Input channels of a conv split: pending sum; the bias joins it on one
// device; the sum is reduced at the output.
// CHECK-LABEL: func.func @conv_channels
func.func @conv_channels(%x: tensor<1x4x6x6xf32> {autopar.sharding = #autopar.sharding<[[], [0], [], []]>})
    -> (tensor<1x2x4x4xf32> {autopar.sharding = #autopar.sharding<[[], [], [], []]>}) {
  %w = autopar.weight "w" {autopar.shardings = [#autopar.sharding<[[], [0], [], []]>]} : tensor<2x4x3x3xf32>
  %b = autopar.weight "b" {autopar.shardings = [#autopar.sharding<[[]]>]} : tensor<2xf32>
  // CHECK: %[[P:.*]] = autopar.to_partial %{{.*}} on @grid grid_axes = [0] : tensor<2xf32>
  // CHECK: %[[C:.*]] = autopar.conv %{{.*}}, %{{.*}}, %[[P]] {{.*}} : (tensor<1x2x6x6xf32>, tensor<2x2x3x3xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  // CHECK: shard.all_reduce %[[C]] on @grid grid_axes = [0]
  %y = autopar.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, autopar.shardings = [#autopar.sharding<[[], [], [], []], partial = [0]>]} : (tensor<1x4x6x6xf32>, tensor<2x4x3x3xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  return %y : tensor<1x2x4x4xf32>
}

// -----

shard.grid @grid(shape = 2)
// A pinned split of a dimension the op needs whole is an error.
func.func @whole_dimension(%x: tensor<4x8xf32> {autopar.sharding = #autopar.sharding<[[], []]>})
    -> (tensor<4x8xf32> {autopar.sharding = #autopar.sharding<[[], []]>}) {
  // expected-error @below {{result 0 dimension 1 cannot be split: the op needs it whole on every device}}
  %y = autopar.softmax %x {axis = 1, autopar.shardings = [#autopar.sharding<[[], [0]]>]} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
