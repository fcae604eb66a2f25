// RUN: autopar-opt %s -split-input-file --autopar-pack-contractions="isa=avx512 pack-weights=true winograd=false" | FileCheck %s --check-prefix=AVX512
// RUN: autopar-opt %s -split-input-file --autopar-pack-contractions="isa=avx2 pack-weights=true winograd=false" | FileCheck %s --check-prefix=AVX2
// RUN: autopar-opt %s -split-input-file --autopar-pack-contractions="isa=generic" | FileCheck %s --check-prefix=PERCALL
// RUN: not autopar-opt %s -split-input-file --autopar-pack-contractions="isa=sse9" 2>&1 | FileCheck %s --check-prefix=BADISA

// BADISA: autopar-pack-contractions: unknown isa 'sse9' (expected auto, amx, avx512bf16, avx512, avx2 or generic)

// A weight that only feeds a matmul: packed at compile time (its type is the
// mmt4d right-hand side layout); the activation is packed per call, padded
// (20 rows do not divide into 8 or 6). Batch dimensions fold into the rows.

shard.grid @grid(shape = 1)
// AVX512-LABEL: func.func @matmul_weight
// AVX512: %[[W:.*]] = autopar.weight "fc.weight" {autopar.packed_source_type = tensor<64x96xf32>, autopar.packed_tiles = array<i64: 32, 1>} : tensor<3x64x32x1xf32>
// AVX512: %[[X:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0, 1], [2]] : tensor<2x10x64xf32> into tensor<20x64xf32>
// AVX512: %[[XP:.*]] = linalg.pack %[[X]] padding_value(%{{.*}} : f32) inner_dims_pos = [0, 1] inner_tiles = [8, 1] into %{{.*}} : tensor<20x64xf32> -> tensor<3x64x8x1xf32>
// AVX512: %[[ACC:.*]] = linalg.fill {{.*}} -> tensor<3x3x8x32xf32>
// AVX512: %[[C:.*]] = linalg.mmt4d ins(%[[XP]], %[[W]] : tensor<3x64x8x1xf32>, tensor<3x64x32x1xf32>) outs(%[[ACC]] : tensor<3x3x8x32xf32>)
// AVX512: %[[Y:.*]] = linalg.unpack %[[C]] inner_dims_pos = [0, 1] inner_tiles = [8, 32] into %{{.*}} : tensor<3x3x8x32xf32> -> tensor<20x96xf32>
// AVX512: tensor.expand_shape %[[Y]] {{\[\[}}0, 1], [2]] output_shape [2, 10, 96] : tensor<20x96xf32> into tensor<2x10x96xf32>
// AVX512-NOT: autopar.matmul

// AVX2-LABEL: func.func @matmul_weight
// AVX2: autopar.weight "fc.weight" {autopar.packed_source_type = tensor<64x96xf32>, autopar.packed_tiles = array<i64: 16, 1>} : tensor<6x64x16x1xf32>
// AVX2: linalg.pack {{.*}} inner_tiles = [6, 1] {{.*}} : tensor<20x64xf32> -> tensor<4x64x6x1xf32>
// AVX2: linalg.mmt4d {{.*}} outs(%{{.*}} : tensor<4x6x6x16xf32>)

// PERCALL-LABEL: func.func @matmul_weight
// PERCALL: %[[W:.*]] = autopar.weight "fc.weight" : tensor<64x96xf32>
// PERCALL: linalg.pack %{{.*}} inner_dims_pos = [0, 1] inner_tiles = [4, 1]
// PERCALL: %[[WP:.*]] = linalg.pack %[[W]] outer_dims_perm = [1, 0] inner_dims_pos = [1, 0] inner_tiles = [8, 1] into %{{.*}} : tensor<64x96xf32> -> tensor<12x64x8x1xf32>
// PERCALL: linalg.mmt4d ins(%{{.*}}, %[[WP]] : tensor<5x64x4x1xf32>, tensor<12x64x8x1xf32>)
func.func @matmul_weight(%x: tensor<2x10x64xf32>) -> tensor<2x10x96xf32> {
  %w = autopar.weight "fc.weight" : tensor<64x96xf32>
  %y = autopar.matmul %x, %w : (tensor<2x10x64xf32>, tensor<64x96xf32>) -> tensor<2x10x96xf32>
  return %y : tensor<2x10x96xf32>
}

// -----

// Gemm with trans_b: the weight is stored N x K and packed without the outer
// transposition; alpha, beta and the broadcast bias apply after the unpack.

shard.grid @grid(shape = 1)
// AVX512-LABEL: func.func @gemm_trans_b
// AVX512: %[[W:.*]] = autopar.weight "fc.weight" {autopar.packed_source_type = tensor<64x16xf32>, autopar.packed_tiles = array<i64: 32, 1>, autopar.packed_transposed} : tensor<2x16x32x1xf32>
// AVX512: linalg.mmt4d ins(%{{.*}}, %[[W]] : tensor<1x16x8x1xf32>, tensor<2x16x32x1xf32>)
// AVX512: %[[Y:.*]] = linalg.unpack
// AVX512: linalg.generic {{.*}} ins(%[[Y]], %{{.*}} : tensor<8x64xf32>, tensor<64xf32>)
// AVX512: arith.mulf
// AVX512: arith.mulf
// AVX512: arith.addf

// PERCALL-LABEL: func.func @gemm_trans_b
// PERCALL: linalg.pack %{{.*}} inner_dims_pos = [0, 1] inner_tiles = [8, 1] into %{{.*}} : tensor<64x16xf32> -> tensor<8x16x8x1xf32>
func.func @gemm_trans_b(%x: tensor<8x16xf32>) -> tensor<8x64xf32> {
  %w = autopar.weight "fc.weight" : tensor<64x16xf32>
  %b = autopar.weight "fc.bias" : tensor<64xf32>
  %y = autopar.gemm %x, %w, %b {alpha = 2.0 : f32, beta = 0.5 : f32, trans_b = true} : (tensor<8x16xf32>, tensor<64x16xf32>, tensor<64xf32>) -> tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}

// -----

// A weight with another use (here as an activation) stays unpacked and is
// packed per call, and so is one whose columns (40) do not divide into the
// tile (32: padding would grow its file); a matrix-vector product and a batched matmul of two
// activations are left alone.

shard.grid @grid(shape = 1)
// AVX512-LABEL: func.func @not_packed
// AVX512: %[[W:.*]] = autopar.weight "w" : tensor<16x16xf32>
// AVX512: linalg.pack %[[W]] {{.*}}outer_dims_perm = [1, 0]
// AVX512: %[[W40:.*]] = autopar.weight "w40" : tensor<16x40xf32>
// AVX512: linalg.pack %[[W40]] padding_value({{.*}}) outer_dims_perm = [1, 0] inner_dims_pos = [1, 0] inner_tiles = [32, 1] {{.*}} : tensor<16x40xf32> -> tensor<2x16x32x1xf32>
// AVX512: autopar.matmul %{{.*}}, %{{.*}} : (tensor<16xf32>, tensor<16x16xf32>) -> tensor<16xf32>
// AVX512: autopar.matmul %{{.*}}, %{{.*}} : (tensor<1x4x16xf32>, tensor<2x16x4xf32>) -> tensor<2x4x4xf32>
func.func @not_packed(%x: tensor<4x16xf32>, %v: tensor<16xf32>, %p: tensor<1x4x16xf32>, %q: tensor<2x16x4xf32>) -> (tensor<4x16xf32>, tensor<4x40xf32>, tensor<16xf32>, tensor<2x4x4xf32>) {
  %w = autopar.weight "w" : tensor<16x16xf32>
  %y = autopar.matmul %x, %w : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %w40 = autopar.weight "w40" : tensor<16x40xf32>
  %y40 = autopar.matmul %x, %w40 : (tensor<4x16xf32>, tensor<16x40xf32>) -> tensor<4x40xf32>
  %z = autopar.matmul %v, %w : (tensor<16xf32>, tensor<16x16xf32>) -> tensor<16xf32>
  %b = autopar.matmul %p, %q : (tensor<1x4x16xf32>, tensor<2x16x4xf32>) -> tensor<2x4x4xf32>
  return %y, %y40, %z, %b : tensor<4x16xf32>, tensor<4x40xf32>, tensor<16xf32>, tensor<2x4x4xf32>
}

// -----

// A batched matmul of two activations (attention): both packed per call,
// batch dimensions collapsed, linalg.batch_mmt4d.

// AVX2-LABEL: func.func @batched
// AVX2: %[[Q:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0, 1], [2], [3]] : tensor<2x3x20x16xf32> into tensor<6x20x16xf32>
// AVX2: %[[K:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0, 1], [2], [3]] : tensor<2x3x16x40xf32> into tensor<6x16x40xf32>
// AVX2: %[[QP:.*]] = linalg.pack %[[Q]] padding_value({{.*}}) inner_dims_pos = [1, 2] inner_tiles = [6, 1] {{.*}} -> tensor<6x4x16x6x1xf32>
// AVX2: %[[KP:.*]] = linalg.pack %[[K]] padding_value({{.*}}) outer_dims_perm = [0, 2, 1] inner_dims_pos = [2, 1] inner_tiles = [16, 1] {{.*}} -> tensor<6x3x16x16x1xf32>
// AVX2: %[[C:.*]] = linalg.batch_mmt4d ins(%[[QP]], %[[KP]] : {{.*}}) outs(%{{.*}} : tensor<6x4x3x6x16xf32>)
// AVX2: %[[Y:.*]] = linalg.unpack %[[C]] inner_dims_pos = [1, 2] inner_tiles = [6, 16] {{.*}} -> tensor<6x20x40xf32>
// AVX2: tensor.expand_shape %[[Y]] {{\[\[}}0, 1], [2], [3]] output_shape [2, 3, 20, 40]
func.func @batched(%q: tensor<2x3x20x16xf32>, %k: tensor<2x3x16x40xf32>) -> tensor<2x3x20x40xf32> {
  %y = autopar.matmul %q, %k : (tensor<2x3x20x16xf32>, tensor<2x3x16x40xf32>) -> tensor<2x3x20x40xf32>
  return %y : tensor<2x3x20x40xf32>
}

// -----

// A chain of contractions: the second reads the first's (rewritten) result.

// AVX2-LABEL: func.func @chain
// AVX2: %[[Y1:.*]] = linalg.unpack
// AVX2: linalg.pack %[[Y1]]
// AVX2: linalg.mmt4d
// AVX2: %[[Y2:.*]] = linalg.unpack
// AVX2: return %[[Y2]]
func.func @chain(%x: tensor<8x16xf32>, %w1: tensor<16x16xf32>, %w2: tensor<16x16xf32>) -> tensor<8x16xf32> {
  %h = autopar.matmul %x, %w1 : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %y = autopar.matmul %h, %w2 : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// A 3x3 convolution with strides and pads, as `W (M x K) * cols^T`: the
// weight [M, C, kh, kw] is the packed left operand (tiles of m0 = 8 output
// channels, packed at compile time) and the im2col matrix the right one, its
// tiles 32 output positions (n, oh, ow) flattened, written by one copy
// generic straight from the zero-padded input. The accumulator holds rows of
// 32 positions per channel: a transpose that keeps those rows, a reshape and
// one elementwise generic (bias, batch first) give NCHW; every step moves
// whole rows. With AVX2's 6-row tiles the 32 channels would need 36 rows
// (more than a sixteenth of padding): the weight stays on the right, and the
// rows of the product are the positions (read back through one generic).

shard.grid @grid(shape = 1)
// AVX512-DAG: #[[FLAT:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0 * 2 + d4 floordiv 16, d1, ((d4 floordiv 4) mod 4) * 2 + d2, (d4 mod 4) * 2 + d3)>
// AVX512-DAG: #[[CM:.*]] = affine_map<(d0, d1, d2, d3) -> (d1, d0, d2, d3)>
// AVX512-DAG: #[[BIAS:.*]] = affine_map<(d0, d1, d2, d3) -> (d1)>
// AVX512-LABEL: func.func @conv3x3
// AVX512: %[[W:.*]] = autopar.weight "conv.weight" {autopar.packed_source_type = tensor<32x4x3x3xf32>, autopar.packed_tiles = array<i64: 8, 1>, autopar.packed_transposed} : tensor<4x36x8x1xf32>
// AVX512: %[[B:.*]] = autopar.weight "conv.bias" : tensor<32xf32>
// AVX512: %[[P:.*]] = tensor.pad %{{.*}} low[0, 0, 1, 1] high[0, 0, 0, 0]
// AVX512: %[[COLS:.*]] = linalg.generic {indexing_maps = [#[[FLAT]], {{.*}}]{{.*}} ins(%[[P]] : tensor<2x4x9x9xf32>) outs(%{{.*}} : tensor<1x4x3x3x32xf32>)
// AVX512: %[[F:.*]] = tensor.collapse_shape %[[COLS]] {{\[\[}}0], [1, 2, 3], [4]] : tensor<1x4x3x3x32xf32> into tensor<1x36x32xf32>
// AVX512: %[[R:.*]] = tensor.expand_shape %[[F]] {{\[\[}}0], [1], [2, 3]] output_shape [1, 36, 32, 1] : tensor<1x36x32xf32> into tensor<1x36x32x1xf32>
// AVX512: %[[C:.*]] = linalg.mmt4d ins(%[[W]], %[[R]] : tensor<4x36x8x1xf32>, tensor<1x36x32x1xf32>) {{.*}} -> tensor<4x1x8x32xf32>
// AVX512: %[[T:.*]] = linalg.transpose ins(%[[C]] : tensor<4x1x8x32xf32>) outs(%{{.*}} : tensor<4x8x1x32xf32>) permutation = [0, 2, 1, 3]
// AVX512: %[[M:.*]] = tensor.collapse_shape %[[T]] {{\[\[}}0, 1], [2, 3]] : tensor<4x8x1x32xf32> into tensor<32x32xf32>
// AVX512: %[[V:.*]] = tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2, 3]] output_shape [32, 2, 4, 4]
// AVX512: %[[Y:.*]] = linalg.generic {indexing_maps = [#[[CM]], #[[BIAS]], {{.*}}]{{.*}} ins(%[[V]], %[[B]] : tensor<32x2x4x4xf32>, tensor<32xf32>) outs(%{{.*}} : tensor<2x32x4x4xf32>)
// AVX512: arith.addf
// AVX512: return %[[Y]]
// AVX512-NOT: autopar.conv
// AVX512-NOT: linalg.unpack

// AVX2-DAG: #[[ACC:.*]] = affine_map<(d0, d1, d2, d3) -> (((d0 * 4 + d2) * 4 + d3) floordiv 6, d1 floordiv 16, ((d0 * 4 + d2) * 4 + d3) mod 6, d1 mod 16)>
// AVX2-LABEL: func.func @conv3x3
// AVX2: %[[W:.*]] = autopar.weight "conv.weight" {autopar.packed_source_type = tensor<32x4x3x3xf32>, autopar.packed_tiles = array<i64: 16, 1>, autopar.packed_transposed} : tensor<2x36x16x1xf32>
// AVX2: tensor.pad %{{.*}} low[0, 0, 1, 1] high[1, 0, 0, 0]
// AVX2: %[[C:.*]] = linalg.mmt4d ins(%{{.*}}, %[[W]] : tensor<6x36x6x1xf32>, tensor<2x36x16x1xf32>)
// AVX2: linalg.generic {indexing_maps = [#[[ACC]], {{.*}}]{{.*}} ins(%[[C]], %{{.*}} : tensor<6x2x6x16xf32>, tensor<32xf32>) outs(%{{.*}} : tensor<2x32x4x4xf32>)

// PERCALL-LABEL: func.func @conv3x3
// PERCALL: %[[W:.*]] = autopar.weight "conv.weight" : tensor<32x4x3x3xf32>
// PERCALL: %[[W2:.*]] = tensor.collapse_shape %[[W]] {{\[\[}}0], [1, 2, 3]] : tensor<32x4x3x3xf32> into tensor<32x36xf32>
// PERCALL: %[[WP:.*]] = linalg.pack %[[W2]] inner_dims_pos = [0, 1] inner_tiles = [4, 1] {{.*}} -> tensor<8x36x4x1xf32>
// PERCALL: linalg.mmt4d ins(%[[WP]], %{{.*}} : tensor<8x36x4x1xf32>, tensor<4x36x8x1xf32>)
func.func @conv3x3(%x: tensor<2x4x8x8xf32>) -> tensor<2x32x4x4xf32> {
  %w = autopar.weight "conv.weight" : tensor<32x4x3x3xf32>
  %b = autopar.weight "conv.bias" : tensor<32xf32>
  %y = autopar.conv %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<32x4x3x3xf32>, tensor<32xf32>) -> tensor<2x32x4x4xf32>
  return %y : tensor<2x32x4x4xf32>
}

// -----

// Output lines of 28 with AVX-512's 32-position tiles: each line is padded to
// one tile (4 positions in 32 wasted, under the quarter allowed), so the
// im2col reads are affine without division: x[n, c, oh + kh, (lt * 32 + i) +
// kw], from an input padded by 5 more columns at the end. The padding of each
// line is dropped by a slice before the epilogue; AVX2 pads its 64 channels to
// 66 (11 tiles of 6).

shard.grid @grid(shape = 1)
// AVX512-DAG: #[[LINES:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d3, d1 + d4, d2 * 32 + d6 + d5)>
// AVX512-LABEL: func.func @lines
// AVX512: %[[P:.*]] = tensor.pad %{{.*}} low[0, 0, 1, 1] high[0, 0, 1, 5]
// AVX512: %[[COLS:.*]] = linalg.generic {indexing_maps = [#[[LINES]], {{.*}}]{{.*}} ins(%[[P]] : tensor<2x4x30x34xf32>) outs(%{{.*}} : tensor<2x28x1x4x3x3x32xf32>)
// AVX512: %[[F:.*]] = tensor.collapse_shape %[[COLS]] {{\[\[}}0, 1, 2], [3, 4, 5], [6]] : tensor<2x28x1x4x3x3x32xf32> into tensor<56x36x32xf32>
// AVX512: %[[R:.*]] = tensor.expand_shape %[[F]] {{\[\[}}0], [1], [2, 3]] output_shape [56, 36, 32, 1] : tensor<56x36x32xf32> into tensor<56x36x32x1xf32>
// AVX512: %[[C:.*]] = linalg.mmt4d ins(%{{.*}}, %[[R]] : tensor<8x36x8x1xf32>, tensor<56x36x32x1xf32>)
// AVX512: linalg.transpose ins(%[[C]] : tensor<8x56x8x32xf32>) outs(%{{.*}} : tensor<8x8x56x32xf32>) permutation = [0, 2, 1, 3]
// AVX512: tensor.collapse_shape %{{.*}} : tensor<8x8x56x32xf32> into tensor<64x1792xf32>
// AVX512: tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2, 3]] output_shape [64, 2, 28, 32]
// AVX512: %[[S:.*]] = tensor.extract_slice %{{.*}}[0, 0, 0, 0] [64, 2, 28, 28] [1, 1, 1, 1]
// AVX512: linalg.generic {{.*}} ins(%[[S]], %{{.*}} : tensor<64x2x28x28xf32>, tensor<64xf32>) outs(%{{.*}} : tensor<2x64x28x28xf32>)

// AVX2-LABEL: func.func @lines
// AVX2: linalg.mmt4d ins(%{{.*}}, %{{.*}} : tensor<11x36x6x1xf32>, tensor<112x36x16x1xf32>)
// AVX2: tensor.extract_slice %{{.*}}[0, 0, 0, 0] [64, 2, 28, 28] [1, 1, 1, 1] : tensor<66x2x28x32xf32> to tensor<64x2x28x28xf32>
func.func @lines(%x: tensor<2x4x28x28xf32>, %b: tensor<64xf32>) -> tensor<2x64x28x28xf32> {
  %w = autopar.weight "conv.weight" : tensor<64x4x3x3xf32>
  %y = autopar.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x4x28x28xf32>, tensor<64x4x3x3xf32>, tensor<64xf32>) -> tensor<2x64x28x28xf32>
  return %y : tensor<2x64x28x28xf32>
}

// -----

// Ten output channels would fill 16 rows of AVX-512's 8-row tiles: the
// weight stays the right operand (packed per call, since 32 columns would
// more than triple it) and the rows of the product are the output positions.
// Output lines of 7 fit one 8-row tile each (one row in 8 wasted, under the
// quarter allowed): x[n, c, oh + kh, (lt * 8 + i) + kw], and one generic reads
// the accumulator tiles back in NCHW order.

shard.grid @grid(shape = 1)
// AVX512-DAG: #[[LINES:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d3, d1 + d4, d2 * 8 + d6 + d5)>
// AVX512-DAG: #[[LACC:.*]] = affine_map<(d0, d1, d2, d3) -> (d0 * 7 + d2 + d3 floordiv 8, d1 floordiv 32, d3 mod 8, d1 mod 32)>
// AVX512-LABEL: func.func @narrow
// AVX512: %[[W:.*]] = autopar.weight "conv.weight" : tensor<10x4x3x3xf32>
// AVX512: %[[P:.*]] = tensor.pad %{{.*}} low[0, 0, 1, 1] high[0, 0, 1, 2]
// AVX512: %[[COLS:.*]] = linalg.generic {indexing_maps = [#[[LINES]], {{.*}}]{{.*}} ins(%[[P]] : tensor<1x4x9x10xf32>) outs(%{{.*}} : tensor<1x7x1x4x3x3x8xf32>)
// AVX512: %[[F:.*]] = tensor.collapse_shape %[[COLS]] {{\[\[}}0, 1, 2], [3, 4, 5], [6]] : tensor<1x7x1x4x3x3x8xf32> into tensor<7x36x8xf32>
// AVX512: %[[A:.*]] = tensor.expand_shape %[[F]] {{\[\[}}0], [1], [2, 3]] output_shape [7, 36, 8, 1] : tensor<7x36x8xf32> into tensor<7x36x8x1xf32>
// AVX512: linalg.pack %{{.*}} inner_dims_pos = [0, 1] inner_tiles = [32, 1] {{.*}} -> tensor<1x36x32x1xf32>
// AVX512: %[[C:.*]] = linalg.mmt4d ins(%[[A]], %{{.*}} : tensor<7x36x8x1xf32>, tensor<1x36x32x1xf32>)
// AVX512: linalg.generic {indexing_maps = [#[[LACC]], {{.*}}]{{.*}} ins(%[[C]] : tensor<7x1x8x32xf32>) outs(%{{.*}} : tensor<1x10x7x7xf32>)
func.func @narrow(%x: tensor<1x4x7x7xf32>) -> tensor<1x10x7x7xf32> {
  %w = autopar.weight "conv.weight" : tensor<10x4x3x3xf32>
  %y = autopar.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x4x7x7xf32>, tensor<10x4x3x3xf32>) -> tensor<1x10x7x7xf32>
  return %y : tensor<1x10x7x7xf32>
}

// -----

// 32 output channels fill AVX-512's 8-row tiles, but 7x7 = 49 positions take
// 64 columns in tiles of 32 against 56 rows in tiles of 8, and the reduction
// (64 x 3 x 3 = 576) is long enough for the kernel to outweigh the gather of
// the epilogue: the weight is the right operand (packed at compile time in
// 32-column tiles) and the positions the rows. With AVX2's 6-row tiles the
// 32 channels would take 36 rows: the weight is on the right there too.

shard.grid @grid(shape = 1)
// AVX512-LABEL: func.func @short_lines_long_reduction
// AVX512: autopar.weight "conv.weight" {{.*}}autopar.packed_tiles = array<i64: 32, 1>{{.*}} : tensor<1x576x32x1xf32>
// AVX512: linalg.mmt4d ins(%{{.*}}, %{{.*}} : tensor<7x576x8x1xf32>, tensor<1x576x32x1xf32>)
// AVX2-LABEL: func.func @short_lines_long_reduction
// AVX2: autopar.weight "conv.weight" {{.*}}autopar.packed_tiles = array<i64: 16, 1>{{.*}} : tensor<2x576x16x1xf32>
// AVX2: linalg.mmt4d ins(%{{.*}}, %{{.*}} : tensor<9x576x6x1xf32>, tensor<2x576x16x1xf32>)
func.func @short_lines_long_reduction(%x: tensor<1x64x7x7xf32>) -> tensor<1x32x7x7xf32> {
  %w = autopar.weight "conv.weight" : tensor<32x64x3x3xf32>
  %y = autopar.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x64x7x7xf32>, tensor<32x64x3x3xf32>) -> tensor<1x32x7x7xf32>
  return %y : tensor<1x32x7x7xf32>
}

// -----

// A 1x1 convolution of one image needs no im2col: X [C, H * W] holds the
// columns of the right operand; padded to 32 positions, its rows of 32
// positions are moved into tiles by a transpose that keeps them.

shard.grid @grid(shape = 1)
// AVX512-LABEL: func.func @pointwise
// AVX512: %[[W:.*]] = autopar.weight "pw.weight" {{.*}}autopar.packed_tiles = array<i64: 8, 1>{{.*}} : tensor<8x16x8x1xf32>
// AVX512: %[[X:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0, 1], [2, 3]] : tensor<1x16x5x5xf32> into tensor<16x25xf32>
// AVX512: %[[XP:.*]] = tensor.pad %[[X]] low[0, 0] high[0, 7]
// AVX512: %[[E:.*]] = tensor.expand_shape %[[XP]] {{\[\[}}0], [1, 2]] output_shape [16, 1, 32]
// AVX512: %[[T:.*]] = linalg.transpose ins(%[[E]] : tensor<16x1x32xf32>) outs(%{{.*}} : tensor<1x16x32xf32>) permutation = [1, 0, 2]
// AVX512: %[[R:.*]] = tensor.expand_shape %[[T]] {{\[\[}}0], [1], [2, 3]] output_shape [1, 16, 32, 1]
// AVX512: linalg.mmt4d ins(%[[W]], %[[R]] : tensor<8x16x8x1xf32>, tensor<1x16x32x1xf32>)
func.func @pointwise(%x: tensor<1x16x5x5xf32>) -> tensor<1x64x5x5xf32> {
  %w = autopar.weight "pw.weight" : tensor<64x16x1x1xf32>
  %y = autopar.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x16x5x5xf32>, tensor<64x16x1x1xf32>) -> tensor<1x64x5x5xf32>
  return %y : tensor<1x64x5x5xf32>
}

// -----

// A grouped (here depthwise) convolution is not one product: left alone.

shard.grid @grid(shape = 1)
// AVX512-LABEL: func.func @depthwise
// AVX512: autopar.conv
// AVX512-NOT: linalg.mmt4d
func.func @depthwise(%x: tensor<1x8x5x5xf32>, %w: tensor<8x1x3x3xf32>) -> tensor<1x8x3x3xf32> {
  %y = autopar.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 8 : i64} : (tensor<1x8x5x5xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x3x3xf32>
  return %y : tensor<1x8x3x3xf32>
}

// -----

// Tiles that do not divide the weight: 1000 columns pad to 1024 (2.4% more,
// within the sixteenth allowed) and the weight is packed at compile time with
// its zero padding; 40 columns would pad to 64 (60% more): packed per call.

shard.grid @grid(shape = 1)
// AVX512-LABEL: func.func @padded_weights
// AVX512: autopar.weight "head.weight" {autopar.packed_source_type = tensor<64x1000xf32>, autopar.packed_tiles = array<i64: 32, 1>} : tensor<32x64x32x1xf32>
// AVX512: %[[W2:.*]] = autopar.weight "small.weight" : tensor<64x40xf32>
// AVX512: linalg.pack %[[W2]] padding_value({{.*}}) outer_dims_perm = [1, 0] inner_dims_pos = [1, 0] inner_tiles = [32, 1] {{.*}} -> tensor<2x64x32x1xf32>
func.func @padded_weights(%x: tensor<8x64xf32>) -> (tensor<8x1000xf32>, tensor<8x40xf32>) {
  %w = autopar.weight "head.weight" : tensor<64x1000xf32>
  %y = autopar.matmul %x, %w : (tensor<8x64xf32>, tensor<64x1000xf32>) -> tensor<8x1000xf32>
  %w2 = autopar.weight "small.weight" : tensor<64x40xf32>
  %z = autopar.matmul %x, %w2 : (tensor<8x64xf32>, tensor<64x40xf32>) -> tensor<8x40xf32>
  return %y, %z : tensor<8x1000xf32>, tensor<8x40xf32>
}

// -----

// A 1x1 convolution whose output channels fill the m0-row tiles and whose
// positions fill the n0-wide ones (64 = 2 x 32) reads X [C, positions] in
// place as K x P1 x n0 x 1 and accumulates into its output, viewed as
// M1 x m0 x P1 x n0 and initialized with the bias: one `linalg.contract`
// with the loops (m1, p1, m0, n0, k, k0), no pack, transpose or epilogue.
// 16 positions (4x4) take column tiles of 16 (n0 / 2). AVX2's 6-row tiles
// do not divide 16 channels: the packed form stays.

// AVX512-DAG: #[[PW:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d4, d2, d5)>
// AVX512-DAG: #[[PX:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d1, d3, d5)>
// AVX512-DAG: #[[PY:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d2, d1, d3)>
// AVX512-LABEL: func.func @pointwise_in_place
// AVX512: %[[W:.*]] = autopar.weight "pw.weight" {{.*}} : tensor<2x32x8x1xf32>
// AVX512: %[[X:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0, 1], [2, 3]] : tensor<1x32x8x8xf32> into tensor<32x64xf32>
// AVX512: %[[XC:.*]] = tensor.expand_shape %[[X]] {{\[\[}}0], [1, 2, 3]] output_shape [32, 2, 32, 1]
// AVX512: %[[B:.*]] = tensor.expand_shape %{{.*}} {{\[\[}}0, 1]] output_shape [2, 8] : tensor<16xf32> into tensor<2x8xf32>
// AVX512: %[[ACC:.*]] = linalg.generic {{.*}} ins(%[[B]] : tensor<2x8xf32>) outs(%{{.*}} : tensor<2x8x2x32xf32>)
// AVX512: %[[P:.*]] = linalg.contract indexing_maps = [#[[PW]], #[[PX]], #[[PY]]] {autopar.register_tile = array<i64: 8, 32, 1>} ins(%[[W]], %[[XC]] : tensor<2x32x8x1xf32>, tensor<32x2x32x1xf32>) outs(%[[ACC]] : tensor<2x8x2x32xf32>)
// AVX512: %[[Y:.*]] = tensor.collapse_shape %[[P]] {{\[\[}}0, 1], [2, 3]] : tensor<2x8x2x32xf32> into tensor<16x64xf32>
// AVX512: tensor.expand_shape %[[Y]] {{\[\[}}0, 1], [2, 3]] output_shape [1, 16, 8, 8]
// AVX512-NOT: linalg.transpose
// AVX512-NOT: linalg.mmt4d
// AVX512-LABEL: func.func @pointwise_half_tiles
// AVX512: linalg.contract {{.*}} {autopar.register_tile = array<i64: 8, 16, 1>} {{.*}} outs(%{{.*}} : tensor<2x8x1x16xf32>)
// AVX2-LABEL: func.func @pointwise_in_place
// AVX2: linalg.mmt4d
shard.grid @grid(shape = 1)
func.func @pointwise_in_place(%x: tensor<1x32x8x8xf32>) -> tensor<1x16x8x8xf32> {
  %w = autopar.weight "pw.weight" : tensor<16x32x1x1xf32>
  %b = autopar.weight "pw.bias" : tensor<16xf32>
  %y = autopar.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x32x8x8xf32>, tensor<16x32x1x1xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
  return %y : tensor<1x16x8x8xf32>
}

func.func @pointwise_half_tiles(%x: tensor<1x32x4x4xf32>) -> tensor<1x16x4x4xf32> {
  %w = autopar.weight "pw2.weight" : tensor<16x32x1x1xf32>
  %y = autopar.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x32x4x4xf32>, tensor<16x32x1x1xf32>) -> tensor<1x16x4x4xf32>
  return %y : tensor<1x16x4x4xf32>
}
