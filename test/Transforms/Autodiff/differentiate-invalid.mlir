// RUN: autopar-opt %s --split-input-file --verify-diagnostics --autopar-differentiate

// An op on the path from a weight to the loss without a rule.
func.func @main(%x: tensor<1x1x4x4xf32>) -> tensor<f32> {
  %w = autopar.weight "w" : tensor<1x1x4x4xf32>
  %a = autopar.mul %x, %w : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  // expected-error @+1 {{op 'autopar.reduce_max' has no gradient rule (it lies between a trainable weight and the loss)}}
  %m = autopar.reduce_max %a {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<1x1x4x4xf32>) -> tensor<f32>
  return %m : tensor<f32>
}

// -----

// The loss must be one scalar.
// expected-error @+1 {{expected @main to return a scalar float loss, got 'tensor<4xf32>'}}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %w = autopar.weight "w" : tensor<4xf32>
  %a = autopar.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

// A frozen weight must exist.
// RUN: not autopar-opt %s --split-input-file --autopar-differentiate="freeze=nope" -o /dev/null 2>&1 | FileCheck %s --check-prefix=FREEZE
// FREEZE: error: --freeze: the model has no weight named 'nope'
func.func @main(%x: tensor<4xf32>) -> tensor<f32> {
  %w = autopar.weight "w" : tensor<4xf32>
  %a = autopar.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{op 'autopar.reduce_max' has no gradient rule (it lies between a trainable weight and the loss)}}
  %m = autopar.reduce_max %a {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  return %m : tensor<f32>
}
