// A frozen weight gets no update, and the ops between it and the loss need
// no gradient rule (reduce_max has none).
// RUN: autopar-opt %s --autopar-differentiate="freeze=w" | FileCheck %s

// CHECK-LABEL: func.func @main
// CHECK-NOT: autopar.assign %{{.*}}, %{{.*}} : tensor<4xf32>
// CHECK: %[[V:.*]] = autopar.weight "v" : tensor<3xf32>
// CHECK: autopar.assign %[[V]], %{{.*}} : tensor<3xf32>
// CHECK-NOT: autopar.assign
func.func @main(%x: tensor<4xf32>) -> tensor<f32> {
  %w = autopar.weight "w" : tensor<4xf32>
  %v = autopar.weight "v" : tensor<3xf32>
  %a = autopar.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %m = autopar.reduce_max %a {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  %s = autopar.reduce_sum %v {axes = array<i64: 0>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
  %l = autopar.add %m, %s : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %l : tensor<f32>
}
