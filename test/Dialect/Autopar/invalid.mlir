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

// -----

func.func @quantize_scale_not_f32(%x: tensor<4xf32>, %s: tensor<i32>, %z: tensor<ui8>) -> tensor<4xui8> {
  // expected-error @+1 {{'autopar.quantize_linear' op scale must be f32, got 'i32'}}
  %q = autopar.quantize_linear %x, %s, %z : (tensor<4xf32>, tensor<i32>, tensor<ui8>) -> tensor<4xui8>
  return %q : tensor<4xui8>
}

// -----

func.func @quantize_zero_point_not_8_bit(%x: tensor<4xf32>, %s: tensor<f32>, %z: tensor<i32>) -> tensor<4xi32> {
  // expected-error @+2 {{zero point must be i8 or ui8}}
  // expected-error @+1 {{failed to infer returned types}}
  %q = autopar.quantize_linear %x, %s, %z : (tensor<4xf32>, tensor<f32>, tensor<i32>) -> tensor<4xi32>
  return %q : tensor<4xi32>
}

// -----

func.func @quantize_per_axis_size(%x: tensor<2x3xf32>, %s: tensor<2xf32>, %z: tensor<2xui8>) -> tensor<2x3xui8> {
  // expected-error @+1 {{'autopar.quantize_linear' op per-axis scale has 2 elements but dimension 1 has size 3}}
  %q = autopar.quantize_linear %x, %s, %z {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2xf32>, tensor<2xui8>) -> tensor<2x3xui8>
  return %q : tensor<2x3xui8>
}

// -----

func.func @dequantize_zero_point_type(%x: tensor<4xui8>, %s: tensor<f32>, %z: tensor<i8>) -> tensor<4xf32> {
  // expected-error @+1 {{'autopar.dequantize_linear' op zero point must have the input's element type 'ui8', got 'i8'}}
  %d = autopar.dequantize_linear %x, %s, %z : (tensor<4xui8>, tensor<f32>, tensor<i8>) -> tensor<4xf32>
  return %d : tensor<4xf32>
}

// -----

func.func @bit_shift_float(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'autopar.bit_shift' op operands must be integers, got 'f32'}}
  %r = autopar.bit_shift %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
