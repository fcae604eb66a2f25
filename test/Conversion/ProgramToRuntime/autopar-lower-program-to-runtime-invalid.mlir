// RUN: autopar-opt %s -split-input-file -verify-diagnostics --autopar-lower-program-to-runtime

// expected-error @+1 {{no function @main to lower}}
module {
  func.func @other() {
    return
  }
}

// -----

// expected-error @+1 {{'func.func' op argument #0 has unsupported element type 'i16' (expected f32, f64, bf16, f16, i64, i32, i8, ui8 or i1)}}
func.func @main(%x: tensor<4xi16>) -> tensor<4xi16> {
  return %x : tensor<4xi16>
}

// -----

// expected-error @+1 {{'func.func' op result #0 must have a static shape, got 'tensor<?xf32>'}}
func.func @main(%x: tensor<4xf32>) -> tensor<?xf32> {
  %c = tensor.cast %x : tensor<4xf32> to tensor<?xf32>
  return %c : tensor<?xf32>
}

// -----

shard.grid @grid(shape = 2)
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'shard.all_reduce' op supports only sum reductions, got 'max'}}
  %r = shard.all_reduce %x on @grid grid_axes = [0] reduction = max : tensor<4xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

shard.grid @grid(shape = 2)
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'shard.broadcast' op has no lowering to the autopar runtime}}
  %r = shard.broadcast %x on @grid grid_axes = [0] root = [0] : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @main() -> tensor<4xf32> {
  %a = autopar.weight "w" : tensor<4xf32>
  // expected-error @+1 {{'autopar.weight' op uses weight 'w' with type 'tensor<2xf32>' but an earlier use has type 'tensor<4xf32>'; a weight has one local shard per device}}
  %b = autopar.weight "w" : tensor<2xf32>
  return %a : tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op uses the symbol @autopar_main reserved for the device program's entry point}}
func.func @autopar_main() {
  return
}
func.func @main() {
  return
}

// -----

shard.grid @grid(shape = 2x2)
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = arith.constant dense<1> : tensor<4xi16>
  // expected-error @+1 {{'autopar.swap_grid_axes' op input has unsupported element type 'i16' (expected f32, f64, bf16, f16, i64, i32, i8, ui8 or i1)}}
  %s = autopar.swap_grid_axes %c on @grid grid_axes = [0, 1] : tensor<4xi16>
  return %x : tensor<4xf32>
}

// -----

shard.grid @grid(shape = 1)
func.func @main() -> tensor<4x3xf32> {
  // expected-error @+1 {{'autopar.random_uniform' op has autopar.microbatch_draw = 0 without a whole_shape (and no whole_offsets) that holds whole blocks of the op's along that dimension}}
  %u = autopar.random_uniform {seed = 7 : i64, whole_shape = array<i64: 6, 3>, autopar.microbatch_draw = 0 : i64} : () -> tensor<4x3xf32>
  return %u : tensor<4x3xf32>
}
