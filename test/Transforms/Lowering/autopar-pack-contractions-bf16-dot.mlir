// Contractions of a bf16 program on a CPU with AVX512-BF16 (forced
// isa=avx512bf16, so that the test does not depend on the machine): both
// operands of matmuls, gemms and batched matmuls are packed in bf16 pairs
// along K (k0 = 2, the pair one vdpbf16ps lane consumes), the weight at
// compile time, the activation per call; linalg.mmt4d accumulates the
// bf16 x bf16 products in f32 and nothing is extended. Convolutions keep
// the f32 tile (k0 = 1, left operand extended per call). An f32 program
// keeps the f32 tile of AVX-512.
// RUN: autopar-opt %s -split-input-file --autopar-lower-precision=precision=bf16 --autopar-pack-contractions="isa=avx512bf16 pack-weights=true" | FileCheck %s --check-prefix=DOT
// RUN: autopar-opt %s -split-input-file --autopar-pack-contractions="isa=avx512bf16 pack-weights=true" | FileCheck %s --check-prefix=F32

shard.grid @grid(shape = 1)
// DOT-LABEL: func.func @main
// DOT: %[[X:.*]] = autopar.cast %{{.*}} : (tensor<2x10x64xf32>) -> tensor<2x10x64xbf16>
// DOT: %[[W:.*]] = autopar.weight "fc.weight" {autopar.packed_source_type = tensor<64x96xbf16>, autopar.packed_tiles = array<i64: 32, 2>} : tensor<3x32x32x2xbf16>
// DOT: %[[XC:.*]] = tensor.collapse_shape %[[X]] {{.*}} : tensor<2x10x64xbf16> into tensor<20x64xbf16>
// DOT: %[[XP:.*]] = linalg.pack %[[XC]] padding_value(%{{.*}} : bf16) inner_dims_pos = [0, 1] inner_tiles = [8, 2] {{.*}} : tensor<20x64xbf16> -> tensor<3x32x8x2xbf16>
// DOT-NOT: arith.extf
// DOT: %[[ACC:.*]] = linalg.fill ins(%{{.*}} : f32) {{.*}} -> tensor<3x3x8x32xf32>
// DOT: %[[C:.*]] = linalg.mmt4d ins(%[[XP]], %[[W]] : tensor<3x32x8x2xbf16>, tensor<3x32x32x2xbf16>) outs(%[[ACC]] : tensor<3x3x8x32xf32>)
// DOT: linalg.unpack %[[C]] {{.*}} : tensor<3x3x8x32xf32> -> tensor<20x96xf32>
// DOT-NOT: autopar.matmul

// F32-LABEL: func.func @main
// F32: autopar.weight "fc.weight" {autopar.packed_source_type = tensor<64x96xf32>, autopar.packed_tiles = array<i64: 32, 1>} : tensor<3x64x32x1xf32>
// F32: linalg.mmt4d ins(%{{.*}}, %{{.*}} : tensor<3x64x8x1xf32>, tensor<3x64x32x1xf32>) outs(%{{.*}} : tensor<3x3x8x32xf32>)
func.func @main(%x: tensor<2x10x64xf32>) -> tensor<2x10x96xf32> {
  %w = autopar.weight "fc.weight" : tensor<64x96xf32>
  %y = autopar.matmul %x, %w : (tensor<2x10x64xf32>, tensor<64x96xf32>) -> tensor<2x10x96xf32>
  return %y : tensor<2x10x96xf32>
}

// -----

// An odd K pads the pairs with zeros (the weight's last pair, and the
// activation's per call); a transposed gemm weight (N x K) packs the same.

shard.grid @grid(shape = 1)
// DOT-LABEL: func.func @gemm
// DOT: autopar.weight "fc.weight" {autopar.packed_source_type = tensor<32x63xbf16>, autopar.packed_tiles = array<i64: 32, 2>, autopar.packed_transposed} : tensor<1x32x32x2xbf16>
// DOT: linalg.pack %{{.*}} padding_value(%{{.*}} : bf16) inner_dims_pos = [0, 1] inner_tiles = [8, 2] {{.*}} : tensor<16x63xbf16> -> tensor<2x32x8x2xbf16>
// DOT: linalg.mmt4d ins(%{{.*}}, %{{.*}} : tensor<2x32x8x2xbf16>, tensor<1x32x32x2xbf16>) outs(%{{.*}} : tensor<2x1x8x32xf32>)
func.func @gemm(%x: tensor<16x63xf32>) -> tensor<16x32xf32> {
  %w = autopar.weight "fc.weight" : tensor<32x63xf32>
  %b = autopar.weight "fc.bias" : tensor<32xf32>
  %y = autopar.gemm %x, %w, %b {trans_b = true} : (tensor<16x63xf32>, tensor<32x63xf32>, tensor<32xf32>) -> tensor<16x32xf32>
  return %y : tensor<16x32xf32>
}

// -----

// A convolution keeps the f32 tile; attention's batched matmul packs both
// bf16 activations in pairs per call.

shard.grid @grid(shape = 1)
// DOT-LABEL: func.func @conv
// DOT: autopar.weight "conv.weight" {autopar.packed_source_type = tensor<32x8x3x3xbf16>, autopar.packed_tiles = array<i64: 8, 1>, autopar.packed_transposed} : tensor<4x72x8x1xbf16>
// DOT: linalg.mmt4d ins(%{{.*}}, %{{.*}} : tensor<4x72x8x1xf32>, tensor<2x72x32x1xbf16>) outs(%{{.*}} : tensor<4x2x8x32xf32>)
// DOT-LABEL: func.func @attention
// DOT: linalg.pack %{{.*}} inner_dims_pos = [1, 2] inner_tiles = [8, 2] {{.*}} : tensor<2x16x8xbf16> -> tensor<2x2x4x8x2xbf16>
// DOT: linalg.pack %{{.*}} outer_dims_perm = [0, 2, 1] inner_dims_pos = [2, 1] inner_tiles = [32, 2] {{.*}} : tensor<2x8x16xbf16> -> tensor<2x1x4x32x2xbf16>
// DOT-NOT: arith.extf
// DOT: linalg.batch_mmt4d ins(%{{.*}}, %{{.*}} : tensor<2x2x4x8x2xbf16>, tensor<2x1x4x32x2xbf16>) outs(%{{.*}} : tensor<2x2x1x8x32xf32>)
func.func @conv(%x: tensor<1x8x10x10xf32>) -> tensor<1x32x8x8xf32> {
  %w = autopar.weight "conv.weight" : tensor<32x8x3x3xf32>
  %b = autopar.weight "conv.bias" : tensor<32xf32>
  %y = autopar.conv %x, %w, %b {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x8x10x10xf32>, tensor<32x8x3x3xf32>, tensor<32xf32>) -> tensor<1x32x8x8xf32>
  return %y : tensor<1x32x8x8xf32>
}
func.func @attention(%q: tensor<2x16x8xf32>, %k: tensor<2x8x16xf32>) -> tensor<2x16x16xf32> {
  %y = autopar.matmul %q, %k : (tensor<2x16x8xf32>, tensor<2x8x16xf32>) -> tensor<2x16x16xf32>
  return %y : tensor<2x16x16xf32>
}

// -----

// An f32 activation times a bf16 weight (a program whose activation is not
// stored in bf16): the activation is packed in f32 and rounded to bf16 once
// per call (the run without autopar-lower-precision).

shard.grid @grid(shape = 1)
// F32-LABEL: func.func @mixed
// F32: %[[XP:.*]] = linalg.pack %{{.*}} inner_dims_pos = [0, 1] inner_tiles = [8, 2] {{.*}} : tensor<16x64xf32> -> tensor<2x32x8x2xf32>
// F32: %[[XB:.*]] = linalg.generic {{.*}} ins(%[[XP]] : tensor<2x32x8x2xf32>) outs(%{{.*}} : tensor<2x32x8x2xbf16>)
// F32: arith.truncf %{{.*}} : f32 to bf16
// F32: linalg.mmt4d ins(%[[XB]], %{{.*}} : tensor<2x32x8x2xbf16>, tensor<1x32x32x2xbf16>) outs(%{{.*}} : tensor<2x1x8x32xf32>)
func.func @mixed(%x: tensor<16x64xf32>) -> tensor<16x32xf32> {
  %w = autopar.weight "fc.weight" : tensor<64x32xbf16>
  %wf = autopar.cast %w : (tensor<64x32xbf16>) -> tensor<64x32xf32>
  %y = autopar.matmul %x, %wf : (tensor<16x64xf32>, tensor<64x32xf32>) -> tensor<16x32xf32>
  return %y : tensor<16x32xf32>
}
