// RUN: autopar-opt %s -split-input-file -verify-diagnostics

func.func @counter_size(%c: tensor<2xi64>) -> tensor<4xf32> {
  // expected-error @+1 {{'autopar.random_uniform' op needs a one-element counter, got 'tensor<2xi64>'}}
  %u = autopar.random_uniform counter %c {seed = 1 : i64} : (tensor<2xi64>) -> tensor<4xf32>
  return %u : tensor<4xf32>
}

// -----

func.func @offsets_rank(%o: i64) -> tensor<4x2xf32> {
  // expected-error @+1 {{'autopar.random_uniform' op needs one offset per result dimension, got 1 offsets for rank 2}}
  %u = autopar.random_uniform offsets(%o) {seed = 1 : i64} : () -> tensor<4x2xf32>
  return %u : tensor<4x2xf32>
}

// -----

func.func @global_rank() -> tensor<4xf32> {
  // expected-error @+1 {{'autopar.random_uniform' op global_shape has rank 2, the result has rank 1}}
  %u = autopar.random_uniform {seed = 1 : i64, global_shape = array<i64: 8, 2>} : () -> tensor<4xf32>
  return %u : tensor<4xf32>
}

// -----

func.func @global_smaller() -> tensor<4xf32> {
  // expected-error @+1 {{'autopar.random_uniform' op global_shape dimension 0 (2) is smaller than the result's (4)}}
  %u = autopar.random_uniform {seed = 1 : i64, global_shape = array<i64: 2>} : () -> tensor<4xf32>
  return %u : tensor<4xf32>
}

// -----

func.func @float_only() -> tensor<4xi32> {
  // expected-error @+1 {{'autopar.random_uniform' op result #0 must be ranked tensor of 32-bit float values}}
  %u = autopar.random_uniform {seed = 1 : i64} : () -> tensor<4xi32>
  return %u : tensor<4xi32>
}
