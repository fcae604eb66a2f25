// RUN: autopar-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(autopar-convert-to-linalg))" | FileCheck %s

// Softmax, normalizations and reductions: reduction generics into filled
// inits, read back through maps that drop the reduced dimensions. Sums of
// f32 accumulate in f64 and are rounded to f32 once.

// Numerically stable: max, exp(x - max), sum, divide, along the axis.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:.*]]: tensor<2x5xf32>)
// CHECK: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[MAXINIT:.*]] = linalg.fill ins(%[[NEGINF]] : f32) outs(%{{.*}} : tensor<2xf32>)
// CHECK: %[[MAX:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[ROW]]], iterator_types = ["parallel", "reduction"]}
// CHECK-SAME: ins(%[[X]] : tensor<2x5xf32>) outs(%[[MAXINIT]] : tensor<2xf32>)
// CHECK: arith.maximumf
// CHECK: %[[EXP:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%[[X]], %[[MAX]] : tensor<2x5xf32>, tensor<2xf32>)
// CHECK: %[[SHIFTED:.*]] = arith.subf
// CHECK: math.exp %[[SHIFTED]]
// CHECK: %[[WIDE:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[ROW]]], iterator_types = ["parallel", "reduction"]}
// CHECK-SAME: ins(%[[EXP]] : tensor<2x5xf32>) outs(%{{.*}} : tensor<2xf64>)
// CHECK: %[[E:.*]] = arith.extf %{{.*}} : f32 to f64
// CHECK: arith.addf %{{.*}}, %[[E]] : f64
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[WIDE]] : tensor<2xf64>) outs(%{{.*}} : tensor<2xf32>)
// CHECK: arith.truncf %{{.*}} : f64 to f32
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%[[EXP]], %[[SUM]] : tensor<2x5xf32>, tensor<2xf32>)
// CHECK: arith.divf
func.func @softmax(%x: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %0 = autopar.softmax %x {axis = 1 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// (x - max) - log(sum(exp(x - max))) along axis 0.
// CHECK-DAG: #[[COL:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @log_softmax
// CHECK: iterator_types = ["reduction", "parallel"]
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: iterator_types = ["reduction", "parallel"]
// CHECK: arith.addf
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[COL]], #[[COL]], #{{.*}}]
// CHECK: ^bb0(%[[X:.*]]: f32, %[[M:.*]]: f32, %[[S:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[SHIFTED:.*]] = arith.subf %[[X]], %[[M]] : f32
// CHECK: %[[LOG:.*]] = math.log %[[S]] : f32
// CHECK: arith.subf %[[SHIFTED]], %[[LOG]] : f32
func.func @log_softmax(%x: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %0 = autopar.log_softmax %x {axis = 0 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[RED:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[LAST:.*]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>, %[[S:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xf32>)
// CHECK-DAG: %[[N:.*]] = arith.constant 4.000000e+00 : f32
// CHECK-DAG: %[[EPS:.*]] = arith.constant 9.99999974E-6 : f32
// CHECK: %[[WIDE:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[RED]]], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK-SAME: outs(%{{.*}} : tensor<2x3xf64>)
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[WIDE]] : tensor<2x3xf64>)
// CHECK: arith.truncf
// CHECK: %[[D:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[RED]], #[[ID]]]
// CHECK-SAME: ins(%[[X]], %[[SUM]] :
// CHECK: %[[MEAN:.*]] = arith.divf %{{.*}}, %[[N]] : f32
// CHECK: arith.subf %{{.*}}, %[[MEAN]] : f32
// CHECK: %[[SQW:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[RED]]], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK-SAME: ins(%[[D]] :
// CHECK: %[[DW:.*]] = arith.extf
// CHECK: arith.mulf %[[DW]], %[[DW]] : f64
// CHECK: %[[SQ:.*]] = linalg.generic {{.*}} ins(%[[SQW]] : tensor<2x3xf64>)
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[RED]], #[[LAST]], #[[LAST]], #[[ID]]]
// CHECK-SAME: ins(%[[D]], %[[SQ]], %[[S]], %[[B]] :
// CHECK: %[[VAR:.*]] = arith.divf %{{.*}}, %[[N]] : f32
// CHECK: %[[VE:.*]] = arith.addf %[[VAR]], %[[EPS]] : f32
// CHECK: %[[STD:.*]] = math.sqrt %[[VE]] : f32
// CHECK: %[[INV:.*]] = arith.divf %{{.*}}, %[[STD]] : f32
// CHECK: %[[NORM:.*]] = arith.mulf %{{.*}}, %[[INV]] : f32
// CHECK: %[[SCALED:.*]] = arith.mulf %[[NORM]], %{{.*}} : f32
// CHECK: arith.addf %[[SCALED]], %{{.*}} : f32
func.func @layer_norm(%x: tensor<2x3x4xf32>, %s: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<2x3x4xf32> {
  %0 = autopar.layer_norm %x, %s, %b {axis = 2 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// CHECK-DAG: #[[CH:.*]] = affine_map<(d0, d1, d2) -> (d1)>
// CHECK-LABEL: func.func @batch_norm
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[CH]], #[[CH]], #[[CH]], #[[CH]], #{{.*}}]
// CHECK: ^bb0(%[[X:.*]]: f32, %[[S:.*]]: f32, %[[B:.*]]: f32, %[[M:.*]]: f32, %[[V:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[D:.*]] = arith.subf %[[X]], %[[M]] : f32
// CHECK: %[[VE:.*]] = arith.addf %[[V]], %{{.*}} : f32
// CHECK: %[[STD:.*]] = math.sqrt %[[VE]] : f32
// CHECK: %[[N:.*]] = arith.divf %[[D]], %[[STD]] : f32
// CHECK: %[[SC:.*]] = arith.mulf %[[N]], %[[S]] : f32
// CHECK: arith.addf %[[SC]], %[[B]] : f32
func.func @batch_norm(%x: tensor<2x3x4xf32>, %s: tensor<3xf32>, %b: tensor<3xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>) -> tensor<2x3x4xf32> {
  %0 = autopar.batch_norm %x, %s, %b, %m, %v : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// CHECK-LABEL: func.func @reduce_sum_keepdims
// CHECK: %[[WIDE:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "reduction"]
// CHECK-SAME: outs(%{{.*}} : tensor<2xf64>)
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[WIDE]] : tensor<2xf64>) outs(%{{.*}} : tensor<2xf32>)
// CHECK: tensor.expand_shape %[[SUM]] {{\[\[}}0, 1, 2]] output_shape [2, 1, 1] : tensor<2xf32> into tensor<2x1x1xf32>
func.func @reduce_sum_keepdims(%x: tensor<2x3x4xf32>) -> tensor<2x1x1xf32> {
  %0 = autopar.reduce_sum %x {axes = array<i64: 1, 2>} : (tensor<2x3x4xf32>) -> tensor<2x1x1xf32>
  return %0 : tensor<2x1x1xf32>
}

// -----

// CHECK-LABEL: func.func @reduce_mean
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]
// CHECK-SAME: outs(%{{.*}} : tensor<f64>)
// CHECK: arith.truncf
// CHECK: %[[N:.*]] = arith.constant 6.000000e+00 : f32
// CHECK: arith.divf %{{.*}}, %[[N]] : f32
func.func @reduce_mean(%x: tensor<2x3xf32>) -> tensor<f32> {
  %0 = autopar.reduce_mean %x {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Float max starts from -inf, integer max from the minimum.
// CHECK-LABEL: func.func @reduce_max
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: arith.maximumf
// CHECK: %[[MIN:.*]] = arith.constant -2147483648 : i32
// CHECK: linalg.fill ins(%[[MIN]] : i32)
// CHECK: arith.maxsi
func.func @reduce_max(%x: tensor<2x3xf32>, %i: tensor<2x3xi32>) -> (tensor<2xf32>, tensor<3xi32>) {
  %0 = autopar.reduce_max %x {axes = array<i64: 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<2xf32>
  %1 = autopar.reduce_max %i {axes = array<i64: 0>, keepdims = false} : (tensor<2x3xi32>) -> tensor<3xi32>
  return %0, %1 : tensor<2xf32>, tensor<3xi32>
}
