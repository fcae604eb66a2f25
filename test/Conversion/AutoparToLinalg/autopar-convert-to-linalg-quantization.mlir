// RUN: autopar-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(autopar-convert-to-linalg))" | FileCheck %s

// QuantizeLinear: one parallel generic; a per-axis scale and zero point are
// read through the map of their axis. x / scale, rounded half to even, plus
// the zero point, clamped to [0, 255] and converted to ui8 (through signless
// i8: arith takes signless integers only).
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[AXIS:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @quantize_per_axis
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[AXIS]], #[[AXIS]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK: ^bb0(%[[X:.*]]: f32, %[[S:.*]]: f32, %[[Z:.*]]: ui8, %{{.*}}: ui8):
// CHECK: %[[DIV:.*]] = arith.divf %[[X]], %[[S]] : f32
// CHECK: %[[ROUND:.*]] = math.roundeven %[[DIV]] : f32
// CHECK: %[[ZS:.*]] = builtin.unrealized_conversion_cast %[[Z]] : ui8 to i8
// CHECK: %[[ZF:.*]] = arith.uitofp %[[ZS]] : i8 to f32
// CHECK: %[[SUM:.*]] = arith.addf %[[ROUND]], %[[ZF]] : f32
// CHECK-DAG: %[[LO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[HI:.*]] = arith.constant 2.550000e+02 : f32
// CHECK: %[[MAX:.*]] = arith.maximumf %[[SUM]], %[[LO]] : f32
// CHECK: %[[MIN:.*]] = arith.minimumf %[[MAX]], %[[HI]] : f32
// CHECK: %[[I8:.*]] = arith.fptoui %[[MIN]] : f32 to i8
// CHECK: %[[U8:.*]] = builtin.unrealized_conversion_cast %[[I8]] : i8 to ui8
// CHECK: linalg.yield %[[U8]] : ui8
func.func @quantize_per_axis(%x: tensor<2x3xf32>, %s: tensor<3xf32>, %z: tensor<3xui8>) -> tensor<2x3xui8> {
  %q = autopar.quantize_linear %x, %s, %z : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xui8>) -> tensor<2x3xui8>
  return %q : tensor<2x3xui8>
}

// -----

// Signed: clamped to [-128, 127], converted with fptosi; a per-tensor
// parameter of one element is read at index 0.
// CHECK-DAG: #[[FIRST:.*]] = affine_map<(d0) -> (0)>
// CHECK-LABEL: func.func @quantize_int8
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[FIRST]], #[[FIRST]], #{{.*}}]
// CHECK: arith.sitofp %{{.*}} : i8 to f32
// CHECK-DAG: arith.constant -1.280000e+02 : f32
// CHECK-DAG: arith.constant 1.270000e+02 : f32
// CHECK: %[[I8:.*]] = arith.fptosi %{{.*}} : f32 to i8
// CHECK: linalg.yield %[[I8]] : i8
func.func @quantize_int8(%x: tensor<4xf32>, %s: tensor<1xf32>, %z: tensor<1xi8>) -> tensor<4xi8> {
  %q = autopar.quantize_linear %x, %s, %z : (tensor<4xf32>, tensor<1xf32>, tensor<1xi8>) -> tensor<4xi8>
  return %q : tensor<4xi8>
}

// -----

// DequantizeLinear: (x - zero_point) in i32 (ui8 zero-extended), then f32
// times the scale; a rank-0 parameter has an empty map.
// CHECK-DAG: #[[SCALAR:.*]] = affine_map<(d0) -> ()>
// CHECK-LABEL: func.func @dequantize
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[SCALAR]], #[[SCALAR]], #{{.*}}]
// CHECK: ^bb0(%[[X:.*]]: ui8, %[[S:.*]]: f32, %[[Z:.*]]: ui8, %{{.*}}: f32):
// CHECK: %[[XS:.*]] = builtin.unrealized_conversion_cast %[[X]] : ui8 to i8
// CHECK: %[[XW:.*]] = arith.extui %[[XS]] : i8 to i32
// CHECK: %[[ZS:.*]] = builtin.unrealized_conversion_cast %[[Z]] : ui8 to i8
// CHECK: %[[ZW:.*]] = arith.extui %[[ZS]] : i8 to i32
// CHECK: %[[D:.*]] = arith.subi %[[XW]], %[[ZW]] : i32
// CHECK: %[[F:.*]] = arith.sitofp %[[D]] : i32 to f32
// CHECK: %[[Y:.*]] = arith.mulf %[[F]], %[[S]] : f32
// CHECK: linalg.yield %[[Y]] : f32
func.func @dequantize(%x: tensor<4xui8>, %s: tensor<f32>, %z: tensor<ui8>) -> tensor<4xf32> {
  %d = autopar.dequantize_linear %x, %s, %z : (tensor<4xui8>, tensor<f32>, tensor<ui8>) -> tensor<4xf32>
  return %d : tensor<4xf32>
}

// -----

// A ui8 constant is a signless one recast element by element (arith has
// signless constants only).
// CHECK-LABEL: func.func @constant_ui8
// CHECK: %[[BITS:.*]] = arith.constant dense<[1, -1]> : tensor<2xi8>
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[BITS]] : tensor<2xi8>)
// CHECK: builtin.unrealized_conversion_cast %{{.*}} : i8 to ui8
func.func @constant_ui8() -> tensor<2xui8> {
  %c = autopar.constant dense<[1, 255]> : tensor<2xui8>
  return %c : tensor<2xui8>
}

// -----

// Cast from and to ui8 converts by its signedness.
// CHECK-LABEL: func.func @cast_ui8
// CHECK: builtin.unrealized_conversion_cast %{{.*}} : ui8 to i8
// CHECK: arith.extui %{{.*}} : i8 to i32
// CHECK: arith.fptoui %{{.*}} : f32 to i8
// CHECK: builtin.unrealized_conversion_cast %{{.*}} : i8 to ui8
func.func @cast_ui8(%x: tensor<4xui8>, %f: tensor<4xf32>) -> (tensor<4xi32>, tensor<4xui8>) {
  %w = autopar.cast %x : (tensor<4xui8>) -> tensor<4xi32>
  %n = autopar.cast %f : (tensor<4xf32>) -> tensor<4xui8>
  return %w, %n : tensor<4xi32>, tensor<4xui8>
}
