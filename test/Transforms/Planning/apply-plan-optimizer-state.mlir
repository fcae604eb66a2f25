// RUN: autopar-opt %s --autopar-differentiate="optimizer=adam lr=0.001" --autopar-apply-plan="grid=2x2 plan=tensor" | FileCheck %s
// RUN: autopar-opt %s --autopar-differentiate="optimizer=adam lr=0.001" --autopar-apply-plan="grid=2x2 plan=tensor" --autopar-verify-sharded --autopar-partition | FileCheck %s --check-prefix=PART
// RUN: autopar-opt %s --autopar-differentiate="optimizer=adam lr=0.001" --autopar-apply-plan="grid=2 plan=data" | FileCheck %s --check-prefix=DATA

// The tensor plan stores a weight's Adam moments in the weight's own layout
// (Megatron's column split of w1 and b1, row split of w2), so the update is
// computed on the local blocks and every store writes them as they are. Left
// to their first use (the moment times 0.9, whose other operand is a
// scalar), the moments were stored whole: each device computed them whole,
// and the updated blocks of the weight were all-gathered into a whole
// buffer to be sliced again at the store.
// CHECK-LABEL: func.func @main
// CHECK-DAG: autopar.weight "adam.step" {autopar.shardings = [#autopar.sharding<{{\[\[}}]]>], autopar.zero_init} : tensor<1xf32>
// CHECK-DAG: autopar.weight "w1" {autopar.shardings = [#autopar.sharding<{{\[\[}}1], []]>]} : tensor<32x16xf32>
// CHECK-DAG: autopar.weight "w1.adam_m" {autopar.optimizer_update = "w1", autopar.shardings = [#autopar.sharding<{{\[\[}}1], []]>], autopar.zero_init}
// CHECK-DAG: autopar.weight "w1.adam_v" {autopar.optimizer_update = "w1", autopar.shardings = [#autopar.sharding<{{\[\[}}1], []]>], autopar.zero_init}
// CHECK-DAG: autopar.weight "b1.adam_m" {autopar.optimizer_update = "b1", autopar.shardings = [#autopar.sharding<{{\[\[}}1]]>], autopar.zero_init}
// CHECK-DAG: autopar.weight "w2" {autopar.shardings = [#autopar.sharding<{{\[\[}}], [1]]>]} : tensor<4x32xf32>
// CHECK-DAG: autopar.weight "w2.adam_m" {autopar.optimizer_update = "w2", autopar.shardings = [#autopar.sharding<{{\[\[}}], [1]]>], autopar.zero_init}
// CHECK-DAG: autopar.weight "w2.adam_v" {autopar.optimizer_update = "w2", autopar.shardings = [#autopar.sharding<{{\[\[}}], [1]]>], autopar.zero_init}
// CHECK: autopar.assign {{.*}}autopar.optimizer_update = "w1", autopar.shardings = [#autopar.sharding<{{\[\[}}1], []]>]} : tensor<32x16xf32>
// CHECK: autopar.assign {{.*}}autopar.optimizer_update = "w2", autopar.shardings = [#autopar.sharding<{{\[\[}}], [1]]>]} : tensor<4x32xf32>

// The partitioned step gathers nothing for the update.
// PART-LABEL: func.func @main
// PART-DAG: autopar.weight "w1.adam_m" {{.*}} : tensor<16x16xf32>
// PART-DAG: autopar.weight "w2.adam_v" {{.*}} : tensor<4x16xf32>
// PART-NOT: shard.all_gather
// PART: autopar.assign {{.*}} : tensor<1xf32>
// PART-NOT: shard.all_gather
// PART: return

// Data parallel: the weights are whole, and so are their moments.
// DATA-LABEL: func.func @main
// DATA-DAG: autopar.weight "w1.adam_m" {autopar.optimizer_update = "w1", autopar.shardings = [#autopar.sharding<{{\[\[}}], []]>], autopar.zero_init}
// DATA-DAG: autopar.weight "w2.adam_v" {autopar.optimizer_update = "w2", autopar.shardings = [#autopar.sharding<{{\[\[}}], []]>], autopar.zero_init}
func.func @main(%x: tensor<8x16xf32> loc("x")) -> tensor<f32> {
  %w1 = autopar.weight "w1" : tensor<32x16xf32>
  %b1 = autopar.weight "b1" : tensor<32xf32>
  %w2 = autopar.weight "w2" : tensor<4x32xf32>
  %h = autopar.gemm %x, %w1, %b1 {trans_b = true} : (tensor<8x16xf32>, tensor<32x16xf32>, tensor<32xf32>) -> tensor<8x32xf32> loc(fused<"gemm1">["h"])
  %a = autopar.relu %h : (tensor<8x32xf32>) -> tensor<8x32xf32> loc(fused<"relu">["a"])
  %y = autopar.gemm %a, %w2 {trans_b = true} : (tensor<8x32xf32>, tensor<4x32xf32>) -> tensor<8x4xf32> loc(fused<"gemm2">["y"])
  %l = autopar.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
