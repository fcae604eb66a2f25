// RUN: autopar-opt %s --split-input-file --autopar-differentiate="optimizer=sgd lr=0.5" | FileCheck %s
// RUN: autopar-opt %s --split-input-file --autopar-differentiate="optimizer=adam lr=0.001 weight-decay=0.1" | FileCheck %s --check-prefix=ADAM

// A Gemm layer (trans_b, as PyTorch exports Linear): dX is not built (the
// input is no parameter); dW = dY^T X, db = column sums of dY.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<4x3xf32>) -> tensor<f32>
// CHECK-DAG: %[[W:.*]] = autopar.weight "w" : tensor<2x3xf32>
// CHECK-DAG: %[[B:.*]] = autopar.weight "b" : tensor<2xf32>
// CHECK: %[[Y:.*]] = autopar.gemm %[[X]], %[[W]], %[[B]] {trans_b = true}
// CHECK: %[[LOSS:.*]] = autopar.reduce_sum %[[Y]]
// CHECK: %[[ONE:.*]] = autopar.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[G0:.*]] = autopar.reshape %[[ONE]] : (tensor<f32>) -> tensor<1x1xf32>
// CHECK: %[[DY:.*]] = autopar.expand %[[G0]] : (tensor<1x1xf32>) -> tensor<4x2xf32>
// CHECK: %[[DW:.*]] = autopar.gemm %[[DY]], %[[X]] {trans_a = true} : (tensor<4x2xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
// CHECK: %[[DB0:.*]] = autopar.reduce_sum %[[DY]] {axes = array<i64: 0>} : (tensor<4x2xf32>) -> tensor<1x2xf32>
// CHECK: %[[DB:.*]] = autopar.reshape %[[DB0]] : (tensor<1x2xf32>) -> tensor<2xf32>
// CHECK: %[[LR:.*]] = autopar.constant {autopar.optimizer_update = "w"} dense<5.000000e-01> : tensor<f32>
// CHECK: %[[S:.*]] = autopar.mul %[[DW]], %[[LR]]
// CHECK: %[[NW:.*]] = autopar.sub %[[W]], %[[S]]
// CHECK: autopar.assign %[[W]], %[[NW]] {autopar.optimizer_update = "w"} : tensor<2x3xf32>
// CHECK: autopar.assign %[[B]], %{{.*}} {autopar.optimizer_update = "b"} : tensor<2xf32>
// CHECK: return %[[LOSS]] : tensor<f32>
// CHECK-NOT: autopar.gemm

// ADAM-LABEL: func.func @main
// ADAM-DAG: %[[STEP:.*]] = autopar.weight "adam.step" {autopar.zero_init} : tensor<1xf32>
// ADAM-DAG: %[[W:.*]] = autopar.weight "w" : tensor<2x3xf32>
// ADAM-DAG: %[[M:.*]] = autopar.weight "w.adam_m" {autopar.optimizer_update = "w", autopar.zero_init} : tensor<2x3xf32>
// ADAM-DAG: %[[V:.*]] = autopar.weight "w.adam_v" {autopar.optimizer_update = "w", autopar.zero_init} : tensor<2x3xf32>
// ADAM: %[[T:.*]] = autopar.add %[[STEP]], %{{.*}} : (tensor<1xf32>, tensor<f32>) -> tensor<1xf32>
// ADAM: autopar.assign %[[STEP]], %[[T]] : tensor<1xf32>
// ADAM: autopar.pow %{{.*}}, %[[T]] : (tensor<f32>, tensor<1xf32>) -> tensor<1xf32>
// ADAM: autopar.assign %[[M]], %{{.*}} {autopar.optimizer_update = "w"} : tensor<2x3xf32>
// ADAM: autopar.assign %[[V]], %{{.*}} {autopar.optimizer_update = "w"} : tensor<2x3xf32>
// ADAM: %[[DECAYED:.*]] = autopar.mul %[[W]], %{{.*}} {autopar.optimizer_update = "w"} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// ADAM: %[[NW:.*]] = autopar.sub %[[DECAYED]], %{{.*}}
// ADAM: autopar.assign %[[W]], %[[NW]] {autopar.optimizer_update = "w"} : tensor<2x3xf32>
func.func @main(%x: tensor<4x3xf32>) -> tensor<f32> {
  %w = autopar.weight "w" : tensor<2x3xf32>
  %b = autopar.weight "b" : tensor<2xf32>
  %y = autopar.gemm %x, %w, %b {trans_b = true} : (tensor<4x3xf32>, tensor<2x3xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  %l = autopar.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A weight used twice: its two gradients are summed. The broadcast operand
// of the product gets its gradient summed back to its shape.
// CHECK-LABEL: func.func @main
// CHECK: %[[W:.*]] = autopar.weight "scale" : tensor<3xf32>
// CHECK: %[[A:.*]] = autopar.mul %{{.*}}, %[[W]] : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
// CHECK: %[[B:.*]] = autopar.mul %[[A]], %[[W]] : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
// CHECK: autopar.reduce_sum %{{.*}} {axes = array<i64: 0>} : (tensor<4x3xf32>) -> tensor<1x3xf32>
// CHECK: autopar.reduce_sum %{{.*}} {axes = array<i64: 0>} : (tensor<4x3xf32>) -> tensor<1x3xf32>
// CHECK: %[[SUM:.*]] = autopar.add %{{.*}}, %{{.*}} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
// CHECK: autopar.mul %[[SUM]], %{{.*}} : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
// CHECK: autopar.assign %[[W]]
func.func @main(%x: tensor<4x3xf32>) -> tensor<f32> {
  %w = autopar.weight "scale" : tensor<3xf32>
  %a = autopar.mul %x, %w : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %b = autopar.mul %a, %w : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %l = autopar.reduce_sum %b {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// An embedding: dTable = one-hot(ids)^T dY, a contraction over the positions
// (negative ids count from the end).
// CHECK-LABEL: func.func @main
// CHECK: %[[T:.*]] = autopar.weight "table" : tensor<10x4xf32>
// CHECK: %[[COL:.*]] = autopar.reshape %{{.*}} : (tensor<2x3xi64>) -> tensor<6x1xi64>
// CHECK: autopar.less %[[COL]]
// CHECK: %[[IDS:.*]] = autopar.where
// CHECK: %[[HIT:.*]] = autopar.equal %[[IDS]], %{{.*}} : (tensor<6x1xi64>, tensor<10xi64>) -> tensor<6x10xi1>
// CHECK: %[[HOT:.*]] = autopar.cast %[[HIT]] : (tensor<6x10xi1>) -> tensor<6x10xf32>
// CHECK: %[[G:.*]] = autopar.reshape %{{.*}} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
// CHECK: autopar.gemm %[[HOT]], %[[G]] {trans_a = true} : (tensor<6x10xf32>, tensor<6x4xf32>) -> tensor<10x4xf32>
// CHECK: autopar.assign %[[T]]
func.func @main(%ids: tensor<2x3xi64>) -> tensor<f32> {
  %t = autopar.weight "table" : tensor<10x4xf32>
  %e = autopar.gather %t, %ids {axis = 0 : i64} : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  %s = autopar.tanh %e : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %l = autopar.reduce_sum %s {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// BatchNormalization with its statistics as operands: xhat = (X - mean)
// rstd; dscale = sum dY xhat, dbias = sum dY, dmean = -sum dY scale rstd,
// dvar = -1/2 rstd^3 sum dY scale (X - mean) (per channel: sums over all
// but dimension 1). In a model the importer computes mean and var from X
// in training mode, so these flow into X; here they are weights.
// CHECK-LABEL: func.func @main
// CHECK: %[[S:.*]] = autopar.weight "bn.weight" : tensor<3xf32>
// CHECK: %[[M:.*]] = autopar.weight "bn.running_mean" : tensor<3xf32>
// CHECK: %[[V:.*]] = autopar.weight "bn.running_var" : tensor<3xf32>
// CHECK: %[[DY:.*]] = autopar.expand
// CHECK: %[[VE:.*]] = autopar.add %[[V]], %{{.*}} : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
// CHECK: %[[SQ:.*]] = autopar.sqrt %[[VE]]
// CHECK: %[[RSTD:.*]] = autopar.reciprocal %[[SQ]]
// CHECK: %[[SB:.*]] = autopar.reshape %[[S]] : (tensor<3xf32>) -> tensor<1x3x1xf32>
// CHECK: %[[MB:.*]] = autopar.reshape %[[M]] : (tensor<3xf32>) -> tensor<1x3x1xf32>
// CHECK: %[[C:.*]] = autopar.sub %{{.*}}, %[[MB]] : (tensor<2x3x4xf32>, tensor<1x3x1xf32>) -> tensor<2x3x4xf32>
// CHECK: %[[GS:.*]] = autopar.mul %[[DY]], %[[SB]]
// CHECK: %[[DIRECT:.*]] = autopar.mul %[[GS]], %{{.*}} : (tensor<2x3x4xf32>, tensor<1x3x1xf32>) -> tensor<2x3x4xf32>
// CHECK: %[[XHAT:.*]] = autopar.mul %[[C]], %{{.*}} : (tensor<2x3x4xf32>, tensor<1x3x1xf32>) -> tensor<2x3x4xf32>
// CHECK: %[[GX:.*]] = autopar.mul %[[DY]], %[[XHAT]] : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK: autopar.reduce_sum %[[GX]] {axes = array<i64: 0, 2>} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
// CHECK: autopar.reduce_sum %[[DY]] {axes = array<i64: 0, 2>}
// CHECK: %[[DM:.*]] = autopar.reduce_sum %[[DIRECT]] {axes = array<i64: 0, 2>}
// CHECK: autopar.constant dense<-1.000000e+00>
// CHECK: %[[R2:.*]] = autopar.mul %[[RSTD]], %[[RSTD]]
// CHECK: %[[R3:.*]] = autopar.mul %[[RSTD]], %[[R2]]
// CHECK: %[[GC:.*]] = autopar.mul %[[GS]], %[[C]]
// CHECK: %[[DV0:.*]] = autopar.reduce_sum %[[GC]] {axes = array<i64: 0, 2>}
// CHECK: %[[DV1:.*]] = autopar.reshape %[[DV0]]
// CHECK: autopar.mul %[[DV1]], %[[R3]]
// CHECK: autopar.constant dense<-5.000000e-01>
// CHECK: autopar.assign %[[S]]
func.func @main(%x: tensor<2x3x4xf32>) -> tensor<f32> {
  %s = autopar.weight "bn.weight" : tensor<3xf32>
  %b = autopar.weight "bn.bias" : tensor<3xf32>
  %m = autopar.weight "bn.running_mean" : tensor<3xf32>
  %v = autopar.weight "bn.running_var" : tensor<3xf32>
  %y = autopar.batch_norm %x, %s, %b, %m, %v {epsilon = 1.0e-5 : f32} : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
  %l = autopar.reduce_sum %y {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A depthwise convolution (group = 4, as in mobilenet_v2) after an ungrouped
// one: its dX is the transposed convolution in the same 4 groups (the
// weight's channels swapped within each group: here a unit reshape around
// the transpose), and its dW is a grouped convolution of the input with
// each group's channels as batch and (group, image) as channels.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x6x6xf32>)
// CHECK-DAG: %[[W1:.*]] = autopar.weight "w1" : tensor<4x3x1x1xf32>
// CHECK-DAG: %[[W2:.*]] = autopar.weight "w2" : tensor<4x1x3x3xf32>
// CHECK: %[[H:.*]] = autopar.conv %[[X]], %[[W1]]
// CHECK: %[[Y:.*]] = autopar.conv %[[H]], %[[W2]] {dilations = array<i64: 1, 1>, group = 4 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}
// CHECK: %[[WS:.*]] = autopar.reshape %[[W2]] : (tensor<4x1x3x3xf32>) -> tensor<4x1x1x3x3xf32>
// CHECK: %[[WT:.*]] = autopar.transpose %[[WS]] {perm = array<i64: 0, 2, 1, 3, 4>}
// CHECK: %[[WG:.*]] = autopar.reshape %[[WT]] : (tensor<4x1x1x3x3xf32>) -> tensor<4x1x3x3xf32>
// CHECK: %[[WF:.*]] = autopar.slice %[[WG]]
// CHECK: %[[DH:.*]] = autopar.conv %{{.*}}, %[[WF]] {dilations = array<i64: 1, 1>, group = 4 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<2x4x6x6xf32>
// CHECK: %[[HS:.*]] = autopar.reshape %[[H]] : (tensor<2x4x6x6xf32>) -> tensor<2x4x1x6x6xf32>
// CHECK: %[[HT:.*]] = autopar.transpose %[[HS]] {perm = array<i64: 2, 1, 0, 3, 4>}
// CHECK: %[[HB:.*]] = autopar.reshape %[[HT]] : (tensor<1x4x2x6x6xf32>) -> tensor<1x8x6x6xf32>
// CHECK: %[[HP:.*]] = autopar.pad %[[HB]]
// CHECK: %[[DW0:.*]] = autopar.conv %[[HP]], %{{.*}} {dilations = array<i64: 2, 2>, group = 4 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x8x7x7xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x3x3xf32>
// CHECK: autopar.transpose %[[DW0]] {perm = array<i64: 1, 0, 2, 3>} : (tensor<1x4x3x3xf32>) -> tensor<4x1x3x3xf32>
func.func @main(%x: tensor<2x3x6x6xf32>) -> tensor<f32> {
  %w1 = autopar.weight "w1" : tensor<4x3x1x1xf32>
  %w2 = autopar.weight "w2" : tensor<4x1x3x3xf32>
  %h = autopar.conv %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x3x6x6xf32>, tensor<4x3x1x1xf32>) -> tensor<2x4x6x6xf32>
  %y = autopar.conv %h, %w2 {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 4 : i64} : (tensor<2x4x6x6xf32>, tensor<4x1x3x3xf32>) -> tensor<2x4x3x3xf32>
  %l = autopar.reduce_sum %y {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<2x4x3x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A training-mode batch norm as the importer writes it: its mean and
// variance are reductions of X. dX is the closed form rstd (dXhat -
// mean(dXhat) - Xhat mean(dXhat Xhat)), and nothing flows back through the
// statistics' reductions: w's gradient is dX times the input.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X0:.*]]: tensor<2x3x4xf32>)
// CHECK: %[[X:.*]] = autopar.mul %[[X0]], %[[W:.*]] :
// CHECK: %[[VAR:.*]] = autopar.reduce_mean %{{.*}} {axes = array<i64: 0, 2>, keepdims = false}
// CHECK: %[[DY:.*]] = autopar.add
// CHECK: %[[VE:.*]] = autopar.add %[[VAR]], %{{.*}}
// CHECK: %[[RSTD:.*]] = autopar.reciprocal
// CHECK: %[[C:.*]] = autopar.sub %[[X]], %{{.*}} : (tensor<2x3x4xf32>, tensor<1x3x1xf32>)
// CHECK: %[[GS:.*]] = autopar.mul %[[DY]], %{{.*}} : (tensor<2x3x4xf32>, tensor<1x3x1xf32>)
// CHECK: %[[XHAT:.*]] = autopar.mul %[[C]], %{{.*}} : (tensor<2x3x4xf32>, tensor<1x3x1xf32>)
// CHECK: %[[GX:.*]] = autopar.mul %[[GS]], %[[XHAT]]
// CHECK: autopar.reduce_sum %[[GX]] {axes = array<i64: 0, 2>}
// CHECK: autopar.constant dense<1.250000e-01>
// CHECK: %[[PROJ:.*]] = autopar.mul %[[XHAT]], %{{.*}} : (tensor<2x3x4xf32>, tensor<1x3x1xf32>)
// CHECK: autopar.reduce_sum %[[GS]] {axes = array<i64: 0, 2>}
// CHECK: %[[CENT:.*]] = autopar.sub %[[GS]], %{{.*}} : (tensor<2x3x4xf32>, tensor<1x3x1xf32>)
// CHECK: %[[INNER:.*]] = autopar.sub %[[CENT]], %[[PROJ]]
// CHECK: %[[DX:.*]] = autopar.mul %[[INNER]], %{{.*}} : (tensor<2x3x4xf32>, tensor<1x3x1xf32>)
// CHECK-NOT: autopar.reduce_mean
// CHECK: %[[DW:.*]] = autopar.mul %[[DX]], %[[X0]]
// CHECK: autopar.mul %[[DW]], %{{.*}} {autopar.optimizer_update = "w"}
func.func @main(%x0: tensor<2x3x4xf32>) -> tensor<f32> {
  %w = autopar.weight "w" : tensor<2x3x4xf32>
  %x = autopar.mul %x0, %w : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %s = autopar.weight "bn.weight" : tensor<3xf32>
  %b = autopar.weight "bn.bias" : tensor<3xf32>
  %mk = autopar.reduce_mean %x {axes = array<i64: 0, 2>} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  %c = autopar.sub %x, %mk : (tensor<2x3x4xf32>, tensor<1x3x1xf32>) -> tensor<2x3x4xf32>
  %sq = autopar.mul %c, %c : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %v = autopar.reduce_mean %sq {axes = array<i64: 0, 2>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %m = autopar.reshape %mk : (tensor<1x3x1xf32>) -> tensor<3xf32>
  %y = autopar.batch_norm %x, %s, %b, %m, %v {epsilon = 1.0e-5 : f32} : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
  %y2 = autopar.mul %y, %y : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %l = autopar.reduce_sum %y2 {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
