// RUN: autopar-opt %s -split-input-file --autopar-partition | FileCheck %s

// A runtime input planned as a pending sum is read as its split and brought to
// its sharding by a local step; a constant arrives whole and is brought to its
// sharding by a chain of local steps. The first step reads the original
// value; only the users from before the chain read its end. (Found by the
// randomized differential test: every user, the first step included, was
// redirected to the chain's end, and the verifier rejected the module with
// "operand #0 does not dominate this use".)

shard.grid @grid(shape = 2x2)
// CHECK-LABEL: func.func @input_slice_then_partial
// CHECK-SAME: (%[[S:.*]]: tensor<8x8xf32> {autopar.global_type = tensor<8x16xf32>, autopar.sharding = #autopar.sharding<{{\[\[}}], [0]]>})
func.func @input_slice_then_partial(%x: tensor<8x16xf32> {autopar.sharding = #autopar.sharding<[[], [0]], partial = [1]>})
    -> (tensor<8x16xf32> {autopar.sharding = #autopar.sharding<[[], []]>}) {
  // CHECK-NOT: shard.all_slice
  // CHECK: %[[P:.*]] = autopar.to_partial %[[S]] on @grid grid_axes = [1] : tensor<8x8xf32>
  // CHECK: %[[R:.*]] = shard.all_reduce %[[P]] on @grid grid_axes = [1]
  // CHECK: autopar.relu %[[R]]
  %r = autopar.relu %x {autopar.shardings = [#autopar.sharding<[[], [0]]>]} : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

// -----

shard.grid @grid(shape = 2x2)
// CHECK-LABEL: func.func @input_two_dims
// CHECK-SAME: (%[[S1:.*]]: tensor<4x8xf32> {autopar.global_type = tensor<8x16xf32>, autopar.sharding = #autopar.sharding<{{\[\[}}1], [0]]>})
func.func @input_two_dims(%x: tensor<8x16xf32> {autopar.sharding = #autopar.sharding<[[1], [0]]>})
    -> (tensor<8x16xf32> {autopar.sharding = #autopar.sharding<[[], []]>}) {
  // CHECK-NOT: shard.all_slice
  // CHECK: autopar.relu %[[S1]] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %r = autopar.relu %x {autopar.shardings = [#autopar.sharding<[[1], [0]]>]} : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

// -----

shard.grid @grid(shape = 2x2)
// CHECK-LABEL: func.func @constant_two_dims
func.func @constant_two_dims() -> (tensor<4x4xf32> {autopar.sharding = #autopar.sharding<[[], []]>}) {
  // CHECK: %[[C:.*]] = autopar.constant
  // CHECK: %[[S0:.*]] = shard.all_slice %[[C]] on @grid grid_axes = [0] slice_axis = 0 : tensor<4x4xf32> -> tensor<2x4xf32>
  // CHECK: %[[S1:.*]] = shard.all_slice %[[S0]] on @grid grid_axes = [1] slice_axis = 1 : tensor<2x4xf32> -> tensor<2x2xf32>
  // CHECK: autopar.relu %[[S1]] : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %c = autopar.constant {autopar.shardings = [#autopar.sharding<[[0], [1]]>]} dense<0.5> : tensor<4x4xf32>
  %r = autopar.relu %c {autopar.shardings = [#autopar.sharding<[[0], [1]]>]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}
