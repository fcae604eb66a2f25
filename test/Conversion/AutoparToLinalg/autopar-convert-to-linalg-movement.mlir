// RUN: autopar-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(autopar-convert-to-linalg))" | FileCheck %s

// Data movement: linalg.transpose, reshapes, broadcasting generics, slices
// and gathers.

// CHECK-LABEL: func.func @transpose
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK: %[[INIT:.*]] = tensor.empty() : tensor<4x2x3xf32>
// CHECK: linalg.transpose ins(%[[X]] : tensor<2x3x4xf32>) outs(%[[INIT]] : tensor<4x2x3xf32>) permutation = [2, 0, 1]
func.func @transpose(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %0 = autopar.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

// Nesting shapes collapse or expand directly; others go through 1-D.
// CHECK-LABEL: func.func @reshape
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>, %[[S:.*]]: tensor<1x1xf32>)
// CHECK: %[[A:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1], [2]] : tensor<2x3x4xf32> into tensor<6x4xf32>
// CHECK: %[[B:.*]] = tensor.expand_shape %[[X]] {{\[\[}}0], [1], [2, 3]] output_shape [2, 3, 2, 2] : tensor<2x3x4xf32> into tensor<2x3x2x2xf32>
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1, 2]] : tensor<2x3x4xf32> into tensor<24xf32>
// CHECK: %[[C:.*]] = tensor.expand_shape %[[FLAT]] {{\[\[}}0, 1]] output_shape [4, 6] : tensor<24xf32> into tensor<4x6xf32>
// CHECK: %[[D:.*]] = tensor.collapse_shape %[[S]] [] : tensor<1x1xf32> into tensor<f32>
// CHECK: return %[[A]], %[[B]], %[[C]], %[[D]]
func.func @reshape(%x: tensor<2x3x4xf32>, %s: tensor<1x1xf32>) -> (tensor<6x4xf32>, tensor<2x3x2x2xf32>, tensor<4x6xf32>, tensor<f32>) {
  %0 = autopar.reshape %x : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %1 = autopar.reshape %x : (tensor<2x3x4xf32>) -> tensor<2x3x2x2xf32>
  %2 = autopar.reshape %x : (tensor<2x3x4xf32>) -> tensor<4x6xf32>
  %3 = autopar.reshape %s : (tensor<1x1xf32>) -> tensor<f32>
  return %0, %1, %2, %3 : tensor<6x4xf32>, tensor<2x3x2x2xf32>, tensor<4x6xf32>, tensor<f32>
}

// -----

// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2) -> (d1, 0)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @expand
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME: outs(%{{.*}} : tensor<2x3x4xf32>)
// CHECK-NEXT: ^bb0(%[[V:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: linalg.yield %[[V]] : f32
func.func @expand(%x: tensor<3x1xf32>) -> tensor<2x3x4xf32> {
  %0 = autopar.expand %x : (tensor<3x1xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// CHECK-LABEL: func.func @concat
// CHECK-SAME: (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<2x1xf32>)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<2x4xf32>
// CHECK: %[[I:.*]] = tensor.insert_slice %[[A]] into %[[E]][0, 0] [2, 3] [1, 1] : tensor<2x3xf32> into tensor<2x4xf32>
// CHECK: %[[R:.*]] = tensor.insert_slice %[[B]] into %[[I]][0, 3] [2, 1] [1, 1] : tensor<2x1xf32> into tensor<2x4xf32>
// CHECK: return %[[R]]
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x1xf32>) -> tensor<2x4xf32> {
  %0 = autopar.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// CHECK-LABEL: func.func @split
// CHECK-SAME: (%[[X:.*]]: tensor<2x6xf32>)
// CHECK: %[[A:.*]] = tensor.extract_slice %[[X]][0, 0] [2, 2] [1, 1] : tensor<2x6xf32> to tensor<2x2xf32>
// CHECK: %[[B:.*]] = tensor.extract_slice %[[X]][0, 2] [2, 4] [1, 1] : tensor<2x6xf32> to tensor<2x4xf32>
// CHECK: return %[[A]], %[[B]]
func.func @split(%x: tensor<2x6xf32>) -> (tensor<2x2xf32>, tensor<2x4xf32>) {
  %0:2 = autopar.split %x {axis = 1 : i64} : (tensor<2x6xf32>) -> (tensor<2x2xf32>, tensor<2x4xf32>)
  return %0#0, %0#1 : tensor<2x2xf32>, tensor<2x4xf32>
}

// -----

// Positive steps: a strided extract_slice; negative steps: start + step * i.
// CHECK-DAG: #[[REV:.*]] = affine_map<(d0, d1) -> (d0 * -2 + 3, -d1 + 5)>
// CHECK-LABEL: func.func @slice
// CHECK-SAME: (%[[X:.*]]: tensor<4x6xf32>)
// CHECK: tensor.extract_slice %[[X]][1, 0] [2, 2] [2, 3] : tensor<4x6xf32> to tensor<2x2xf32>
// CHECK: linalg.generic {indexing_maps = [#[[REV]], #{{.*}}], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%[[X]] : tensor<4x6xf32>) outs(%{{.*}} : tensor<2x3xf32>)
func.func @slice(%x: tensor<4x6xf32>) -> (tensor<2x2xf32>, tensor<2x3xf32>) {
  %0 = autopar.slice %x {starts = array<i64: 1, 0>, steps = array<i64: 2, 3>} : (tensor<4x6xf32>) -> tensor<2x2xf32>
  %1 = autopar.slice %x {starts = array<i64: 3, 5>, steps = array<i64: -2, -1>} : (tensor<4x6xf32>) -> tensor<2x3xf32>
  return %0, %1 : tensor<2x2xf32>, tensor<2x3xf32>
}

// -----

// Negative indices wrap; out-of-range indices fail an assert naming the node
// and are clamped before the read.
// CHECK-DAG: #[[IDX:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @gather
// CHECK-SAME: (%[[X:.*]]: tensor<5x4xf32>, %[[I:.*]]: tensor<2x3xi64>)
// CHECK: linalg.generic {indexing_maps = [#[[IDX]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME: ins(%[[I]] : tensor<2x3xi64>) outs(%{{.*}} : tensor<2x3x4xf32>)
// CHECK: ^bb0(%[[IN:.*]]: i64, %{{.*}}: f32):
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK-DAG: %[[SIZE:.*]] = arith.constant 5 : i64
// CHECK: %[[NEG:.*]] = arith.cmpi slt, %[[IN]], %[[ZERO]] : i64
// CHECK: %[[PLUS:.*]] = arith.addi %[[IN]], %[[SIZE]] : i64
// CHECK: %[[WRAPPED:.*]] = arith.select %[[NEG]], %[[PLUS]], %[[IN]] : i64
// CHECK: %[[OK:.*]] = arith.cmpi ult, %[[WRAPPED]], %[[SIZE]] : i64
// CHECK: cf.assert %[[OK]], "gather 'embed': index out of range [-5, 5) on axis 0 of data tensor<5x4xf32>"
// CHECK: %[[SAFE:.*]] = arith.select %[[OK]], %[[WRAPPED]], %[[ZERO]] : i64
// CHECK: %[[ROW:.*]] = arith.index_cast %[[SAFE]] : i64 to index
// CHECK: %[[COL:.*]] = linalg.index 2 : index
// CHECK: %[[V:.*]] = tensor.extract %[[X]][%[[ROW]], %[[COL]]] : tensor<5x4xf32>
// CHECK: linalg.yield %[[V]] : f32
func.func @gather(%x: tensor<5x4xf32>, %i: tensor<2x3xi64>) -> tensor<2x3x4xf32> {
  %0 = autopar.gather %x, %i {axis = 0 : i64} : (tensor<5x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32> loc(fused<"embed">["out"])
  return %0 : tensor<2x3x4xf32>
}

// -----

// CHECK-DAG: #[[SCALAR:.*]] = affine_map<(d0) -> ()>
// CHECK-LABEL: func.func @gather_scalar
// CHECK: linalg.generic {indexing_maps = [#[[SCALAR]], #{{.*}}], iterator_types = ["parallel"]}
// CHECK: arith.extsi %{{.*}} : i32 to i64
// CHECK: cf.assert %{{.*}}, "gather: index out of range [-4, 4) on axis 1 of data tensor<5x4xf32>"
// CHECK: %[[ROW:.*]] = linalg.index 0 : index
// CHECK: %[[COL:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK: tensor.extract %{{.*}}[%[[ROW]], %[[COL]]] : tensor<5x4xf32>
func.func @gather_scalar(%x: tensor<5x4xf32>, %i: tensor<i32>) -> tensor<5xf32> {
  %0 = autopar.gather %x, %i {axis = 1 : i64} : (tensor<5x4xf32>, tensor<i32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

// Results without elements are tensor.empty, whatever the op.
// CHECK-LABEL: func.func @empty_results
// CHECK-DAG: %[[A:.*]] = tensor.empty() : tensor<0xf32>
// CHECK-DAG: %[[B:.*]] = tensor.empty() : tensor<2x0xf32>
// CHECK-NOT: tensor.extract_slice
// CHECK: return %[[A]], %[[A2:.*]], %[[B]]
func.func @empty_results(%x: tensor<0xf32>, %y: tensor<2x3xf32>) -> (tensor<0xf32>, tensor<0xf32>, tensor<2x0xf32>) {
  %0:2 = autopar.split %x {axis = 0 : i64} : (tensor<0xf32>) -> (tensor<0xf32>, tensor<0xf32>)
  %1 = autopar.slice %y {starts = array<i64: 0, 2>, steps = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<2x0xf32>
  return %0#0, %0#1, %1 : tensor<0xf32>, tensor<0xf32>, tensor<2x0xf32>
}
