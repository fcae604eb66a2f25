// RUN: autopar-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(autopar-convert-to-linalg))" | FileCheck %s

// random_uniform: one parallel generic over the result. The element's
// global linear index is its loop indices plus the block offsets times the
// strides of the global shape (8x6 here, a 4x3 block); the counter words are
// (lo32(i), hi32(i), stream, step); ten Philox rounds of 64-bit products
// (0xD2511F53 = -766435501, 0xCD9E8D57 = -845247145 as i32); the first word's
// top 24 bits scaled by 2^-24.
// CHECK-DAG: #[[STEP:.*]] = affine_map<(d0, d1) -> (0)>
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @block
// CHECK-SAME: %[[STEPS:[^:]*]]: tensor<1xi64>, %[[O0:[^:]*]]: i64, %[[O1:[^:]*]]: i64
// CHECK: linalg.generic {indexing_maps = [#[[STEP]], #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%[[STEPS]] : tensor<1xi64>)
// CHECK: ^bb0(%[[C:.*]]: i64, %{{.*}}: f32):
// CHECK: %[[I0:.*]] = linalg.index 0 : index
// CHECK: %[[I0L:.*]] = arith.index_cast %[[I0]] : index to i64
// CHECK: %[[G0:.*]] = arith.addi %[[I0L]], %[[O0]] : i64
// CHECK: %[[S0:.*]] = arith.constant 6 : i64
// CHECK: arith.muli %[[G0]], %[[S0]] : i64
// CHECK: %[[I1:.*]] = linalg.index 1 : index
// CHECK: %[[I1L:.*]] = arith.index_cast %[[I1]] : index to i64
// CHECK: arith.addi %[[I1L]], %[[O1]] : i64
// CHECK: arith.trunci %[[C]] : i64 to i32
// CHECK-COUNT-20: arith.muli %{{.*}}, %{{.*}} : i64
// CHECK: %[[BITS:.*]] = arith.shrui %{{.*}}, %{{.*}} : i32
// CHECK: %[[F:.*]] = arith.uitofp %[[BITS]] : i32 to f32
// CHECK: %[[SCALE:.*]] = arith.constant 5.96046448E-8 : f32
// CHECK: %[[U:.*]] = arith.mulf %[[F]], %[[SCALE]] : f32
// CHECK: linalg.yield %[[U]] : f32
func.func @block(%step: tensor<1xi64>, %o0: i64, %o1: i64) -> tensor<4x3xf32> {
  %u = autopar.random_uniform counter %step offsets(%o0, %o1) {seed = 7 : i64, stream = 2 : i64, global_shape = array<i64: 8, 6>} : (tensor<1xi64>) -> tensor<4x3xf32>
  return %u : tensor<4x3xf32>
}
