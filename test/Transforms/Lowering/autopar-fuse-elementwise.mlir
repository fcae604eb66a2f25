// RUN: autopar-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(autopar-convert-to-linalg,canonicalize,autopar-fuse-elementwise))' | FileCheck %s

// Add, Relu and a broadcast Add: one generic, one memory pass.

// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[Y:.*]]: tensor<4x8xf32>, %[[Z:.*]]: tensor<8xf32>)
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[Y]], %[[Z]] : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>)
// CHECK: arith.addf
// CHECK: arith.maximumf
// CHECK: arith.addf
// CHECK: return %[[R]]
// CHECK-NOT: linalg.generic
func.func @chain(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %z: tensor<8xf32>) -> tensor<4x8xf32> {
  %a = autopar.add %x, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %r = autopar.relu %a : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = autopar.add %r, %z : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}

// -----

// A value with two consumers is computed once, not once per consumer.

// CHECK-LABEL: func.func @two_consumers
// CHECK: %[[E:.*]] = linalg.generic
// CHECK: math.exp
// CHECK: linalg.generic {{.*}} ins(%[[E]], %{{.*}} :
// CHECK-NOT: math.exp
// CHECK: linalg.generic {{.*}} ins(%[[E]], %{{.*}} :
// CHECK-NOT: math.exp
func.func @two_consumers(%x: tensor<16xf32>, %y: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %e = autopar.exp %x : (tensor<16xf32>) -> tensor<16xf32>
  %a = autopar.mul %e, %y : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  %b = autopar.add %e, %y : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  return %a, %b : tensor<16xf32>, tensor<16xf32>
}

// -----

// A small value read through a broadcast is not recomputed for every copy:
// the exp of 8 elements stays one generic of 8.

// CHECK-LABEL: func.func @broadcast_read
// CHECK: %[[E:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<8xf32>)
// CHECK: math.exp
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[E]] : tensor<64x8xf32>, tensor<8xf32>)
// CHECK-NOT: math.exp
func.func @broadcast_read(%x: tensor<64x8xf32>, %s: tensor<8xf32>) -> tensor<64x8xf32> {
  %e = autopar.exp %s : (tensor<8xf32>) -> tensor<8xf32>
  %y = autopar.mul %x, %e : (tensor<64x8xf32>, tensor<8xf32>) -> tensor<64x8xf32>
  return %y : tensor<64x8xf32>
}
