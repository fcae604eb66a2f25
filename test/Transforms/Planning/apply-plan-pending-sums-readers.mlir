// RUN: autopar-opt %s --autopar-apply-plan="grid=2 plan=data" | FileCheck %s
// RUN: autopar-opt %s --autopar-apply-plan="grid=2 plan=data" --autopar-verify-sharded --autopar-partition | FileCheck %s --check-prefix=PART

// A pending sum whose result would be read in two layouts (whole by the add,
// split by the mul) is reduced before the negation, as planned: one
// all-reduce, then a local slice (forwarded, it would take an all-reduce and
// a reduce-scatter).
// CHECK-LABEL: func.func @main
// CHECK: autopar.neg %{{.*}} {autopar.shardings = [#autopar.sharding<{{\[\[}}]]>]}
// PART-LABEL: func.func @main
// PART: %[[R:.*]] = shard.all_reduce %{{.*}} on @grid grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
// PART: %[[N:.*]] = autopar.neg %[[R]]
// PART: shard.all_slice %[[N]] on @grid grid_axes = [0] slice_axis = 0 : tensor<4xf32> -> tensor<2xf32>
// PART-NOT: shard.reduce_scatter
// PART-NOT: shard.all_reduce
func.func @main(%x: tensor<8x4xf32>, %v: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %w = autopar.weight "w" : tensor<4xf32>
  %p = autopar.reduce_sum %x {axes = array<i64: 0>, keepdims = false} : (tensor<8x4xf32>) -> tensor<4xf32>
  %t = autopar.neg %p : (tensor<4xf32>) -> tensor<4xf32>
  %a = autopar.add %t, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %m = autopar.mul %t, %v : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %a, %m : tensor<4xf32>, tensor<4xf32>
}
