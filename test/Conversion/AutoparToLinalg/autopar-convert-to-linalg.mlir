// RUN: autopar-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(autopar-convert-to-linalg))" | FileCheck %s

// CHECK-DAG: #[[ID1:.*]] = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @relu
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK: %[[INIT:.*]] = tensor.empty() : tensor<4xf32>
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[ID1]], #[[ID1]]], iterator_types = ["parallel"]}
// CHECK-SAME: ins(%[[X]] : tensor<4xf32>) outs(%[[INIT]] : tensor<4xf32>)
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[LT:.*]] = arith.cmpf olt, %[[IN:.*]], %[[ZERO]] : f32
// CHECK: %[[M:.*]] = arith.select %[[LT]], %[[ZERO]], %[[IN]] : f32
// CHECK: linalg.yield %[[M]] : f32
// CHECK: return %[[R]]
func.func @relu(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = autopar.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Multidirectional broadcast: [2, 1, 4] + [3, 1] -> [2, 3, 4].
// CHECK-DAG: #[[LHS:.*]] = affine_map<(d0, d1, d2) -> (d0, 0, d2)>
// CHECK-DAG: #[[RHS:.*]] = affine_map<(d0, d1, d2) -> (d1, 0)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @add_broadcast
// CHECK-SAME: (%[[A:.*]]: tensor<2x1x4xi32>, %[[B:.*]]: tensor<3x1xi32>)
// CHECK: %[[INIT:.*]] = tensor.empty() : tensor<2x3x4xi32>
// CHECK: linalg.generic {indexing_maps = [#[[LHS]], #[[RHS]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME: ins(%[[A]], %[[B]] : tensor<2x1x4xi32>, tensor<3x1xi32>) outs(%[[INIT]] : tensor<2x3x4xi32>)
// CHECK: arith.addi
func.func @add_broadcast(%a: tensor<2x1x4xi32>, %b: tensor<3x1xi32>) -> tensor<2x3x4xi32> {
  %c = autopar.add %a, %b : (tensor<2x1x4xi32>, tensor<3x1xi32>) -> tensor<2x3x4xi32>
  return %c : tensor<2x3x4xi32>
}

// -----

// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[A0:.*]]: tensor<2x3xf32>, %[[B0:.*]]: tensor<3x5xf32>)
// CHECK: %[[FILL:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<2x5xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[C]]], iterator_types = ["parallel", "reduction", "parallel"]}
// CHECK-SAME: ins(%[[A0]], %[[B0]] : tensor<2x3xf32>, tensor<3x5xf32>) outs(%[[FILL]] : tensor<2x5xf32>)
// CHECK: ^bb0(%[[IA:.*]]: f32, %[[IB:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK: %[[P:.*]] = arith.mulf %[[IA]], %[[IB]] : f32
// CHECK: %[[S:.*]] = arith.addf %[[ACC]], %[[P]] : f32
// CHECK: linalg.yield %[[S]]
func.func @matmul(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>) -> tensor<2x5xf32> {
  %y = autopar.matmul %a, %b : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
  return %y : tensor<2x5xf32>
}

// -----

// Batch broadcasting: [2, 1, 3, 4] @ [5, 4, 6] -> [2, 5, 3, 6].
// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, 0, d2, d3)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d3, d4)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
// CHECK-LABEL: func.func @matmul_batch_broadcast
// CHECK: linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[C]]], iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]}
func.func @matmul_batch_broadcast(%a: tensor<2x1x3x4xf32>, %b: tensor<5x4x6xf32>) -> tensor<2x5x3x6xf32> {
  %y = autopar.matmul %a, %b : (tensor<2x1x3x4xf32>, tensor<5x4x6xf32>) -> tensor<2x5x3x6xf32>
  return %y : tensor<2x5x3x6xf32>
}

// -----

// 1-D promotion: [4] @ [2, 4, 3] -> [2, 3] and [4] @ [4] -> [].
// CHECK-DAG: #[[VA:.*]] = affine_map<(d0, d1, d2) -> (d1)>
// CHECK-DAG: #[[VB:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[VC:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[DOT:.*]] = affine_map<(d0) -> (d0)>
// CHECK-DAG: #[[SCALAR:.*]] = affine_map<(d0) -> ()>
// CHECK-LABEL: func.func @matmul_vectors
// CHECK: linalg.generic {indexing_maps = [#[[VA]], #[[VB]], #[[VC]]], iterator_types = ["parallel", "reduction", "parallel"]}
// CHECK: } -> tensor<2x3xf32>
// CHECK: linalg.generic {indexing_maps = [#[[DOT]], #[[DOT]], #[[SCALAR]]], iterator_types = ["reduction"]}
// CHECK: } -> tensor<f32>
func.func @matmul_vectors(%v: tensor<4xf32>, %b: tensor<2x4x3xf32>) -> (tensor<2x3xf32>, tensor<f32>) {
  %y = autopar.matmul %v, %b : (tensor<4xf32>, tensor<2x4x3xf32>) -> tensor<2x3xf32>
  %d = autopar.matmul %v, %v : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
  return %y, %d : tensor<2x3xf32>, tensor<f32>
}

// -----

// CHECK-DAG: #[[CMAP:.*]] = affine_map<(d0, d1) -> (0, d1)>
// CHECK-DAG: #[[ID2:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[AT:.*]] = affine_map<(d0, d1, d2) -> (d1, d0)>
// CHECK-DAG: #[[BT:.*]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func.func @gemm_transposed
// CHECK-SAME: (%[[A:.*]]: tensor<3x2xf32>, %[[B:.*]]: tensor<5x3xf32>, %[[C:.*]]: tensor<1x5xf32>)
// CHECK: %[[BETA:.*]] = arith.constant 5.000000e-01 : f32
// CHECK: %[[INIT:.*]] = linalg.generic {indexing_maps = [#[[CMAP]], #[[ID2]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%[[C]] : tensor<1x5xf32>)
// CHECK: arith.mulf %{{.*}}, %[[BETA]]
// CHECK: %[[ALPHA:.*]] = arith.constant 2.000000e+00 : f32
// CHECK: linalg.generic {indexing_maps = [#[[AT]], #[[BT]], #[[OUT]]], iterator_types = ["parallel", "reduction", "parallel"]}
// CHECK-SAME: ins(%[[A]], %[[B]] : tensor<3x2xf32>, tensor<5x3xf32>) outs(%[[INIT]] : tensor<2x5xf32>)
// CHECK: arith.mulf %[[ALPHA]], %{{.*}}
func.func @gemm_transposed(%a: tensor<3x2xf32>, %b: tensor<5x3xf32>, %c: tensor<1x5xf32>) -> tensor<2x5xf32> {
  %y = autopar.gemm %a, %b, %c {alpha = 2.0 : f32, beta = 0.5 : f32, trans_a = true, trans_b = true}
      : (tensor<3x2xf32>, tensor<5x3xf32>, tensor<1x5xf32>) -> tensor<2x5xf32>
  return %y : tensor<2x5xf32>
}

// -----

// CHECK-DAG: #[[CCOL:.*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-DAG: #[[CSCALAR:.*]] = affine_map<(d0, d1) -> ()>
// CHECK-LABEL: func.func @gemm_bias_shapes
// CHECK: linalg.generic {indexing_maps = [#[[CCOL]], #{{.*}}]
// CHECK-NOT: arith.mulf
// CHECK: linalg.generic
// CHECK: linalg.generic {indexing_maps = [#[[CSCALAR]], #{{.*}}]
// CHECK: linalg.generic
// CHECK: linalg.fill
// CHECK: linalg.generic
func.func @gemm_bias_shapes(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>, %col: tensor<2x1xf32>, %s: tensor<f32>) -> (tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>) {
  %y = autopar.gemm %a, %b, %col : (tensor<2x3xf32>, tensor<3x5xf32>, tensor<2x1xf32>) -> tensor<2x5xf32>
  %z = autopar.gemm %a, %b, %s : (tensor<2x3xf32>, tensor<3x5xf32>, tensor<f32>) -> tensor<2x5xf32>
  %w = autopar.gemm %a, %b : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
  return %y, %z, %w : tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>
}

// -----

// CHECK-LABEL: func.func @constant
// CHECK: %[[C:.*]] = arith.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK: return %[[C]]
func.func @constant() -> tensor<2xf32> {
  %c = autopar.constant dense<[1.0, 2.0]> : tensor<2xf32>
  return %c : tensor<2xf32>
}
