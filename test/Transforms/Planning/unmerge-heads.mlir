// RUN: autopar-opt %s -split-input-file --autopar-unmerge-heads | FileCheck %s

// nn.MultiheadAttention's attention core as PyTorch 1.13 exports it (L = 5
// tokens, B = 4, H = 2 heads of D = 3): q, k and v are reshaped from
// [L, B, H * D] to [L, B * H, D]. The batch and the heads stay two
// dimensions up to the reshape that merges the heads back.
// CHECK-LABEL: func.func @main
// CHECK: %[[Q:.*]] = autopar.reshape %arg0 : (tensor<5x4x6xf32>) -> tensor<5x4x2x3xf32>
// CHECK: %[[QT:.*]] = autopar.transpose %[[Q]] {perm = array<i64: 1, 2, 0, 3>} : (tensor<5x4x2x3xf32>) -> tensor<4x2x5x3xf32>
// CHECK: %[[QS:.*]] = autopar.div %[[QT]], %arg3 : (tensor<4x2x5x3xf32>, tensor<f32>) -> tensor<4x2x5x3xf32>
// CHECK: %[[K:.*]] = autopar.reshape %arg1 : (tensor<5x4x6xf32>) -> tensor<5x4x2x3xf32>
// CHECK: %[[KT:.*]] = autopar.transpose %[[K]] {perm = array<i64: 1, 2, 3, 0>} : (tensor<5x4x2x3xf32>) -> tensor<4x2x3x5xf32>
// CHECK: %[[A:.*]] = autopar.matmul %[[QS]], %[[KT]] : (tensor<4x2x5x3xf32>, tensor<4x2x3x5xf32>) -> tensor<4x2x5x5xf32>
// CHECK: %[[W:.*]] = autopar.softmax %[[A]] {axis = 3 : i64} : (tensor<4x2x5x5xf32>) -> tensor<4x2x5x5xf32>
// CHECK: %[[V:.*]] = autopar.reshape %arg2 : (tensor<5x4x6xf32>) -> tensor<5x4x2x3xf32>
// CHECK: %[[VT:.*]] = autopar.transpose %[[V]] {perm = array<i64: 1, 2, 0, 3>} : (tensor<5x4x2x3xf32>) -> tensor<4x2x5x3xf32>
// CHECK: %[[O:.*]] = autopar.matmul %[[W]], %[[VT]] : (tensor<4x2x5x5xf32>, tensor<4x2x5x3xf32>) -> tensor<4x2x5x3xf32>
// CHECK: %[[OT:.*]] = autopar.transpose %[[O]] {perm = array<i64: 2, 0, 1, 3>} : (tensor<4x2x5x3xf32>) -> tensor<5x4x2x3xf32>
// CHECK: %[[Y:.*]] = autopar.reshape %[[OT]] : (tensor<5x4x2x3xf32>) -> tensor<20x6xf32>
// CHECK: return %[[Y]]
func.func @main(%q: tensor<5x4x6xf32>, %k: tensor<5x4x6xf32>, %v: tensor<5x4x6xf32>, %scale: tensor<f32>) -> tensor<20x6xf32> {
  %qr = autopar.reshape %q : (tensor<5x4x6xf32>) -> tensor<5x8x3xf32>
  %qt = autopar.transpose %qr {perm = array<i64: 1, 0, 2>} : (tensor<5x8x3xf32>) -> tensor<8x5x3xf32>
  %qs = autopar.div %qt, %scale : (tensor<8x5x3xf32>, tensor<f32>) -> tensor<8x5x3xf32>
  %kr = autopar.reshape %k : (tensor<5x4x6xf32>) -> tensor<5x8x3xf32>
  %kt = autopar.transpose %kr {perm = array<i64: 1, 2, 0>} : (tensor<5x8x3xf32>) -> tensor<8x3x5xf32>
  %a = autopar.matmul %qs, %kt : (tensor<8x5x3xf32>, tensor<8x3x5xf32>) -> tensor<8x5x5xf32>
  %w = autopar.softmax %a {axis = 2 : i64} : (tensor<8x5x5xf32>) -> tensor<8x5x5xf32>
  %vr = autopar.reshape %v : (tensor<5x4x6xf32>) -> tensor<5x8x3xf32>
  %vt = autopar.transpose %vr {perm = array<i64: 1, 0, 2>} : (tensor<5x8x3xf32>) -> tensor<8x5x3xf32>
  %o = autopar.matmul %w, %vt : (tensor<8x5x5xf32>, tensor<8x5x3xf32>) -> tensor<8x5x3xf32>
  %ot = autopar.transpose %o {perm = array<i64: 1, 0, 2>} : (tensor<8x5x3xf32>) -> tensor<5x8x3xf32>
  %y = autopar.reshape %ot : (tensor<5x8x3xf32>) -> tensor<20x6xf32>
  return %y : tensor<20x6xf32>
}

// -----

// An operand from outside the region that reaches the merged dimension gets
// a reshape into the expanded form: an additive mask of [B * H, 1, D]
// becomes [B, H, 1, D], an operand of extent 1 there gets a unit dimension
// more; one that does not reach it stays as it is.
// CHECK-LABEL: func.func @main
// CHECK: %[[S:.*]] = autopar.reshape %arg0 : (tensor<5x2x6xf32>) -> tensor<5x2x2x3xf32>
// CHECK: %[[T:.*]] = autopar.transpose %[[S]] {perm = array<i64: 1, 2, 0, 3>} : (tensor<5x2x2x3xf32>) -> tensor<2x2x5x3xf32>
// CHECK: %[[M:.*]] = autopar.reshape %arg1 : (tensor<4x1x3xf32>) -> tensor<2x2x1x3xf32>
// CHECK: %[[A:.*]] = autopar.add %[[T]], %[[M]] : (tensor<2x2x5x3xf32>, tensor<2x2x1x3xf32>) -> tensor<2x2x5x3xf32>
// CHECK: %[[U:.*]] = autopar.reshape %arg2 : (tensor<1x5x3xf32>) -> tensor<1x1x5x3xf32>
// CHECK: %[[B:.*]] = autopar.mul %[[U]], %[[A]] : (tensor<1x1x5x3xf32>, tensor<2x2x5x3xf32>) -> tensor<2x2x5x3xf32>
// CHECK: %[[C:.*]] = autopar.sub %[[B]], %arg3 : (tensor<2x2x5x3xf32>, tensor<3xf32>) -> tensor<2x2x5x3xf32>
// CHECK: %[[Y:.*]] = autopar.reshape %[[C]] : (tensor<2x2x5x3xf32>) -> tensor<4x15xf32>
// CHECK: return %[[Y]]
func.func @main(%x: tensor<5x2x6xf32>, %mask: tensor<4x1x3xf32>, %unit: tensor<1x5x3xf32>, %bias: tensor<3xf32>) -> tensor<4x15xf32> {
  %s = autopar.reshape %x : (tensor<5x2x6xf32>) -> tensor<5x4x3xf32>
  %t = autopar.transpose %s {perm = array<i64: 1, 0, 2>} : (tensor<5x4x3xf32>) -> tensor<4x5x3xf32>
  %a = autopar.add %t, %mask : (tensor<4x5x3xf32>, tensor<4x1x3xf32>) -> tensor<4x5x3xf32>
  %b = autopar.mul %unit, %a : (tensor<1x5x3xf32>, tensor<4x5x3xf32>) -> tensor<4x5x3xf32>
  %c = autopar.sub %b, %bias : (tensor<4x5x3xf32>, tensor<3xf32>) -> tensor<4x5x3xf32>
  %y = autopar.reshape %c : (tensor<4x5x3xf32>) -> tensor<4x15xf32>
  return %y : tensor<4x15xf32>
}

// -----

// A softmax along the merged dimension reads across heads and batches: the
// region is left merged.
// CHECK-LABEL: func.func @main
// CHECK: autopar.reshape %arg0 : (tensor<5x2x6xf32>) -> tensor<5x4x3xf32>
// CHECK: autopar.softmax {{.*}} : (tensor<5x4x3xf32>) -> tensor<5x4x3xf32>
func.func @main(%x: tensor<5x2x6xf32>) -> tensor<10x6xf32> {
  %s = autopar.reshape %x : (tensor<5x2x6xf32>) -> tensor<5x4x3xf32>
  %w = autopar.softmax %s {axis = 1 : i64} : (tensor<5x4x3xf32>) -> tensor<5x4x3xf32>
  %y = autopar.reshape %w : (tensor<5x4x3xf32>) -> tensor<10x6xf32>
  return %y : tensor<10x6xf32>
}

// -----

// q and k meet in a matmul whose result is returned merged: their regions
// (joined by the matmul) stay as they are; v's own region, which ends in a
// reshape, is kept apart.
// CHECK-LABEL: func.func @main
// CHECK: autopar.reshape %arg0 : (tensor<5x2x6xf32>) -> tensor<5x4x3xf32>
// CHECK: autopar.reshape %arg1 : (tensor<5x2x6xf32>) -> tensor<5x4x3xf32>
// CHECK: autopar.matmul {{.*}} -> tensor<4x5x5xf32>
// CHECK: %[[V:.*]] = autopar.reshape %arg2 : (tensor<5x2x6xf32>) -> tensor<5x2x2x3xf32>
// CHECK: autopar.neg %[[V]] : (tensor<5x2x2x3xf32>) -> tensor<5x2x2x3xf32>
func.func @main(%q: tensor<5x2x6xf32>, %k: tensor<5x2x6xf32>, %v: tensor<5x2x6xf32>) -> (tensor<4x5x5xf32>, tensor<10x6xf32>) {
  %qr = autopar.reshape %q : (tensor<5x2x6xf32>) -> tensor<5x4x3xf32>
  %qt = autopar.transpose %qr {perm = array<i64: 1, 0, 2>} : (tensor<5x4x3xf32>) -> tensor<4x5x3xf32>
  %kr = autopar.reshape %k : (tensor<5x2x6xf32>) -> tensor<5x4x3xf32>
  %kt = autopar.transpose %kr {perm = array<i64: 1, 2, 0>} : (tensor<5x4x3xf32>) -> tensor<4x3x5xf32>
  %a = autopar.matmul %qt, %kt : (tensor<4x5x3xf32>, tensor<4x3x5xf32>) -> tensor<4x5x5xf32>
  %vr = autopar.reshape %v : (tensor<5x2x6xf32>) -> tensor<5x4x3xf32>
  %vn = autopar.neg %vr : (tensor<5x4x3xf32>) -> tensor<5x4x3xf32>
  %y = autopar.reshape %vn : (tensor<5x4x3xf32>) -> tensor<10x6xf32>
  return %a, %y : tensor<4x5x5xf32>, tensor<10x6xf32>
}

// -----

// Reshapes that merge no batch with heads: [B, L, H * D] -> [B, L, H, D]
// (GPT-2's export) and a merge of unit dimensions are left alone.
// CHECK-LABEL: func.func @main
// CHECK: autopar.reshape %arg0 : (tensor<2x5x6xf32>) -> tensor<2x5x2x3xf32>
// CHECK: autopar.reshape %arg1 : (tensor<5x1x6xf32>) -> tensor<5x2x3xf32>
func.func @main(%x: tensor<2x5x6xf32>, %y: tensor<5x1x6xf32>) -> (tensor<2x5x2x3xf32>, tensor<5x2x3xf32>) {
  %a = autopar.reshape %x : (tensor<2x5x6xf32>) -> tensor<2x5x2x3xf32>
  %b = autopar.reshape %y : (tensor<5x1x6xf32>) -> tensor<5x2x3xf32>
  return %a, %b : tensor<2x5x2x3xf32>, tensor<5x2x3xf32>
}
