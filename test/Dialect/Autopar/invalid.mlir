// RUN: autopar-opt %s -split-input-file -verify-diagnostics

func.func @contraction(%a: tensor<8x4xf32>, %b: tensor<5x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+2 {{contraction dimensions differ: [8x4] @ [5x16]}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = autopar.matmul %a, %b : (tensor<8x4xf32>, tensor<5x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

func.func @wrong_result(%a: tensor<8x4xf32>, %b: tensor<4x16xf32>) -> tensor<8x8xf32> {
  // expected-error @+2 {{'autopar.matmul' op inferred type(s) 'tensor<8x16xf32>' are incompatible with return type(s) of operation 'tensor<8x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = autopar.matmul %a, %b : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x8xf32>
  return %y : tensor<8x8xf32>
}

// -----

func.func @broadcast(%a: tensor<8x4xf32>, %b: tensor<3xf32>) -> tensor<8x4xf32> {
  // expected-error @+2 {{operand shapes [8x4] and [3] do not broadcast}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = autopar.add %a, %b : (tensor<8x4xf32>, tensor<3xf32>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

func.func @gemm_bias(%a: tensor<8x4xf32>, %b: tensor<4x16xf32>, %c: tensor<8x3xf32>) -> tensor<8x16xf32> {
  // expected-error @+2 {{gemm operand C of shape [8x3] does not broadcast to [8x16]}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = autopar.gemm %a, %b, %c : (tensor<8x4xf32>, tensor<4x16xf32>, tensor<8x3xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

func.func @gemm_rank(%a: tensor<2x8x4xf32>, %b: tensor<4x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+2 {{gemm operands A and B must be matrices, got [2x8x4] and [4x16]}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = autopar.gemm %a, %b : (tensor<2x8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

func.func @elt(%a: tensor<8xf32>, %b: tensor<8xf64>) -> tensor<8xf32> {
  // expected-error @+2 {{operands must have the same element type}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = autopar.add %a, %b : (tensor<8xf32>, tensor<8xf64>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// expected-error @+1 {{grid axis 1 is used more than once in a sharding}}
func.func @dup(%x: tensor<8x4xf32> {autopar.sharding = #autopar.sharding<[[1], [1]]>}) {
  return
}

// -----

shard.grid @grid(shape = 2)
func.func @to_partial_axis(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{grid axis 1 is out of range for a 1-d grid}}
  %p = autopar.to_partial %x on @grid grid_axes = [1] : tensor<8xf32>
  return %p : tensor<8xf32>
}
