// RUN: autopar-opt %s --autopar-differentiate="optimizer=sgd lr=0.5" --autopar-recompute-regions -split-input-file | FileCheck %s

// One recomputed region (`autopar.recompute_region = 0`): the relu and the
// second matmul. The relu's result is read only inside the region, so the
// backward pass reads a clone built right before its first backward use;
// the region's output (read by the loss outside it) stays stored. The
// transposed weight depends on no input: the same for every step, it is
// kept, not recomputed. Ops outside the region are not cloned.
// CHECK-LABEL: func.func @main
// CHECK: %[[WT:.*]] = autopar.transpose %{{.*}} {autopar.microbatch = 0 : i64, perm = array<i64: 1, 0>}
// CHECK: %[[H:.*]] = autopar.matmul %{{.*}}, %{{.*}} {autopar.microbatch = 0 : i64}
// CHECK: %[[R:.*]] = autopar.relu %[[H]] {autopar.microbatch = 0 : i64}
// CHECK: %[[Y:.*]] = autopar.matmul %[[R]], %[[WT]] {autopar.microbatch = 0 : i64}
// CHECK: autopar.reduce_sum %[[Y]]
// CHECK-NOT: autopar.transpose {{.*}}autopar.recomputed
// CHECK-NOT: autopar.matmul {{.*}}autopar.recomputed
// CHECK: %[[R2:.*]] = autopar.relu %[[H]] {autopar.backward, autopar.microbatch = 0 : i64, autopar.recomputed}
// CHECK-NEXT: autopar.gemm %[[R2]], %{{.*}} {autopar.backward
// CHECK-NOT: autopar.recomputed
// CHECK: return
func.func @main(%x: tensor<4x8xf32>) -> tensor<f32> {
  %w1 = autopar.weight "w1" : tensor<8x8xf32>
  %w2 = autopar.weight "w2" : tensor<8x8xf32>
  %wt = autopar.transpose %w2 {perm = array<i64: 1, 0>, autopar.microbatch = 0 : i64, autopar.recompute_region = 0 : i64} : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %h = autopar.matmul %x, %w1 {autopar.microbatch = 0 : i64} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %r = autopar.relu %h {autopar.microbatch = 0 : i64, autopar.recompute_region = 0 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = autopar.matmul %r, %wt {autopar.microbatch = 0 : i64, autopar.recompute_region = 0 : i64} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %l = autopar.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false, autopar.microbatch = 0 : i64} : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
