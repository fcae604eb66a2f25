// RUN: autopar-opt %s --autopar-apply-plan="grid=2 plan=data" --autopar-verify-sharded --autopar-partition | FileCheck %s

// The vector-vector MatMul has a scalar result: its sharding rule has a result
// map with no dimensions. (Found by the randomized differential test: the rule
// held a null map and planning crashed in AffineMap::getNumDims.) The data
// plan splits the contraction, so the result is a pending sum, all-reduced
// before it is returned. Each device reads only its half of the input.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[S:.*]]: tensor<4xf32> {autopar.global_type = tensor<8xf32>, autopar.sharding = #autopar.sharding<{{\[\[}}0]]>}) -> tensor<f32>
// CHECK: %[[M:.*]] = autopar.matmul %[[S]], %{{.*}} : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
// CHECK: %[[R:.*]] = shard.all_reduce %[[M]] on @grid grid_axes = [0] : tensor<f32> -> tensor<f32>
// CHECK: return %[[R]]
func.func @main(%x: tensor<8xf32> loc("x")) -> tensor<f32> {
  %w = autopar.weight "w" : tensor<8xf32>
  %y = autopar.matmul %x, %w : (tensor<8xf32>, tensor<8xf32>) -> tensor<f32> loc(fused<"mm">["y"])
  return %y : tensor<f32>
}
