// RUN: autopar-opt %s -split-input-file --autopar-apply-plan="grid=4 plan=data" | FileCheck %s --check-prefix=DATA
// RUN: autopar-opt %s -split-input-file --autopar-apply-plan="grid=4 plan=tensor" | FileCheck %s --check-prefix=TENSOR
// RUN: autopar-opt %s -split-input-file --autopar-apply-plan="grid=2x2 plan=tensor" | FileCheck %s --check-prefix=TENSOR2D
// RUN: autopar-opt %s -split-input-file --autopar-apply-plan="grid=2x2 plan=data" | FileCheck %s --check-prefix=DATA2D
// RUN: autopar-opt %s -split-input-file --autopar-apply-plan="grid=4 plan=replicated" | FileCheck %s --check-prefix=REPL

// A two-layer MLP as PyTorch exports it (Gemm with transB).
func.func @main(%x: tensor<8x16xf32> loc("x")) -> tensor<8x4xf32> {
  %w1 = autopar.weight "w1" : tensor<32x16xf32>
  %b1 = autopar.weight "b1" : tensor<32xf32>
  %w2 = autopar.weight "w2" : tensor<4x32xf32>
  %b2 = autopar.weight "b2" : tensor<4xf32>
  %h = autopar.gemm %x, %w1, %b1 {trans_b = true} : (tensor<8x16xf32>, tensor<32x16xf32>, tensor<32xf32>) -> tensor<8x32xf32> loc(fused<"gemm1">["h"])
  %a = autopar.relu %h : (tensor<8x32xf32>) -> tensor<8x32xf32> loc(fused<"relu">["a"])
  %y = autopar.gemm %a, %w2, %b2 {trans_b = true} : (tensor<8x32xf32>, tensor<4x32xf32>, tensor<4xf32>) -> tensor<8x4xf32> loc(fused<"gemm2">["y"])
  return %y : tensor<8x4xf32>
}

// DATA: shard.grid @grid(shape = 4)
// DATA-LABEL: func.func @main
// DATA-SAME: autopar.sharding = #autopar.sharding<{{\[\[}}0], [{{\]\]}}>
// DATA-SAME: -> (tensor<8x4xf32> {autopar.sharding = #autopar.sharding<{{\[\[}}0], [{{\]\]}}>})
// DATA: autopar.weight "w1" {autopar.shardings = [#autopar.sharding<{{\[\[}}], [{{\]\]}}>]}
// DATA: autopar.weight "b1" {autopar.shardings = [#autopar.sharding<{{\[\[}}{{\]\]}}>]}
// DATA: autopar.gemm {{.*}}#autopar.sharding<{{\[\[}}0], [{{\]\]}}>
// DATA: autopar.relu {{.*}}#autopar.sharding<{{\[\[}}0], [{{\]\]}}>
// DATA: autopar.gemm {{.*}}#autopar.sharding<{{\[\[}}0], [{{\]\]}}>

// Megatron: column split, then row split with a pending sum.
// TENSOR-LABEL: func.func @main
// TENSOR-SAME: autopar.sharding = #autopar.sharding<{{\[\[}}], [{{\]\]}}>
// TENSOR: autopar.weight "w1" {autopar.shardings = [#autopar.sharding<{{\[\[}}0], [{{\]\]}}>]}
// TENSOR: autopar.weight "b1" {autopar.shardings = [#autopar.sharding<{{\[\[}}0{{\]\]}}>]}
// TENSOR: autopar.weight "w2" {autopar.shardings = [#autopar.sharding<{{\[\[}}], [0{{\]\]}}>]}
// TENSOR: autopar.weight "b2" {autopar.shardings = [#autopar.sharding<{{\[\[}}{{\]\]}}>]}
// TENSOR: autopar.gemm {{.*}}#autopar.sharding<{{\[\[}}], [0{{\]\]}}>
// TENSOR: autopar.relu {{.*}}#autopar.sharding<{{\[\[}}], [0{{\]\]}}>
// TENSOR: autopar.gemm {{.*}}#autopar.sharding<{{\[\[}}], [{{\]\]}}, partial = [0]>

// On a 2-d grid: data over axis 0, tensor over axis 1.
// TENSOR2D-LABEL: func.func @main
// TENSOR2D-SAME: autopar.sharding = #autopar.sharding<{{\[\[}}0], [{{\]\]}}>
// TENSOR2D: autopar.weight "w1" {autopar.shardings = [#autopar.sharding<{{\[\[}}1], [{{\]\]}}>]}
// TENSOR2D: autopar.gemm {{.*}}#autopar.sharding<{{\[\[}}0], [1{{\]\]}}>
// TENSOR2D: autopar.gemm {{.*}}#autopar.sharding<{{\[\[}}0], [{{\]\]}}, partial = [1]>

// DATA2D-LABEL: func.func @main
// DATA2D-SAME: autopar.sharding = #autopar.sharding<{{\[\[}}0, 1], [{{\]\]}}>
// DATA2D: autopar.gemm {{.*}}#autopar.sharding<{{\[\[}}0, 1], [{{\]\]}}>

// REPL-LABEL: func.func @main
// REPL-SAME: autopar.sharding = #autopar.sharding<{{\[\[}}], [{{\]\]}}>
// REPL-NOT: #autopar.sharding<{{\[\[}}0]
// REPL-NOT: partial
