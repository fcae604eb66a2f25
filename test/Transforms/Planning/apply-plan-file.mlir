// RUN: autopar-opt %s --autopar-apply-plan="grid=2 plan=%S/Inputs/pinned-plan.json" | FileCheck %s

// A plan file pins the input split along K and a pending sum after the
// matmul; everything else propagates.
// CHECK-LABEL: func.func @main
// CHECK-SAME: autopar.sharding = #autopar.sharding<{{\[\[}}], [0{{\]\]}}>
func.func @main(%x: tensor<8x16xf32> loc("x")) -> tensor<8x4xf32> {
  // CHECK: autopar.weight "w" {autopar.shardings = [#autopar.sharding<{{\[\[}}0], [{{\]\]}}>]}
  %w = autopar.weight "w" : tensor<16x4xf32>
  // CHECK: autopar.matmul {{.*}}#autopar.sharding<{{\[\[}}], [{{\]\]}}, partial = [0]>
  %h = autopar.matmul %x, %w : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32> loc(fused<"mm">["h"])
  // CHECK: autopar.relu {{.*}}#autopar.sharding<{{\[\[}}], [{{\]\]}}>
  %y = autopar.relu %h : (tensor<8x4xf32>) -> tensor<8x4xf32> loc(fused<"relu">["y"])
  return %y : tensor<8x4xf32>
}
