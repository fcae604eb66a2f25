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
