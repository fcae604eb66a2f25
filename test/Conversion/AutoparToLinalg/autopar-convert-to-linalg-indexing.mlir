// RUN: autopar-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(autopar-convert-to-linalg))" | FileCheck %s

// Writes to computed positions: scf loops over tensors. scatter_elements is
// one loop over the updates carrying the result (initially the data) with a
// wrapped, range-checked index; top_k inserts each element of a slice into
// the sorted k best.

// CHECK-LABEL: func.func @scatter_elements(
// CHECK-SAME: %[[D:[^:]*]]: tensor<3x4xf32>, %[[I:[^:]*]]: tensor<2x4xi64>, %[[U:[^:]*]]: tensor<2x4xf32>)
// CHECK: %[[R:.*]] = scf.for %[[IV:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[D]]) -> (tensor<3x4xf32>) {
// CHECK: %[[COL:.*]] = arith.remui %[[IV]]
// CHECK: %[[ROW:.*]] = arith.divui %[[IV]]
// CHECK: %[[IDX:.*]] = tensor.extract %[[I]][%[[ROW]], %[[COL]]]
// CHECK: cf.assert %{{.*}}, "scatter_elements: index out of range [-3, 3) on axis 0 of data tensor<3x4xf32>"
// CHECK: %[[T:.*]] = arith.index_cast
// CHECK: %[[NEW:.*]] = tensor.extract %[[U]][%[[ROW]], %[[COL]]]
// CHECK: %[[OLD:.*]] = tensor.extract %[[ACC]][%[[T]], %[[COL]]]
// CHECK: %[[SUM:.*]] = arith.addf %[[OLD]], %[[NEW]] : f32
// CHECK: %[[INS:.*]] = tensor.insert %[[SUM]] into %[[ACC]][%[[T]], %[[COL]]]
// CHECK: scf.yield %[[INS]]
// CHECK: return %[[R]]
func.func @scatter_elements(%d: tensor<3x4xf32>, %i: tensor<2x4xi64>, %u: tensor<2x4xf32>) -> tensor<3x4xf32> {
  %y = autopar.scatter_elements %d, %i, %u {axis = 0 : i64, reduction = "add"} : (tensor<3x4xf32>, tensor<2x4xi64>, tensor<2x4xf32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}

// -----

// CHECK-LABEL: func.func @top_k(
// CHECK: %[[V0:.*]] = tensor.empty() : tensor<3x2xf32>
// CHECK: %[[I0:.*]] = tensor.empty() : tensor<3x2xi64>
// CHECK: %[[R:.*]]:2 = scf.for %[[ROW:[^ ]*]] = {{.*}} iter_args(%{{.*}} = %[[V0]], %{{.*}} = %[[I0]])
// CHECK: scf.for %[[COL:[^ ]*]] = {{.*}} -> (tensor<3x2xf32>, tensor<3x2xi64>) {
// CHECK: %[[X:.*]] = tensor.extract %{{.*}}[%[[ROW]], %[[COL]]] : tensor<3x6xf32>
// The position: the number of kept elements that beat x (>= : earlier ties
// stay first).
// CHECK: %[[POS:.*]] = scf.for {{.*}} -> (index) {
// CHECK: arith.cmpf oge, %{{.*}}, %[[X]] : f32
// CHECK: %[[FITS:.*]] = arith.cmpi ult, %[[POS]]
// CHECK: scf.if %[[FITS]] -> (tensor<3x2xf32>, tensor<3x2xi64>) {
// CHECK: scf.for
// CHECK: tensor.insert %[[X]] into %{{.*}}[%[[ROW]], %[[POS]]] : tensor<3x2xf32>
// CHECK: } else {
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @top_k(%x: tensor<3x6xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>) {
  %v, %i = autopar.top_k %x {axis = 1 : i64, k = 2 : i64} : (tensor<3x6xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
  return %v, %i : tensor<3x2xf32>, tensor<3x2xi64>
}
