// RUN: autopar-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(autopar-convert-to-linalg))" | FileCheck %s

// Einsum: one generic with one loop per letter.

// Loops b, i, j (summed), k: the last output letter is innermost.
// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-LABEL: func.func @einsum_bmm
// CHECK: %[[INIT:.*]] = linalg.fill
// CHECK: linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[C]]], iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
// CHECK-SAME: outs(%[[INIT]] : tensor<2x3x5xf32>)
// CHECK: ^bb0(%[[X:.*]]: f32, %[[Y:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK: %[[P:.*]] = arith.mulf %[[X]], %[[Y]] : f32
// CHECK: arith.addf %[[ACC]], %[[P]] : f32
func.func @einsum_bmm(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>) -> tensor<2x3x5xf32> {
  %0 = autopar.einsum %a, %b {equation = "bij,bjk->bik"} : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// -----

// CHECK-DAG: #[[DIAG:.*]] = affine_map<(d0) -> (d0, d0)>
// CHECK-LABEL: func.func @einsum_diagonal
// CHECK: linalg.generic {indexing_maps = [#[[DIAG]], #{{.*}}], iterator_types = ["parallel"]}
func.func @einsum_diagonal(%a: tensor<3x3xf32>) -> tensor<3xf32> {
  %0 = autopar.einsum %a {equation = "ii->i"} : (tensor<3x3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// A size-1 letter broadcasts against the other operand's size.
// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1) -> (0, d1)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[S:.*]] = affine_map<(d0, d1) -> ()>
// CHECK-LABEL: func.func @einsum_broadcast_sum
// CHECK: linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[S]]], iterator_types = ["reduction", "reduction"]}
// CHECK-SAME: outs(%{{.*}} : tensor<f32>)
func.func @einsum_broadcast_sum(%a: tensor<1x4xf32>, %b: tensor<3x4xf32>) -> tensor<f32> {
  %0 = autopar.einsum %a, %b {equation = "ij,ij->"} : (tensor<1x4xf32>, tensor<3x4xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}
