// RUN: autopar-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(autopar-convert-to-linalg))" | FileCheck %s

// Elementwise ops: one parallel linalg.generic each, operands broadcast
// through their indexing maps.

// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @sub_broadcast
// CHECK-SAME: (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<3xf32>)
// CHECK: %[[INIT:.*]] = tensor.empty() : tensor<2x3xf32>
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%[[A]], %[[B]] : tensor<2x3xf32>, tensor<3xf32>) outs(%[[INIT]] : tensor<2x3xf32>)
// CHECK: ^bb0(%[[X:.*]]: f32, %[[Y:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[D:.*]] = arith.subf %[[X]], %[[Y]] : f32
// CHECK: linalg.yield %[[D]] : f32
func.func @sub_broadcast(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %c = autopar.sub %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %c : tensor<2x3xf32>
}

// -----

// Integer division truncates toward zero.
// CHECK-LABEL: func.func @div_int
// CHECK: arith.divsi %{{.*}}, %{{.*}} : i64
func.func @div_int(%a: tensor<4xi64>, %b: tensor<4xi64>) -> tensor<4xi64> {
  %c = autopar.div %a, %b : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  return %c : tensor<4xi64>
}

// -----

// A rank-0 exponent broadcasts; an integer exponent is converted to the base's type.
// CHECK-DAG: #[[SCALAR:.*]] = affine_map<(d0) -> ()>
// CHECK-LABEL: func.func @pow_float_int
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[SCALAR]], #{{.*}}]
// CHECK: ^bb0(%[[B:.*]]: f32, %[[E:.*]]: i64, %{{.*}}: f32):
// CHECK: %[[EF:.*]] = arith.sitofp %[[E]] : i64 to f32
// CHECK: math.powf %[[B]], %[[EF]] : f32
func.func @pow_float_int(%a: tensor<4xf32>, %b: tensor<i64>) -> tensor<4xf32> {
  %c = autopar.pow %a, %b : (tensor<4xf32>, tensor<i64>) -> tensor<4xf32>
  return %c : tensor<4xf32>
}

// -----

// Integer pow goes through f64.
// CHECK-LABEL: func.func @pow_int
// CHECK: ^bb0(%[[B:.*]]: i32, %[[E:.*]]: i32, %{{.*}}: i32):
// CHECK: %[[BF:.*]] = arith.sitofp %[[B]] : i32 to f64
// CHECK: %[[EF:.*]] = arith.sitofp %[[E]] : i32 to f64
// CHECK: %[[P:.*]] = math.powf %[[BF]], %[[EF]] : f64
// CHECK: arith.fptosi %[[P]] : f64 to i32
func.func @pow_int(%a: tensor<4xi32>, %b: tensor<4xi32>) -> tensor<4xi32> {
  %c = autopar.pow %a, %b : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %c : tensor<4xi32>
}

// -----

// CHECK-DAG: #[[FIRST:.*]] = affine_map<(d0) -> (0)>
// CHECK-LABEL: func.func @compare
// CHECK: outs(%{{.*}} : tensor<4xi1>)
// CHECK: arith.cmpf oeq, %{{.*}}, %{{.*}} : f32
// CHECK: outs(%{{.*}} : tensor<4xi1>)
// CHECK: arith.cmpf olt, %{{.*}}, %{{.*}} : f32
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[FIRST]], #{{.*}}]
// CHECK: arith.cmpi sgt, %{{.*}}, %{{.*}} : i64
// CHECK: arith.cmpi slt, %{{.*}}, %{{.*}} : i64
func.func @compare(%a: tensor<4xf32>, %b: tensor<4xf32>, %i: tensor<4xi64>, %j: tensor<1xi64>) -> (tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>) {
  %0 = autopar.equal %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %1 = autopar.less %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %2 = autopar.greater %i, %j : (tensor<4xi64>, tensor<1xi64>) -> tensor<4xi1>
  %3 = autopar.less %i, %j : (tensor<4xi64>, tensor<1xi64>) -> tensor<4xi1>
  return %0, %1, %2, %3 : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>
}

// -----

// CHECK-LABEL: func.func @logical
// CHECK: arith.andi %{{.*}}, %{{.*}} : i1
// CHECK: %[[TRUE:.*]] = arith.constant true
// CHECK: arith.xori %{{.*}}, %[[TRUE]] : i1
func.func @logical(%a: tensor<4xi1>, %b: tensor<4xi1>) -> (tensor<4xi1>, tensor<4xi1>) {
  %0 = autopar.and %a, %b : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  %1 = autopar.not %a : (tensor<4xi1>) -> tensor<4xi1>
  return %0, %1 : tensor<4xi1>, tensor<4xi1>
}

// -----

// Three-way broadcast: [2, 1] ? [3] : [] -> [2, 3].
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-DAG: #[[X:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[Y:.*]] = affine_map<(d0, d1) -> ()>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @where
// CHECK: linalg.generic {indexing_maps = [#[[C]], #[[X]], #[[Y]], #[[OUT]]], iterator_types = ["parallel", "parallel"]}
// CHECK: ^bb0(%[[CI:.*]]: i1, %[[XI:.*]]: f32, %[[YI:.*]]: f32, %{{.*}}: f32):
// CHECK: arith.select %[[CI]], %[[XI]], %[[YI]] : f32
func.func @where(%c: tensor<2x1xi1>, %x: tensor<3xf32>, %y: tensor<f32>) -> tensor<2x3xf32> {
  %0 = autopar.where %c, %x, %y : (tensor<2x1xi1>, tensor<3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @unary
// CHECK: math.absf
// CHECK: arith.negf
// CHECK: math.sqrt
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: arith.divf %[[ONE]], %{{.*}} : f32
// CHECK: math.exp
// CHECK: math.log
// CHECK: ^bb0(%[[S:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[ONE2:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[NEG:.*]] = arith.negf %[[S]] : f32
// CHECK: %[[E:.*]] = math.exp %[[NEG]] : f32
// CHECK: %[[DEN:.*]] = arith.addf %[[ONE2]], %[[E]] : f32
// CHECK: arith.divf %[[ONE2]], %[[DEN]] : f32
// CHECK: math.tanh
// CHECK: math.erf
func.func @unary(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = autopar.abs %x : (tensor<4xf32>) -> tensor<4xf32>
  %1 = autopar.neg %x : (tensor<4xf32>) -> tensor<4xf32>
  %2 = autopar.sqrt %x : (tensor<4xf32>) -> tensor<4xf32>
  %3 = autopar.reciprocal %x : (tensor<4xf32>) -> tensor<4xf32>
  %4 = autopar.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %5 = autopar.log %x : (tensor<4xf32>) -> tensor<4xf32>
  %6 = autopar.sigmoid %x : (tensor<4xf32>) -> tensor<4xf32>
  %7 = autopar.tanh %x : (tensor<4xf32>) -> tensor<4xf32>
  %8 = autopar.erf %x : (tensor<4xf32>) -> tensor<4xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @int_unary
// CHECK: math.absi %{{.*}} : i64
// CHECK: %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK: arith.subi %[[ZERO]], %{{.*}} : i64
func.func @int_unary(%x: tensor<4xi64>) -> (tensor<4xi64>, tensor<4xi64>) {
  %0 = autopar.abs %x : (tensor<4xi64>) -> tensor<4xi64>
  %1 = autopar.neg %x : (tensor<4xi64>) -> tensor<4xi64>
  return %0, %1 : tensor<4xi64>, tensor<4xi64>
}

// -----

// CHECK-LABEL: func.func @leaky_relu
// CHECK: ^bb0(%[[X:.*]]: f32, %{{.*}}: f32):
// CHECK-DAG: %[[ALPHA:.*]] = arith.constant 2.000000e-01 : f32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[NEG:.*]] = arith.cmpf olt, %[[X]], %[[ZERO]] : f32
// CHECK: %[[SCALED:.*]] = arith.mulf %[[ALPHA]], %[[X]] : f32
// CHECK: arith.select %[[NEG]], %[[SCALED]], %[[X]] : f32
func.func @leaky_relu(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = autopar.leaky_relu %x {alpha = 0.2 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Exact: 0.5 x (1 + erf(x / sqrt(2))); tanh: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
// CHECK-LABEL: func.func @gelu
// CHECK: %[[SQRT2:.*]] = arith.constant 1.41421354 : f32
// CHECK: %[[SCALED:.*]] = arith.divf %{{.*}}, %[[SQRT2]] : f32
// CHECK: math.erf %[[SCALED]] : f32
// CHECK: arith.constant 4.471500e-02 : f32
// CHECK: arith.constant 0.797884583 : f32
// CHECK: math.tanh
func.func @gelu(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = autopar.gelu %x : (tensor<4xf32>) -> tensor<4xf32>
  %1 = autopar.gelu %x {approximate = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// Absent bounds are skipped; integer bounds are clamped to the type's range.
// Float bounds are std::min(std::max(x, lo), hi) as selects (NaN stays NaN).
// CHECK-LABEL: func.func @clip
// CHECK: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[LO:.*]] = arith.constant -1.000000e+00 : f32
// CHECK: %[[LT:.*]] = arith.cmpf olt, %[[IN]], %[[LO]] : f32
// CHECK: %[[M:.*]] = arith.select %[[LT]], %[[LO]], %[[IN]] : f32
// CHECK: %[[HI:.*]] = arith.constant 6.000000e+00 : f32
// CHECK: %[[GT:.*]] = arith.cmpf ogt, %[[M]], %[[HI]] : f32
// CHECK: arith.select %[[GT]], %[[HI]], %[[M]] : f32
// CHECK: ^bb0(%[[X:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[HI2:.*]] = arith.constant 6.000000e+00 : f32
// CHECK-NEXT: %[[GT2:.*]] = arith.cmpf ogt, %[[X]], %[[HI2]] : f32
// CHECK-NEXT: arith.select %[[GT2]], %[[HI2]], %[[X]] : f32
// CHECK: arith.constant -128 : i8
// CHECK: arith.maxsi
// CHECK: arith.constant 3 : i8
// CHECK: arith.minsi
func.func @clip(%x: tensor<4xf32>, %i: tensor<4xi8>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xi8>) {
  %0 = autopar.clip %x {min = -1.0 : f64, max = 6.0 : f64} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = autopar.clip %x {max = 6.0 : f64} : (tensor<4xf32>) -> tensor<4xf32>
  %2 = autopar.clip %i {min = -1000.0 : f64, max = 3.0 : f64} : (tensor<4xi8>) -> tensor<4xi8>
  return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xi8>
}

// -----

// CHECK-LABEL: func.func @cast
// CHECK: arith.fptosi %{{.*}} : f32 to i64
// CHECK: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: arith.cmpf une, %{{.*}}, %[[Z]] : f32
// CHECK: arith.uitofp %{{.*}} : i1 to f32
// CHECK: arith.trunci %{{.*}} : i64 to i32
// CHECK: arith.sitofp %{{.*}} : i64 to f32
// CHECK: arith.extui %{{.*}} : i1 to i64
// CHECK: arith.cmpi ne, %{{.*}}, %{{.*}} : i64
// CHECK: arith.extf %{{.*}} : f32 to f64
func.func @cast(%x: tensor<4xf32>, %i: tensor<4xi64>, %b: tensor<4xi1>) -> (tensor<4xi64>, tensor<4xi1>, tensor<4xf32>, tensor<4xi32>, tensor<4xf32>, tensor<4xi64>, tensor<4xi1>, tensor<4xf64>, tensor<4xf32>) {
  %0 = autopar.cast %x : (tensor<4xf32>) -> tensor<4xi64>
  %1 = autopar.cast %x : (tensor<4xf32>) -> tensor<4xi1>
  %2 = autopar.cast %b : (tensor<4xi1>) -> tensor<4xf32>
  %3 = autopar.cast %i : (tensor<4xi64>) -> tensor<4xi32>
  %4 = autopar.cast %i : (tensor<4xi64>) -> tensor<4xf32>
  %5 = autopar.cast %b : (tensor<4xi1>) -> tensor<4xi64>
  %6 = autopar.cast %i : (tensor<4xi64>) -> tensor<4xi1>
  %7 = autopar.cast %x : (tensor<4xf32>) -> tensor<4xf64>
  %8 = autopar.cast %x : (tensor<4xf32>) -> tensor<4xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8 : tensor<4xi64>, tensor<4xi1>, tensor<4xf32>, tensor<4xi32>, tensor<4xf32>, tensor<4xi64>, tensor<4xi1>, tensor<4xf64>, tensor<4xf32>
}
