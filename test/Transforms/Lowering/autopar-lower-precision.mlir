// RUN: autopar-opt %s -split-input-file --autopar-lower-precision=precision=bf16 | FileCheck %s
// RUN: autopar-opt %s -split-input-file --autopar-lower-precision=precision=f16 | FileCheck %s --check-prefix=F16
// RUN: autopar-opt %s -split-input-file --autopar-lower-precision=precision=f32 | FileCheck %s --check-prefix=F32
// RUN: not autopar-opt %s -split-input-file --autopar-lower-precision=precision=fp8 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: autopar-lower-precision: unknown precision 'fp8' (expected f32, bf16 or f16)

// A partitioned tensor-parallel product: the graph input and output stay f32
// at the boundary, the weight (and its global type) and the all-reduce move
// bf16, the transpose and reshape move bf16, and every op that computes
// (matmul, add, softmax) reads f32 conversions and rounds its result to
// bf16. The constant stays f32.

shard.grid @grid(shape = 2)
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[ARG:.*]]: tensor<8x16xf32>) -> tensor<8x16xf32>
// CHECK: %[[X:.*]] = autopar.cast %[[ARG]] : (tensor<8x16xf32>) -> tensor<8x16xbf16>
// CHECK: %[[W:.*]] = autopar.weight "fc.weight" {autopar.global_type = tensor<32x16xbf16>} : tensor<16x16xbf16>
// CHECK: %[[XF:.*]] = autopar.cast %[[X]] : (tensor<8x16xbf16>) -> tensor<8x16xf32>
// CHECK: %[[WF:.*]] = autopar.cast %[[W]] : (tensor<16x16xbf16>) -> tensor<16x16xf32>
// CHECK: %[[Y:.*]] = autopar.matmul %[[XF]], %[[WF]] : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
// CHECK: %[[Y16:.*]] = autopar.cast %[[Y]] : (tensor<8x16xf32>) -> tensor<8x16xbf16>
// CHECK: %[[S:.*]] = shard.all_reduce %[[Y16]] on @grid grid_axes = [0] : tensor<8x16xbf16> -> tensor<8x16xbf16>
// CHECK: %[[T:.*]] = autopar.transpose %[[S]] {{.*}} : (tensor<8x16xbf16>) -> tensor<16x8xbf16>
// CHECK: %[[C:.*]] = autopar.constant dense<1.000000e+00> : tensor<16x8xf32>
// CHECK: %[[TF:.*]] = autopar.cast %[[T]] : (tensor<16x8xbf16>) -> tensor<16x8xf32>
// CHECK: %[[Z:.*]] = autopar.add %[[TF]], %[[C]] : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
// CHECK: %[[Z16:.*]] = autopar.cast %[[Z]] : (tensor<16x8xf32>) -> tensor<16x8xbf16>
// CHECK: %[[R:.*]] = autopar.reshape %[[Z16]] : (tensor<16x8xbf16>) -> tensor<8x16xbf16>
// CHECK: %[[RF:.*]] = autopar.cast %[[R]] : (tensor<8x16xbf16>) -> tensor<8x16xf32>
// CHECK: %[[N:.*]] = autopar.softmax %[[RF]] {{.*}} -> tensor<8x16xf32>
// CHECK: %[[N16:.*]] = autopar.cast %[[N]] : (tensor<8x16xf32>) -> tensor<8x16xbf16>
// CHECK: %[[OUT:.*]] = autopar.cast %[[N16]] : (tensor<8x16xbf16>) -> tensor<8x16xf32>
// CHECK: return %[[OUT]] : tensor<8x16xf32>

// F16-LABEL: func.func @main
// F16: autopar.weight "fc.weight" {autopar.global_type = tensor<32x16xf16>} : tensor<16x16xf16>
// F16: shard.all_reduce %{{.*}} : tensor<8x16xf16> -> tensor<8x16xf16>

// F32-LABEL: func.func @main
// F32-NOT: autopar.cast
// F32: autopar.weight "fc.weight" {autopar.global_type = tensor<32x16xf32>} : tensor<16x16xf32>
// F32-NOT: autopar.cast
func.func @main(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %w = autopar.weight "fc.weight" {autopar.global_type = tensor<32x16xf32>} : tensor<16x16xf32>
  %y = autopar.matmul %x, %w : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %s = shard.all_reduce %y on @grid grid_axes = [0] : tensor<8x16xf32> -> tensor<8x16xf32>
  %t = autopar.transpose %s {perm = array<i64: 1, 0>} : (tensor<8x16xf32>) -> tensor<16x8xf32>
  %c = autopar.constant dense<1.0> : tensor<16x8xf32>
  %z = autopar.add %t, %c : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
  %r = autopar.reshape %z : (tensor<16x8xf32>) -> tensor<8x16xf32>
  %n = autopar.softmax %r {axis = 1 : i64} : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return %n : tensor<8x16xf32>
}

// -----

// Integer tensors are left alone; a constant moved by a data-movement op is
// converted in; a gather of a bf16 table keeps its i64 indices.

shard.grid @grid(shape = 1)
// CHECK-LABEL: func.func @gather_concat
// CHECK: %[[E:.*]] = autopar.weight "emb" : tensor<10x4xbf16>
// CHECK: %[[G:.*]] = autopar.gather %[[E]], %{{.*}} {{.*}} : (tensor<10x4xbf16>, tensor<3xi64>) -> tensor<3x4xbf16>
// CHECK: %[[C:.*]] = autopar.constant dense<0.000000e+00> : tensor<1x4xf32>
// CHECK: %[[C16:.*]] = autopar.cast %[[C]] : (tensor<1x4xf32>) -> tensor<1x4xbf16>
// CHECK: autopar.concat %[[G]], %[[C16]] {{.*}} -> tensor<4x4xbf16>
func.func @gather_concat(%i: tensor<3xi64>) -> tensor<4x4xf32> {
  %e = autopar.weight "emb" : tensor<10x4xf32>
  %g = autopar.gather %e, %i {axis = 0 : i64} : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  %c = autopar.constant dense<0.0> : tensor<1x4xf32>
  %r = autopar.concat %g, %c {axis = 0 : i64} : (tensor<3x4xf32>, tensor<1x4xf32>) -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

// -----

// A training step (it has `autopar.assign`s) is mixed precision. The
// forward and backward passes are lowered as above: the boundary receive and
// send move bf16, the matmuls round their results. The master region stays
// f32: the weight's storage (its reads by the passes go through one
// rounding cast), the gradient's accumulation (its all-reduce rounds it once
// and moves bf16), the update, the assign, the tied gradient exchange
// (`autopar.gradient_exchange`) and the loss's last reduction (only the
// return reads it).

shard.grid @grid(shape = 2)
// CHECK-LABEL: func.func @step
// CHECK: %[[R:.*]] = autopar.recv from 0 tag 1 : tensor<4x8xbf16>
// CHECK: %[[W:.*]] = autopar.weight "fc.weight" : tensor<8x8xf32>
// CHECK: %[[W16:.*]] = autopar.cast %[[W]] : (tensor<8x8xf32>) -> tensor<8x8xbf16>
// CHECK: %[[WF:.*]] = autopar.cast %[[W16]] : (tensor<8x8xbf16>) -> tensor<8x8xf32>
// CHECK: %[[Y:.*]] = autopar.matmul %{{.*}}, %[[WF]]
// CHECK: %[[Y16:.*]] = autopar.cast %[[Y]] : (tensor<4x8xf32>) -> tensor<4x8xbf16>
// CHECK: %[[YF:.*]] = autopar.cast %[[Y16]] : (tensor<4x8xbf16>) -> tensor<4x8xf32>
// CHECK: %[[L:.*]] = autopar.reduce_sum %[[YF]] {{.*}} -> tensor<f32>
// CHECK-NOT: autopar.cast %[[L]]
// CHECK: %[[T:.*]] = autopar.transpose %[[R]] {{.*}} -> tensor<8x4xbf16>
// CHECK: %[[TF:.*]] = autopar.cast %[[T]] : (tensor<8x4xbf16>) -> tensor<8x4xf32>
// CHECK: %[[G1:.*]] = autopar.matmul %[[TF]], %{{.*}} -> tensor<8x8xf32>
// CHECK-NOT: autopar.cast %[[G1]]
// CHECK: %[[G2:.*]] = autopar.matmul {{.*}} -> tensor<8x8xf32>
// CHECK: %[[G:.*]] = autopar.add %[[G1]], %[[G2]] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK: %[[G16:.*]] = autopar.cast %[[G]] : (tensor<8x8xf32>) -> tensor<8x8xbf16>
// CHECK: %[[GS:.*]] = shard.all_reduce %[[G16]] on @grid grid_axes = [0] : tensor<8x8xbf16> -> tensor<8x8xbf16>
// CHECK: %[[GSF:.*]] = autopar.cast %[[GS]] : (tensor<8x8xbf16>) -> tensor<8x8xf32>
// CHECK: autopar.send %[[GSF]] to 1 tag 7 {autopar.gradient_exchange} : tensor<8x8xf32>
// CHECK: %[[P:.*]] = autopar.recv from 1 tag 7 {autopar.gradient_exchange} : tensor<8x8xf32>
// CHECK: %[[GSF2:.*]] = autopar.cast %[[GS]] : (tensor<8x8xbf16>) -> tensor<8x8xf32>
// CHECK: %[[SUM:.*]] = autopar.add %[[GSF2]], %[[P]] {autopar.gradient_exchange} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK: %[[U:.*]] = autopar.mul %[[SUM]], %{{.*}} {autopar.optimizer_update = "fc.weight"} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK: %[[N:.*]] = autopar.sub %[[W]], %[[U]] {{.*}} -> tensor<8x8xf32>
// CHECK: autopar.assign %[[W]], %[[N]] {{.*}} : tensor<8x8xf32>
// CHECK: autopar.matmul %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[DX:.*]] = autopar.cast %{{.*}} : (tensor<4x8xf32>) -> tensor<4x8xbf16>
// CHECK: autopar.send %[[DX]] to 0 tag 2 : tensor<4x8xbf16>
// CHECK: return %[[L]] : tensor<f32>
func.func @step() -> tensor<f32> {
  %r = autopar.recv from 0 tag 1 : tensor<4x8xf32>
  %w = autopar.weight "fc.weight" : tensor<8x8xf32>
  %y = autopar.matmul %r, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %l = autopar.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32>
  %t = autopar.transpose %r {perm = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %dy = autopar.constant dense<1.0> : tensor<4x8xf32>
  %g1 = autopar.matmul %t, %dy : (tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %g2 = autopar.matmul %t, %dy : (tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %g = autopar.add %g1, %g2 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %gs = shard.all_reduce %g on @grid grid_axes = [0] : tensor<8x8xf32> -> tensor<8x8xf32>
  %sent = autopar.send %gs to 1 tag 7 {autopar.gradient_exchange} : tensor<8x8xf32>
  %p = autopar.recv from 1 tag 7 {autopar.gradient_exchange} : tensor<8x8xf32>
  %sum = autopar.add %gs, %p {autopar.gradient_exchange} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %lr = autopar.constant dense<0.1> : tensor<8x8xf32>
  %u = autopar.mul %sum, %lr {autopar.optimizer_update = "fc.weight"} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %n = autopar.sub %w, %u {autopar.optimizer_update = "fc.weight"} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %a = autopar.assign %w, %n {autopar.optimizer_update = "fc.weight"} : tensor<8x8xf32>
  %dx = autopar.matmul %y, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %s = autopar.send %dx to 0 tag 2 : tensor<4x8xf32>
  return %l : tensor<f32>
}
