// RUN: autopar-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(sharding-propagation,shard-partition))" -verify-diagnostics | FileCheck %s

// autopar ops state their sharding rules through upstream
// shard::ShardingInterface, so upstream propagation and partition accept them.

shard.grid @grid(shape = 2)
// CHECK-LABEL: func.func @data_parallel
// CHECK-SAME: (%[[X:.*]]: tensor<4x4xf32>, %[[W:.*]]: tensor<4x16xf32>) -> tensor<4x16xf32>
func.func @data_parallel(%x: tensor<8x4xf32>, %w: tensor<4x16xf32>) -> tensor<8x16xf32> {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %x0 = shard.shard %x to %s annotate_for_users : tensor<8x4xf32>
  // CHECK: %[[Y:.*]] = autopar.matmul %[[X]], %[[W]] : (tensor<4x4xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %y = autopar.matmul %x0, %w : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  // CHECK: autopar.relu %[[Y]] : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %r = autopar.relu %y : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

// -----

shard.grid @grid(shape = 2)
// A split contraction: upstream has no pending-sum state, so the op's
// partition all-reduces at once.
// CHECK-LABEL: func.func @k_split
func.func @k_split(%x: tensor<8x4xf32>, %w: tensor<4x16xf32>) -> tensor<8x16xf32> {
  %s = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %x0 = shard.shard %x to %s annotate_for_users : tensor<8x4xf32>
  %s1 = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %w0 = shard.shard %w to %s1 annotate_for_users : tensor<4x16xf32>
  // CHECK: %[[Y:.*]] = autopar.matmul %{{.*}}, %{{.*}} : (tensor<8x2xf32>, tensor<2x16xf32>) -> tensor<8x16xf32>
  // CHECK: shard.all_reduce %[[Y]] on @grid grid_axes = [0] : tensor<8x16xf32> -> tensor<8x16xf32>
  %y = autopar.matmul %x0, %w0 : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

shard.grid @grid(shape = 2)
// Upstream would add the bias on every device: refused with a diagnostic.
func.func @gemm_bias_k_split(%x: tensor<8x4xf32>, %w: tensor<4x16xf32>, %c: tensor<16xf32>) -> tensor<8x16xf32> {
  %s = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %x0 = shard.shard %x to %s annotate_for_users : tensor<8x4xf32>
  %s1 = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %w0 = shard.shard %w to %s1 annotate_for_users : tensor<4x16xf32>
  // expected-error @below {{with a split contraction and an added operand cannot be partitioned by upstream shard-partition (it would add operand 2 on every device); use autopar-partition}}
  %y = autopar.gemm %x0, %w0, %c : (tensor<8x4xf32>, tensor<4x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}
