// RUN: autopar-opt %s --autopar-split-stages="stages=2" | FileCheck %s
// RUN: autopar-opt %s --autopar-split-stages="blocks=1,2" | FileCheck %s --check-prefix=UNEVEN
// RUN: autopar-opt %s --autopar-split-stages="stages=3" | FileCheck %s --check-prefix=THREE

// Three repeated blocks (matmul, relu, residual add) between a prefix (tanh)
// and a suffix (sigmoid); the prefix's result is also read by the suffix, so
// the first stage sends it to the last stage directly.

// CHECK-LABEL: module @stage0 attributes {autopar.stage = 0 : i64}
// CHECK: func.func @main(%[[X:.*]]: tensor<4x8xf32> {autopar.stage_input = {input = 0 : i64}})
// CHECK-SAME: -> (tensor<4x8xf32> {autopar.stage_output = {boundary = 0 : i64, to = [1]}}, tensor<4x8xf32> {autopar.stage_output = {boundary = 1 : i64, to = [1]}})
// CHECK: autopar.weight "w0"
// CHECK-NOT: autopar.weight "w1"
// CHECK: autopar.tanh %[[X]]
// CHECK-LABEL: module @stage1 attributes {autopar.stage = 1 : i64}
// CHECK: func.func @main(%{{.*}}: tensor<4x8xf32> {autopar.stage_input = {boundary = 1 : i64, from = 0 : i64}}, %{{.*}}: tensor<4x8xf32> {autopar.stage_input = {boundary = 0 : i64, from = 0 : i64}})
// CHECK-SAME: -> (tensor<4x8xf32> {autopar.stage_output = {output = 0 : i64}})
// CHECK-NOT: autopar.weight "w0"
// CHECK: autopar.weight "w1"
// CHECK: autopar.weight "w2"
// CHECK: autopar.sigmoid
// CHECK-NOT: func.func

// UNEVEN: module @stage0
// UNEVEN: autopar.weight "w0"
// UNEVEN-NOT: autopar.weight "w1"
// UNEVEN: module @stage1
// UNEVEN: autopar.weight "w1"
// UNEVEN: autopar.weight "w2"

// THREE: module @stage0
// THREE-NEXT: func.func @main({{.*}}) -> (tensor<4x8xf32> {autopar.stage_output = {boundary = 0 : i64, to = [2]}}, tensor<4x8xf32> {autopar.stage_output = {boundary = 1 : i64, to = [1]}})
// THREE: module @stage1
// THREE: module @stage2
// THREE: func.func @main(%{{.*}}: tensor<4x8xf32> {autopar.stage_input = {boundary = 2 : i64, from = 1 : i64}}, %{{.*}}: tensor<4x8xf32> {autopar.stage_input = {boundary = 0 : i64, from = 0 : i64}})
// THREE-SAME: -> (tensor<4x8xf32> {autopar.stage_output = {output = 0 : i64}})
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w0 = autopar.weight "w0" : tensor<8x8xf32>
  %w1 = autopar.weight "w1" : tensor<8x8xf32>
  %w2 = autopar.weight "w2" : tensor<8x8xf32>
  %t = autopar.tanh %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %m0 = autopar.matmul %t, %w0 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %r0 = autopar.relu %m0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %a0 = autopar.add %r0, %t : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %m1 = autopar.matmul %a0, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %r1 = autopar.relu %m1 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %a1 = autopar.add %r1, %a0 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %m2 = autopar.matmul %a1, %w2 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %r2 = autopar.relu %m2 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %a2 = autopar.add %r2, %a1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %s = autopar.sigmoid %a2 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %o = autopar.add %s, %t : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %o : tensor<4x8xf32>
}
