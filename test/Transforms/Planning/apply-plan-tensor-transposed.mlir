// RUN: autopar-opt %s -split-input-file --autopar-apply-plan="grid=4 plan=tensor" | FileCheck %s
// RUN: autopar-opt %s -split-input-file --autopar-apply-plan="grid=2x2 plan=tensor" | FileCheck %s --check-prefix=GRID2D

// A two-layer MLP as PyTorch exports it for training: each Linear weight is
// transposed by its own Transpose before its MatMul. The Megatron splits see
// through the transposes: the weights are stored split (w1 by rows, w2 by
// columns), so the transposes and the products need no communication.
// CHECK-LABEL: func.func @main
// CHECK: autopar.weight "w1" {autopar.shardings = [#autopar.sharding<{{\[\[}}0], [{{\]\]}}>]}
// CHECK: autopar.weight "w2" {autopar.shardings = [#autopar.sharding<{{\[\[}}], [0{{\]\]}}>]}
// CHECK: autopar.transpose {{.*}}#autopar.sharding<{{\[\[}}], [0{{\]\]}}>
// CHECK: autopar.matmul {{.*}}#autopar.sharding<{{\[\[}}], [0{{\]\]}}>
// CHECK: autopar.relu {{.*}}#autopar.sharding<{{\[\[}}], [0{{\]\]}}>
// CHECK: autopar.transpose {{.*}}#autopar.sharding<{{\[\[}}0], [{{\]\]}}>
// CHECK: autopar.matmul {{.*}}#autopar.sharding<{{\[\[}}], [{{\]\]}}, partial = [0]>

// GRID2D-LABEL: func.func @main
// GRID2D: autopar.weight "w1" {autopar.shardings = [#autopar.sharding<{{\[\[}}1], [{{\]\]}}>]}
// GRID2D: autopar.weight "w2" {autopar.shardings = [#autopar.sharding<{{\[\[}}], [1{{\]\]}}>]}
// GRID2D: autopar.matmul {{.*}}#autopar.sharding<{{\[\[}}0], [1{{\]\]}}>
// GRID2D: autopar.matmul {{.*}}#autopar.sharding<{{\[\[}}0], [{{\]\]}}, partial = [1]>
func.func @main(%x: tensor<8x16xf32> loc("x")) -> tensor<8x4xf32> {
  %w1 = autopar.weight "w1" : tensor<32x16xf32>
  %w2 = autopar.weight "w2" : tensor<4x32xf32>
  %t1 = autopar.transpose %w1 {perm = array<i64: 1, 0>} : (tensor<32x16xf32>) -> tensor<16x32xf32> loc("t1")
  %h = autopar.matmul %x, %t1 : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32> loc("h")
  %a = autopar.relu %h : (tensor<8x32xf32>) -> tensor<8x32xf32> loc("a")
  %t2 = autopar.transpose %w2 {perm = array<i64: 1, 0>} : (tensor<4x32xf32>) -> tensor<32x4xf32> loc("t2")
  %y = autopar.matmul %a, %t2 : (tensor<8x32xf32>, tensor<32x4xf32>) -> tensor<8x4xf32> loc("y")
  return %y : tensor<8x4xf32>
}

// -----

// A tied weight: its first consumer (the embedding's gather) stores it whole,
// so the head's transpose follows the stored layout and the head's MatMul
// splits its columns out of the replicated transpose.
// CHECK-LABEL: func.func @main
// CHECK: autopar.weight "emb" {autopar.shardings = [#autopar.sharding<{{\[\[}}], [{{\]\]}}>]}
// CHECK: autopar.transpose {{.*}}#autopar.sharding<{{\[\[}}], [{{\]\]}}>
// CHECK: autopar.matmul {{.*}}#autopar.sharding<{{\[\[}}], [], [0{{\]\]}}>
func.func @main(%ids: tensor<2x4xi64> loc("ids")) -> tensor<2x4x32xf32> {
  %emb = autopar.weight "emb" : tensor<32x8xf32>
  %x = autopar.gather %emb, %ids {axis = 0 : i64} : (tensor<32x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32> loc("x")
  %t = autopar.transpose %emb {perm = array<i64: 1, 0>} : (tensor<32x8xf32>) -> tensor<8x32xf32> loc("t")
  %y = autopar.matmul %x, %t : (tensor<2x4x8xf32>, tensor<8x32xf32>) -> tensor<2x4x32xf32> loc("y")
  return %y : tensor<2x4x32xf32>
}

// -----

// A transposed weight read first as the left operand is not a Megatron
// weight: the transpose is decided where it stands (replicated), as before.
// CHECK-LABEL: func.func @main
// CHECK: autopar.weight "w" {autopar.shardings = [#autopar.sharding<{{\[\[}}], [{{\]\]}}>]}
// CHECK: autopar.transpose {{.*}}#autopar.sharding<{{\[\[}}], [{{\]\]}}>
func.func @main(%x: tensor<16x8xf32> loc("x")) -> tensor<4x8xf32> {
  %w = autopar.weight "w" : tensor<16x4xf32>
  %t = autopar.transpose %w {perm = array<i64: 1, 0>} : (tensor<16x4xf32>) -> tensor<4x16xf32> loc("t")
  %y = autopar.matmul %t, %x : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32> loc("y")
  return %y : tensor<4x8xf32>
}

// -----

// An optimizer update takes the layout of its weight: Adam's first moment is
// decayed before the forward pass, where propagation alone has nothing split
// to follow; the moment, its decay and its new value are split as `w` is
// stored, and the gradient is resharded into that layout.
// CHECK-LABEL: func.func @main
// CHECK: autopar.weight "w.adam_m" {autopar.optimizer_update = "w", autopar.shardings = [#autopar.sharding<{{\[\[}}0], [{{\]\]}}>]}
// CHECK: autopar.mul {{.*}}autopar.optimizer_update = "w", autopar.shardings = [#autopar.sharding<{{\[\[}}0], [{{\]\]}}>]
// CHECK: autopar.weight "w" {autopar.shardings = [#autopar.sharding<{{\[\[}}0], [{{\]\]}}>]}
// CHECK: autopar.add {{.*}}autopar.optimizer_update = "w", autopar.shardings = [#autopar.sharding<{{\[\[}}0], [{{\]\]}}>]
// CHECK: autopar.assign {{.*}}autopar.optimizer_update = "w", autopar.shardings = [#autopar.sharding<{{\[\[}}0], [{{\]\]}}>]
func.func @main(%x: tensor<8x16xf32> loc("x")) -> tensor<8x32xf32> {
  %m = autopar.weight "w.adam_m" {autopar.optimizer_update = "w"} : tensor<32x16xf32>
  %beta = autopar.constant dense<0.9> : tensor<f32>
  %md = autopar.mul %m, %beta {autopar.optimizer_update = "w"} : (tensor<32x16xf32>, tensor<f32>) -> tensor<32x16xf32> loc("md")
  %w = autopar.weight "w" : tensor<32x16xf32>
  %t = autopar.transpose %w {perm = array<i64: 1, 0>} : (tensor<32x16xf32>) -> tensor<16x32xf32> loc("t")
  %h = autopar.matmul %x, %t : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32> loc("h")
  %g = autopar.relu %w : (tensor<32x16xf32>) -> tensor<32x16xf32> loc("g")
  %mn = autopar.add %md, %g {autopar.optimizer_update = "w"} : (tensor<32x16xf32>, tensor<32x16xf32>) -> tensor<32x16xf32> loc("mn")
  %a = autopar.assign %m, %mn {autopar.optimizer_update = "w"} : tensor<32x16xf32>
  return %h : tensor<8x32xf32>
}
