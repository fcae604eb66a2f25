// RUN: autopar-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(autopar-convert-to-linalg))" | FileCheck %s

// ui8 (ONNX UINT8) arithmetic: the scalars enter arith as signless i8 and
// leave it as ui8; division, remainder, min/max and comparisons take their
// unsigned forms from the element type. int8 (signless i8) keeps the signed
// ones.

// CHECK-LABEL: func.func @unsigned_arith
// CHECK: ^bb0(%[[A:.*]]: ui8, %[[B:.*]]: ui8, %{{.*}}: ui8):
// CHECK: %[[SA:.*]] = builtin.unrealized_conversion_cast %[[A]] : ui8 to i8
// CHECK: %[[SB:.*]] = builtin.unrealized_conversion_cast %[[B]] : ui8 to i8
// CHECK: %[[D:.*]] = arith.divui %[[SA]], %[[SB]] : i8
// CHECK: %[[UD:.*]] = builtin.unrealized_conversion_cast %[[D]] : i8 to ui8
// CHECK: linalg.yield %[[UD]] : ui8
// CHECK: arith.remui %{{.*}}, %{{.*}} : i8
// CHECK: arith.maxui %{{.*}}, %{{.*}} : i8
// CHECK: arith.minui %{{.*}}, %{{.*}} : i8
// CHECK: arith.addi %{{.*}}, %{{.*}} : i8
// CHECK: arith.muli %{{.*}}, %{{.*}} : i8
// CHECK: arith.cmpi ult, %{{.*}}, %{{.*}} : i8
func.func @unsigned_arith(%a: tensor<4xui8>, %b: tensor<4xui8>) -> (tensor<4xui8>, tensor<4xui8>, tensor<4xui8>, tensor<4xui8>, tensor<4xui8>, tensor<4xui8>, tensor<4xi1>) {
  %d = autopar.div %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %m = autopar.mod %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %x = autopar.max %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %n = autopar.min %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %s = autopar.add %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %p = autopar.mul %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %l = autopar.less %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xi1>
  return %d, %m, %x, %n, %s, %p, %l : tensor<4xui8>, tensor<4xui8>, tensor<4xui8>, tensor<4xui8>, tensor<4xui8>, tensor<4xui8>, tensor<4xi1>
}

// -----

// Clip on ui8 clamps its bounds into [0, 255] (a bound of 300 is 255, -1
// is 0) and compares unsigned.
// CHECK-LABEL: func.func @unsigned_clip
// CHECK: ^bb0(%[[X:.*]]: ui8, %{{.*}}: ui8):
// CHECK: %[[LO:.*]] = arith.constant 0 : i8
// CHECK: %[[ULO:.*]] = builtin.unrealized_conversion_cast %[[LO]] : i8 to ui8
// CHECK: arith.maxui
// CHECK: %[[HI:.*]] = arith.constant -1 : i8
// CHECK: arith.minui
func.func @unsigned_clip(%x: tensor<4xui8>) -> tensor<4xui8> {
  %c = autopar.clip %x {min = -1.0 : f64, max = 300.0 : f64} : (tensor<4xui8>) -> tensor<4xui8>
  return %c : tensor<4xui8>
}

// -----

// int8 is signless i8: the signed forms, and Mod's sign fix-up (the
// remainder takes the divisor's sign).
// CHECK-LABEL: func.func @signed_i8
// CHECK: arith.maxsi %{{.*}}, %{{.*}} : i8
// CHECK: %[[R:.*]] = arith.remsi %{{.*}}, %{{.*}} : i8
// CHECK: arith.cmpi slt, %[[R]]
// CHECK: arith.select
func.func @signed_i8(%a: tensor<4xi8>, %b: tensor<4xi8>) -> (tensor<4xi8>, tensor<4xi8>) {
  %x = autopar.max %a, %b : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  %m = autopar.mod %a, %b : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  return %x, %m : tensor<4xi8>, tensor<4xi8>
}

// -----

// BitShift: logical shifts; a shift by 8 or more gives 0.
// CHECK-LABEL: func.func @bit_shift
// CHECK: ^bb0(%[[X:.*]]: ui8, %[[S:.*]]: ui8, %{{.*}}: ui8):
// CHECK-DAG: %[[SX:.*]] = builtin.unrealized_conversion_cast %[[X]] : ui8 to i8
// CHECK-DAG: %[[SS:.*]] = builtin.unrealized_conversion_cast %[[S]] : ui8 to i8
// CHECK: %[[SH:.*]] = arith.shrui %[[SX]], %[[SS]] : i8
// CHECK: %[[W:.*]] = arith.constant 8 : i8
// CHECK: %[[FAR:.*]] = arith.cmpi uge, %[[SS]], %[[W]] : i8
// CHECK: %[[Z:.*]] = arith.constant 0 : i8
// CHECK: %[[R:.*]] = arith.select %[[FAR]], %[[Z]], %[[SH]] : i8
// CHECK: builtin.unrealized_conversion_cast %[[R]] : i8 to ui8
// CHECK: arith.shli %{{.*}}, %{{.*}} : i8
func.func @bit_shift(%x: tensor<4xui8>, %s: tensor<4xui8>) -> (tensor<4xui8>, tensor<4xui8>) {
  %r = autopar.bit_shift %x, %s {right = true} : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %l = autopar.bit_shift %x, %s : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  return %r, %l : tensor<4xui8>, tensor<4xui8>
}

// -----

// MaxPool on ui8: the padding and the initial value are the type's minimum
// (0), and the window positions combine with maxui.
// CHECK-LABEL: func.func @max_pool_unsigned
// CHECK: %[[LO:.*]] = arith.constant 0 : i8
// CHECK: %[[ULO:.*]] = builtin.unrealized_conversion_cast %[[LO]] : i8 to ui8
// CHECK: tensor.pad
// CHECK: tensor.yield %[[ULO]] : ui8
// CHECK: arith.maxui %{{.*}}, %{{.*}} : i8
func.func @max_pool_unsigned(%x: tensor<1x1x4x4xui8>) -> tensor<1x1x2x2xui8> {
  %y = autopar.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4xui8>) -> tensor<1x1x2x2xui8>
  return %y : tensor<1x1x2x2xui8>
}
