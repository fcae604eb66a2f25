// Contractions of a program stored in bf16 (autopar-lower-precision): the
// packs read the bf16 values, the packed left operand is extended to f32 once
// per call (its tile rows are broadcast scalars), linalg.mmt4d takes it with
// the bf16 right operand (a packed weight keeps bf16) into an f32
// accumulator. The register tile follows the forced ISA, so the test does
// not depend on the machine.
// RUN: autopar-opt %s -split-input-file --autopar-lower-precision=precision=bf16 --autopar-pack-contractions="isa=avx512 pack-weights=true" | FileCheck %s --check-prefix=AVX512
// RUN: autopar-opt %s -split-input-file --autopar-lower-precision=precision=bf16 --autopar-pack-contractions="isa=avx2 pack-weights=true" | FileCheck %s --check-prefix=AVX2
// RUN: autopar-opt %s -split-input-file --autopar-lower-precision=precision=f16 --autopar-pack-contractions="isa=generic" | FileCheck %s --check-prefix=F16

shard.grid @grid(shape = 1)
// AVX512-LABEL: func.func @main
// AVX512: %[[X:.*]] = autopar.cast %{{.*}} : (tensor<2x10x64xf32>) -> tensor<2x10x64xbf16>
// AVX512: %[[W:.*]] = autopar.weight "fc.weight" {autopar.packed_source_type = tensor<64x96xbf16>, autopar.packed_tiles = array<i64: 32, 1>} : tensor<3x64x32x1xbf16>
// AVX512: %[[XC:.*]] = tensor.collapse_shape %[[X]] {{.*}} : tensor<2x10x64xbf16> into tensor<20x64xbf16>
// AVX512: %[[XP:.*]] = linalg.pack %[[XC]] padding_value(%{{.*}} : bf16) inner_dims_pos = [0, 1] inner_tiles = [8, 1] {{.*}} : tensor<20x64xbf16> -> tensor<3x64x8x1xbf16>
// AVX512: %[[XF:.*]] = linalg.generic {{.*}} ins(%[[XP]] : tensor<3x64x8x1xbf16>) outs(%{{.*}} : tensor<3x64x8x1xf32>)
// AVX512: arith.extf %{{.*}} : bf16 to f32
// AVX512: %[[ACC:.*]] = linalg.fill ins(%{{.*}} : f32) {{.*}} -> tensor<3x3x8x32xf32>
// AVX512: %[[C:.*]] = linalg.mmt4d ins(%[[XF]], %[[W]] : tensor<3x64x8x1xf32>, tensor<3x64x32x1xbf16>) outs(%[[ACC]] : tensor<3x3x8x32xf32>)
// AVX512: %[[Y:.*]] = linalg.unpack %[[C]] {{.*}} : tensor<3x3x8x32xf32> -> tensor<20x96xf32>
// AVX512: %[[YE:.*]] = tensor.expand_shape %[[Y]]
// AVX512: autopar.cast %[[YE]] : (tensor<2x10x96xf32>) -> tensor<2x10x96xbf16>
// AVX512-NOT: autopar.matmul

// AVX2-LABEL: func.func @main
// AVX2: autopar.weight "fc.weight" {autopar.packed_source_type = tensor<64x96xbf16>, autopar.packed_tiles = array<i64: 16, 1>} : tensor<6x64x16x1xbf16>
// AVX2: linalg.mmt4d ins(%{{.*}}, %{{.*}} : tensor<4x64x6x1xf32>, tensor<6x64x16x1xbf16>) outs(%{{.*}} : tensor<4x6x6x16xf32>)

// F16-LABEL: func.func @main
// F16: %[[W:.*]] = autopar.weight "fc.weight" : tensor<64x96xf16>
// F16: %[[WP:.*]] = linalg.pack %[[W]] {{.*}} : tensor<64x96xf16> -> tensor<12x64x8x1xf16>
// F16: linalg.mmt4d ins(%{{.*}}, %[[WP]] : tensor<5x64x4x1xf32>, tensor<12x64x8x1xf16>) outs(%{{.*}} : tensor<5x12x4x8xf32>)

func.func @main(%x: tensor<2x10x64xf32>) -> tensor<2x10x96xf32> {
  %w = autopar.weight "fc.weight" : tensor<64x96xf32>
  %y = autopar.matmul %x, %w : (tensor<2x10x64xf32>, tensor<64x96xf32>) -> tensor<2x10x96xf32>
  return %y : tensor<2x10x96xf32>
}

// -----

// A convolution as an im2col product: the im2col copy and the packed weight
// are bf16 (the weight, on the left, is extended per call: M x K conversions
// against M x K x positions products), the epilogue adds the bias in f32.
// Attention's batched matmul packs both bf16 activations per call.

shard.grid @grid(shape = 1)
// AVX512-LABEL: func.func @conv
// AVX512: autopar.weight "conv.weight" {autopar.packed_source_type = tensor<32x8x3x3xbf16>, autopar.packed_tiles = array<i64: 8, 1>, autopar.packed_transposed} : tensor<4x72x8x1xbf16>
// AVX512: linalg.generic {{.*}} ins(%{{.*}} : tensor<1x8x10x10xbf16>) outs(%{{.*}} : tensor<2x8x3x3x32xbf16>)
// AVX512: linalg.generic {{.*}} ins(%{{.*}} : tensor<4x72x8x1xbf16>) outs(%{{.*}} : tensor<4x72x8x1xf32>)
// AVX512: linalg.mmt4d ins(%{{.*}}, %{{.*}} : tensor<4x72x8x1xf32>, tensor<2x72x32x1xbf16>) outs(%{{.*}} : tensor<4x2x8x32xf32>)
// AVX512: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<32x1x8x8xf32>, tensor<32xf32>)
// AVX512-LABEL: func.func @attention
// AVX512: linalg.batch_mmt4d ins(%{{.*}}, %{{.*}} : tensor<2x2x8x8x1xf32>, tensor<2x1x8x32x1xbf16>) outs(%{{.*}} : tensor<2x2x1x8x32xf32>)
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
