// RUN: autopar-opt %s --autopar-differentiate="optimizer=sgd lr=0.1" --autopar-apply-plan="grid=2 plan=data" | FileCheck %s
// RUN: autopar-opt %s --autopar-differentiate="optimizer=sgd lr=0.1" --autopar-apply-plan="grid=2 plan=data" --autopar-verify-sharded --autopar-partition | FileCheck %s --check-prefix=PART
// RUN: autopar-opt %s --autopar-differentiate="optimizer=adam lr=0.1" --autopar-apply-plan="grid=2 plan=data" --autopar-shard-optimizer-state --autopar-verify-sharded --autopar-partition | FileCheck %s --check-prefix=ZERO

// A weight read by two microbatches (as in a pipeline stage's step), data
// parallel on 2 devices: each microbatch's gradient of w (a gemm over the
// split batch) and of b (a sum over it, then a reshape) is a pending sum.
// The microbatches' gradients are added while pending and the sum is
// reduced once per weight, after the last microbatch: one all-reduce each
// (before, one per microbatch, then the add; here after the scaling by the
// learning rate, which a pending sum also passes), or with the distributed
// optimizer one reduce-scatter each.
// CHECK-LABEL: func.func @main
// CHECK: autopar.add %{{.*}}, %{{.*}} {autopar.shardings = [#autopar.sharding<{{\[\[}}], []], partial = [0]>]} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK: autopar.add %{{.*}}, %{{.*}} {autopar.shardings = [#autopar.sharding<{{\[\[}}]], partial = [0]>]} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>

// PART-LABEL: func.func @main
// PART-NOT: shard.all_reduce {{.*}}tensor<4x3xf32>
// PART-NOT: shard.all_reduce {{.*}}tensor<1x4xf32>
// PART-NOT: shard.all_reduce {{.*}}tensor<4xf32>
// PART: %[[GW:.*]] = autopar.add %{{.*}}, %{{.*}} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// PART: %[[GB:.*]] = autopar.add %{{.*}}, %{{.*}} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// PART: shard.all_reduce %{{.*}} on @grid grid_axes = [0] : tensor<4x3xf32> -> tensor<4x3xf32>
// PART: autopar.assign %{{.*}}, %{{.*}} {autopar.optimizer_update = "w"}
// PART: shard.all_reduce %{{.*}} on @grid grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
// PART: autopar.assign %{{.*}}, %{{.*}} {autopar.optimizer_update = "b"}
// PART-NOT: shard.all_reduce

// ZERO-LABEL: func.func @main
// ZERO-NOT: shard.all_reduce {{.*}}tensor<4
// ZERO-NOT: shard.all_reduce {{.*}}tensor<1x4
// ZERO: %[[GW:.*]] = autopar.add %{{.*}}, %{{.*}} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// ZERO: %[[GB:.*]] = autopar.add %{{.*}}, %{{.*}} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// ZERO: shard.reduce_scatter %[[GW]] on @grid grid_axes = [0] scatter_axis = 0 : tensor<4x3xf32> -> tensor<2x3xf32>
// ZERO: shard.reduce_scatter %[[GB]] on @grid grid_axes = [0] scatter_axis = 0 : tensor<4xf32> -> tensor<2xf32>
// ZERO-NOT: shard.all_reduce {{.*}}tensor<4
// ZERO-NOT: shard.reduce_scatter
func.func @main(%x0: tensor<8x3xf32>, %x1: tensor<8x3xf32>) -> tensor<f32> {
  %w = autopar.weight "w" : tensor<4x3xf32>
  %b = autopar.weight "b" : tensor<4xf32>
  %y0 = autopar.gemm %x0, %w, %b {trans_b = true} : (tensor<8x3xf32>, tensor<4x3xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  %s0 = autopar.mul %y0, %y0 : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %l0 = autopar.reduce_sum %s0 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x4xf32>) -> tensor<f32>
  %y1 = autopar.gemm %x1, %w, %b {trans_b = true} : (tensor<8x3xf32>, tensor<4x3xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  %s1 = autopar.mul %y1, %y1 : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %l1 = autopar.reduce_sum %s1 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x4xf32>) -> tensor<f32>
  %l = autopar.add %l0, %l1 : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %l : tensor<f32>
}
