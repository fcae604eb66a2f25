// RUN: autopar-opt %s -split-input-file --autopar-apply-plan="grid=4 plan=tensor" | FileCheck %s

// The tensor plan column-splits a weight-bearing matmul only where its output
// columns divide over the tensor axis; otherwise the op stays whole (found by
// the randomized differential test: a [8,1] weight made `--plan tensor` fail
// with "dimension 1 (size 1) does not divide").
// CHECK-LABEL: func.func @main
// CHECK: autopar.weight "w" {autopar.shardings = [#autopar.sharding<{{\[\[}}], [{{\]\]}}>]}
// CHECK: autopar.matmul {{.*}}#autopar.sharding<{{\[\[}}], [{{\]\]}}>
func.func @main(%x: tensor<8x8xf32> loc("x")) -> tensor<8x1xf32> {
  %w = autopar.weight "w" : tensor<8x1xf32>
  %y = autopar.matmul %x, %w : (tensor<8x8xf32>, tensor<8x1xf32>) -> tensor<8x1xf32> loc(fused<"mm">["y"])
  return %y : tensor<8x1xf32>
}

// -----

// CHECK-LABEL: func.func @main
// CHECK: autopar.weight "w" {autopar.shardings = [#autopar.sharding<{{\[\[}}], [0{{\]\]}}>]}
// CHECK: autopar.matmul {{.*}}#autopar.sharding<{{\[\[}}], [0{{\]\]}}>
func.func @main(%x: tensor<8x8xf32> loc("x")) -> tensor<8x4xf32> {
  %w = autopar.weight "w" : tensor<8x4xf32>
  %y = autopar.matmul %x, %w : (tensor<8x8xf32>, tensor<8x4xf32>) -> tensor<8x4xf32> loc(fused<"mm">["y"])
  return %y : tensor<8x4xf32>
}
