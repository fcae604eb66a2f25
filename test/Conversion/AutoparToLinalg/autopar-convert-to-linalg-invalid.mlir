// RUN: autopar-opt %s -split-input-file -verify-diagnostics --pass-pipeline="builtin.module(func.func(autopar-convert-to-linalg))"

func.func @dynamic(%x: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{'autopar.relu' op requires statically shaped tensors to lower to linalg, got '(tensor<?xf32>) -> tensor<?xf32>'}}
  %y = autopar.relu %x : (tensor<?xf32>) -> tensor<?xf32>
  return %y : tensor<?xf32>
}

// -----

func.func @leftover_weight() -> tensor<4xf32> {
  // expected-error @+1 {{failed to legalize operation 'autopar.weight'}}
  %w = autopar.weight "w" : tensor<4xf32>
  return %w : tensor<4xf32>
}

// -----

func.func @int_gemm_alpha(%a: tensor<2x3xi32>, %b: tensor<3x5xi32>) -> tensor<2x5xi32> {
  // expected-error @+1 {{failed to legalize operation 'autopar.gemm'}}
  %y = autopar.gemm %a, %b {alpha = 2.0 : f32} : (tensor<2x3xi32>, tensor<3x5xi32>) -> tensor<2x5xi32>
  return %y : tensor<2x5xi32>
}

// -----

func.func @int_softmax(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{failed to legalize operation 'autopar.softmax'}}
  %y = autopar.softmax %x {axis = 0 : i64} : (tensor<4xi32>) -> tensor<4xi32>
  return %y : tensor<4xi32>
}

// -----

func.func @float_not(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{failed to legalize operation 'autopar.not'}}
  %y = autopar.not %x : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
