// RUN: autopar-opt %s --split-input-file --autopar-differentiate="optimizer=adam lr=0.001" --autopar-apply-plan="grid=2 plan=data" --autopar-shard-optimizer-state | FileCheck %s
// RUN: autopar-opt %s --split-input-file --autopar-differentiate="optimizer=adam lr=0.001" --autopar-apply-plan="grid=2 plan=data" --autopar-shard-optimizer-state --autopar-verify-sharded --autopar-partition | FileCheck %s --check-prefix=PART

// Data parallel on 2 devices: every weight is replicated on both, so each
// weight's Adam moments and update are split over axis 0 along the largest
// dimension that 2 divides (w: rows; b: its only dimension). The step
// counter is a scalar and stays replicated.
// CHECK-LABEL: func.func @main
// CHECK-DAG: autopar.weight "adam.step" {autopar.shardings = [#autopar.sharding<{{\[\[}}]]>], autopar.zero_init}
// CHECK-DAG: %[[W:.*]] = autopar.weight "w" {autopar.shardings = [#autopar.sharding<{{\[\[}}], []]>]} : tensor<4x3xf32>
// CHECK-DAG: autopar.weight "w.adam_m" {autopar.optimizer_update = "w", autopar.shardings = [#autopar.sharding<{{\[\[}}0], []]>], autopar.zero_init} : tensor<4x3xf32>
// CHECK-DAG: autopar.weight "w.adam_v" {autopar.optimizer_update = "w", autopar.shardings = [#autopar.sharding<{{\[\[}}0], []]>], autopar.zero_init} : tensor<4x3xf32>
// CHECK-DAG: autopar.weight "b.adam_m" {autopar.optimizer_update = "b", autopar.shardings = [#autopar.sharding<{{\[\[}}0]]>], autopar.zero_init} : tensor<4xf32>
// CHECK: %[[NW:.*]] = autopar.sub %{{.*}}, %{{.*}} {autopar.optimizer_update = "w", autopar.shardings = [#autopar.sharding<{{\[\[}}0], []]>]} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK: autopar.assign %[[W]], %[[NW]] {autopar.optimizer_update = "w", autopar.shardings = [#autopar.sharding<{{\[\[}}], []]>]} : tensor<4x3xf32>

// The partitioned step: the gradient's pending sum is reduce-scattered into
// the update's row blocks, each device keeps half of each moment, and the
// store of the weight gathers the updated rows.
// PART-LABEL: func.func @main
// PART-DAG: autopar.weight "w.adam_m" {{.*}} : tensor<2x3xf32>
// PART-DAG: autopar.weight "w.adam_v" {{.*}} : tensor<2x3xf32>
// PART-DAG: autopar.weight "w" {{.*}} : tensor<4x3xf32>
// PART: shard.reduce_scatter %{{.*}} on @grid grid_axes = [0] scatter_axis = 0 : tensor<4x3xf32> -> tensor<2x3xf32>
// PART: %[[G:.*]] = shard.all_gather %{{.*}} on @grid grid_axes = [0] gather_axis = 0 : tensor<2x3xf32> -> tensor<4x3xf32>
// PART: autopar.assign %{{.*}}, %[[G]] {autopar.optimizer_update = "w"} : tensor<4x3xf32>
// PART-NOT: shard.all_reduce %{{.*}} : tensor<4x3xf32>
func.func @main(%x: tensor<8x3xf32>) -> tensor<f32> {
  %w = autopar.weight "w" : tensor<4x3xf32>
  %b = autopar.weight "b" : tensor<4xf32>
  %y = autopar.gemm %x, %w, %b {trans_b = true} : (tensor<8x3xf32>, tensor<4x3xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  %l = autopar.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// No dimension of the weight divides by the 2 replicas: its update stays
// replicated, as without the pass.
// CHECK-LABEL: func.func @main
// CHECK: autopar.weight "s.adam_m" {autopar.optimizer_update = "s", autopar.shardings = [#autopar.sharding<{{\[\[}}]]>], autopar.zero_init} : tensor<3xf32>
// PART-LABEL: func.func @main
// PART: autopar.weight "s.adam_m" {{.*}} : tensor<3xf32>
// PART: shard.all_reduce
func.func @main(%x: tensor<8x3xf32>) -> tensor<f32> {
  %s = autopar.weight "s" : tensor<3xf32>
  %y = autopar.mul %x, %s : (tensor<8x3xf32>, tensor<3xf32>) -> tensor<8x3xf32>
  %l = autopar.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
