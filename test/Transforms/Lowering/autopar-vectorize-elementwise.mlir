// RUN: autopar-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(autopar-convert-to-linalg,canonicalize,autopar-vectorize-elementwise{isa=avx2}))' | FileCheck %s --check-prefix=AVX2
// RUN: autopar-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(autopar-convert-to-linalg,canonicalize,autopar-vectorize-elementwise{isa=avx512}))' | FileCheck %s --check-prefix=AVX512
// RUN: not autopar-opt %s --pass-pipeline='builtin.module(func.func(autopar-vectorize-elementwise{isa=mmx}))' 2>&1 | FileCheck %s --check-prefix=BADISA

// BADISA: autopar-vectorize-elementwise: unknown isa 'mmx' (expected auto, amx, avx512bf16, avx512, avx2 or generic)

// An elementwise op on NCHW: the four loops are contiguous in both operands
// and collapse into one of 128 elements, in vectors of 8 (AVX2) or 16.

// AVX2-LABEL: func.func @relu
// AVX2: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1, 2, 3]] : tensor<2x4x4x4xf32> into tensor<128xf32>
// AVX2: scf.for %{{.*}} = %c0 to %c128 step %c8
// AVX2: vector.transfer_read {{.*}} : tensor<128xf32>, vector<8xf32>
// AVX2: arith.select {{.*}} : vector<8xi1>, vector<8xf32>
// AVX2: vector.transfer_write {{.*}} : vector<8xf32>, tensor<128xf32>
// AVX2: tensor.expand_shape {{.*}} output_shape [2, 4, 4, 4] : tensor<128xf32> into tensor<2x4x4x4xf32>
// AVX512-LABEL: func.func @relu
// AVX512: arith.select {{.*}} : vector<16xi1>, vector<16xf32>
func.func @relu(%x: tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32> {
  %y = autopar.relu %x : (tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
  return %y : tensor<2x4x4x4xf32>
}

// -----

// An operand that does not read the outer loops: H and W collapse (the
// operand reads them contiguously), C stays a loop of its own.

// AVX2-LABEL: func.func @broadcast
// AVX2: tensor.collapse_shape %{{.*}} {{\[\[}}0], [1], [2, 3]] : tensor<1x3x4x4xf32> into tensor<1x3x16xf32>
// AVX2: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1]] : tensor<4x4xf32> into tensor<16xf32>
// AVX2: scf.for %{{.*}} = %c0 to %c3 step %c1
// AVX2: scf.for %{{.*}} = %c0 to %c16 step %c8
// AVX2: vector.transfer_read {{.*}} : tensor<1x3x16xf32>, vector<8xf32>
// AVX2: vector.transfer_read {{.*}} : tensor<16xf32>, vector<8xf32>
// AVX2: arith.addf {{.*}} : vector<8xf32>
func.func @broadcast(%x: tensor<1x3x4x4xf32>, %b: tensor<4x4xf32>) -> tensor<1x3x4x4xf32> {
  %y = autopar.add %x, %b : (tensor<1x3x4x4xf32>, tensor<4x4xf32>) -> tensor<1x3x4x4xf32>
  return %y : tensor<1x3x4x4xf32>
}

// -----

// A short innermost loop that the lanes do not divide (5 to 4 x lanes
// elements) is one vector of its length (no masked vectors: LLVM splits it
// into registers); a longer one is left scalar, as are i1 operands (a
// vector of i1 loads packed bits, a buffer of i1 holds bytes).

// AVX2-LABEL: func.func @odd
// AVX2: vector.transfer_read %{{.*}} : tensor<15xf32>, vector<15xf32>
// AVX2: arith.select %{{.*}} : vector<15xi1>, vector<15xf32>
func.func @odd(%x: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %y = autopar.relu %x : (tensor<3x5xf32>) -> tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}

// AVX2-LABEL: func.func @long_odd
// AVX2-NOT: vector.transfer_read
// AVX2: linalg.generic
func.func @long_odd(%x: tensor<3x45xf32>) -> tensor<3x45xf32> {
  %y = autopar.relu %x : (tensor<3x45xf32>) -> tensor<3x45xf32>
  return %y : tensor<3x45xf32>
}

// AVX2-LABEL: func.func @mask
// AVX2-NOT: vector.transfer_read
// AVX2: linalg.generic
func.func @mask(%c: tensor<16xi1>, %x: tensor<16xf32>, %y: tensor<16xf32>) -> tensor<16xf32> {
  %z = autopar.where %c, %x, %y : (tensor<16xi1>, tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  return %z : tensor<16xf32>
}

// -----

// The packed im2col copy of a 3x3 convolution at unit stride (as
// autopar-pack-contractions writes it: loops n, oh, line tile, c, kh, kw, i):
// the input map is not a projected permutation, but the 32 positions i of a
// tile read x[n, c, oh + kh, lt * 32 + i + kw] contiguously. Every other loop
// is tiled by one and each tile is a vector copy.

#lines32 = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d3, d1 + d4, d2 * 32 + d6 + d5)>
#copy7 = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3, d4, d5, d6)>
// AVX512-LABEL: func.func @im2col_lines
// AVX512: scf.for %[[KH:.*]] = %c0 to %c3 step %c1
// AVX512: scf.for %[[KW:.*]] = %c0 to %c3 step %c1
// AVX512: scf.for %[[I:.*]] = %c0 to %c32 step %c16
// AVX512: %[[H:.*]] = affine.apply #{{.*}}(%{{.*}}, %[[KH]])
// AVX512: %[[W:.*]] = affine.apply #{{.*}}(%c0, %[[KW]], %[[I]])
// AVX512: %[[V:.*]] = vector.transfer_read %{{.*}}[%c0, %{{.*}}, %[[H]], %[[W]]], %{{.*}} {in_bounds = [true]} : tensor<1x4x10x34xf32>, vector<16xf32>
// AVX512: vector.transfer_write %[[V]], %{{.*}}[%c0, %{{.*}}, %c0, %{{.*}}, %[[KH]], %[[KW]], %[[I]]] {in_bounds = [true]} : vector<16xf32>, tensor<1x8x1x4x3x3x32xf32>
// AVX512-NOT: linalg.generic
// AVX2-LABEL: func.func @im2col_lines
// AVX2: scf.for %{{.*}} = %c0 to %c32 step %c8
// AVX2: vector.transfer_read {{.*}} : tensor<1x4x10x34xf32>, vector<8xf32>
func.func @im2col_lines(%x: tensor<1x4x10x34xf32>) -> tensor<1x8x1x4x3x3x32xf32> {
  %e = tensor.empty() : tensor<1x8x1x4x3x3x32xf32>
  %y = linalg.generic {indexing_maps = [#lines32, #copy7], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x4x10x34xf32>) outs(%e : tensor<1x8x1x4x3x3x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x8x1x4x3x3x32xf32>
  return %y : tensor<1x8x1x4x3x3x32xf32>
}

// -----

// Tiles of 8 positions (AVX-512's 8-row tiles when the positions are the
// rows): copied as half vectors of 8.

#lines8 = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d3, d1 + d4, d2 * 8 + d6 + d5)>
#copy7b = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3, d4, d5, d6)>
// AVX512-LABEL: func.func @im2col_rows_of_8
// AVX512: vector.transfer_read {{.*}} : tensor<1x4x9x10xf32>, vector<8xf32>
// AVX512: vector.transfer_write {{.*}} : vector<8xf32>, tensor<1x7x1x4x3x3x8xf32>
func.func @im2col_rows_of_8(%x: tensor<1x4x9x10xf32>) -> tensor<1x7x1x4x3x3x8xf32> {
  %e = tensor.empty() : tensor<1x7x1x4x3x3x8xf32>
  %y = linalg.generic {indexing_maps = [#lines8, #copy7b], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x4x9x10xf32>) outs(%e : tensor<1x7x1x4x3x3x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x7x1x4x3x3x8xf32>
  return %y : tensor<1x7x1x4x3x3x8xf32>
}

// -----

// At stride 2 (resnet's stride-2 convolutions) the 32 positions of a tile
// read every other element: each vector is read as one contiguous vector of
// twice the lanes and a shuffle of its even elements, not as a gather. The
// copy pads its input by one more column, so that the last read stays in
// bounds (the first copy); without that column the read is masked (the
// second, 65 columns: its last read ends at column 65).

#strided = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d3, d1 * 2 + d4, (d2 * 32 + d6) * 2 + d5)>
#copy7c = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3, d4, d5, d6)>
// AVX512-LABEL: func.func @im2col_stride_two
// AVX512: scf.for %[[KH:.*]] = %c0 to %c3 step %c1
// AVX512: scf.for %[[KW:.*]] = %c0 to %c3 step %c1
// AVX512: scf.for %[[I:.*]] = %c0 to %c32 step %c16
// AVX512: %[[H:.*]] = affine.apply #{{.*}}(%c0, %{{.*}}, %c0, %{{.*}}, %[[KH]], %[[KW]], %[[I]])
// AVX512: %[[W:.*]] = affine.apply #{{.*}}(%c0, %{{.*}}, %c0, %{{.*}}, %[[KH]], %[[KW]], %[[I]])
// AVX512: %[[V:.*]] = vector.transfer_read %{{.*}}[%c0, %{{.*}}, %[[H]], %[[W]]], %{{.*}} {in_bounds = [true]} : tensor<1x4x9x66xf32>, vector<32xf32>
// AVX512: %[[E:.*]] = vector.shuffle %[[V]], %[[V]] [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30] : vector<32xf32>, vector<32xf32>
// AVX512: vector.transfer_write %[[E]], %{{.*}}[%c0, %{{.*}}, %c0, %{{.*}}, %[[KH]], %[[KW]], %[[I]]] {in_bounds = [true]} : vector<16xf32>, tensor<1x4x1x4x3x3x32xf32>
// AVX512: vector.transfer_read %{{.*}}[%c0, %{{.*}}, %{{.*}}, %{{.*}}], %{{.*}} : tensor<1x4x9x65xf32>, vector<32xf32>
// AVX512-NOT: linalg.generic
// AVX2-LABEL: func.func @im2col_stride_two
// AVX2: scf.for %{{.*}} = %c0 to %c32 step %c8
// AVX2: vector.transfer_read {{.*}} {in_bounds = [true]} : tensor<1x4x9x66xf32>, vector<16xf32>
// AVX2: vector.shuffle {{.*}} [0, 2, 4, 6, 8, 10, 12, 14] : vector<16xf32>, vector<16xf32>
func.func @im2col_stride_two(%x: tensor<1x4x9x66xf32>, %z: tensor<1x4x9x65xf32>) -> (tensor<1x4x1x4x3x3x32xf32>, tensor<1x4x1x4x3x3x32xf32>) {
  %e = tensor.empty() : tensor<1x4x1x4x3x3x32xf32>
  %y = linalg.generic {indexing_maps = [#strided, #copy7c], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x4x9x66xf32>) outs(%e : tensor<1x4x1x4x3x3x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x4x1x4x3x3x32xf32>
  %w = linalg.generic {indexing_maps = [#strided, #copy7c], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%z : tensor<1x4x9x65xf32>) outs(%e : tensor<1x4x1x4x3x3x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x4x1x4x3x3x32xf32>
  return %y, %w : tensor<1x4x1x4x3x3x32xf32>, tensor<1x4x1x4x3x3x32xf32>
}

// -----

// Flat rows (divisions in the map) are not contiguous, nor is a stride of
// 3: both copies stay scalar loops.

#flat = affine_map<(d0, d1, d2, d3, d4) -> (d0 * 2 + d4 floordiv 16, d1, ((d4 floordiv 4) mod 4) * 2 + d2, (d4 mod 4) * 2 + d3)>
#stride3 = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d3, d1 * 3 + d4, (d2 * 32 + d6) * 3 + d5)>
#copy7d = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3, d4, d5, d6)>
#copy5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
// AVX512-LABEL: func.func @im2col_not_contiguous
// AVX512-NOT: vector.transfer_read
// AVX512: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}]{{.*}} ins(%{{.*}} : tensor<1x4x9x99xf32>)
// AVX512-NOT: vector.transfer_read
// AVX512: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}]{{.*}} ins(%{{.*}} : tensor<2x4x9x9xf32>)
// AVX512-NOT: vector.transfer_read
func.func @im2col_not_contiguous(%x: tensor<1x4x9x99xf32>, %z: tensor<2x4x9x9xf32>) -> (tensor<1x2x1x4x3x3x32xf32>, tensor<1x4x3x3x32xf32>) {
  %e = tensor.empty() : tensor<1x2x1x4x3x3x32xf32>
  %y = linalg.generic {indexing_maps = [#stride3, #copy7d], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x4x9x99xf32>) outs(%e : tensor<1x2x1x4x3x3x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x2x1x4x3x3x32xf32>
  %f = tensor.empty() : tensor<1x4x3x3x32xf32>
  %w = linalg.generic {indexing_maps = [#flat, #copy5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%z : tensor<2x4x9x9xf32>) outs(%f : tensor<1x4x3x3x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x4x3x3x32xf32>
  return %y, %w : tensor<1x2x1x4x3x3x32xf32>, tensor<1x4x3x3x32xf32>
}

// -----

// A sum along the innermost loop (softmax over 197 keys): the 192 elements
// of whole vectors are split off (the last 5 stay a scalar reduction that
// continues from their result), read as 12 vectors per row and added to a
// vector of 16 (AVX-512) or 8 (AVX2) partial sums, which a scalar reduction
// combines.

// AVX512-LABEL: func.func @row_sum
// AVX512: %[[HEAD:.*]] = tensor.extract_slice %{{.*}}[0, 0, 0] [6, 197, 192] [1, 1, 1]
// AVX512: %[[ROWS:.*]] = tensor.expand_shape %[[HEAD]] {{\[\[}}0], [1], [2, 3]] output_shape [6, 197, 12, 16]
// AVX512: %[[ZERO:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<6x197x16xf32>)
// AVX512: scf.for %{{.*}} = %c0 to %c12 step %c1
// AVX512: %[[V:.*]] = vector.transfer_read %[[ROWS]]{{.*}} : tensor<6x197x12x16xf32>, vector<16xf32>
// AVX512: %[[ACC:.*]] = vector.transfer_read {{.*}} : tensor<6x197x16xf32>, vector<16xf32>
// AVX512: arith.addf %[[ACC]], %[[V]] : vector<16xf32>
// AVX512: %[[PARTIAL:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]} ins(%{{.*}} : tensor<6x197x16xf32>) outs(%{{.*}} : tensor<6x197xf32>)
// AVX512: %[[TAIL:.*]] = tensor.extract_slice %{{.*}}[0, 0, 192] [6, 197, 5] [1, 1, 1]
// AVX512: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[TAIL]] : tensor<6x197x5xf32>) outs(%[[PARTIAL]] : tensor<6x197xf32>)
// AVX2-LABEL: func.func @row_sum
// AVX2: tensor.expand_shape %{{.*}} {{\[\[}}0], [1], [2, 3]] output_shape [6, 197, 24, 8]
// AVX2: arith.addf %{{.*}}, %{{.*}} : vector<8xf32>
func.func @row_sum(%x: tensor<6x197x197xf32>, %init: tensor<6x197xf32>) -> tensor<6x197xf32> {
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : tensor<6x197x197xf32>) outs(%init : tensor<6x197xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %out, %in : f32
    linalg.yield %s : f32
  } -> tensor<6x197xf32>
  return %y : tensor<6x197xf32>
}

// -----

// The same sum of f32 into f64 accumulators (how sums of f32 are lowered):
// each vector of 16 f32 is extended and added to 16 f64 partial sums.

// AVX512-LABEL: func.func @row_sum_f64
// AVX512: tensor.expand_shape %{{.*}} {{\[\[}}0], [1], [2, 3]] output_shape [6, 197, 12, 16]
// AVX512: linalg.fill ins(%{{.*}} : f64) outs(%{{.*}} : tensor<6x197x16xf64>)
// AVX512: %[[V:.*]] = vector.transfer_read {{.*}} : tensor<6x197x12x16xf32>, vector<16xf32>
// AVX512: %[[ACC:.*]] = vector.transfer_read {{.*}} : tensor<6x197x16xf64>, vector<16xf64>
// AVX512: %[[W:.*]] = arith.extf %[[V]] : vector<16xf32> to vector<16xf64>
// AVX512: arith.addf %[[ACC]], %[[W]] : vector<16xf64>
// AVX512: linalg.generic {{.*}} ins(%{{.*}} : tensor<6x197x16xf64>) outs(%{{.*}} : tensor<6x197xf64>)
func.func @row_sum_f64(%x: tensor<6x197x197xf32>, %init: tensor<6x197xf64>) -> tensor<6x197xf64> {
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : tensor<6x197x197xf32>) outs(%init : tensor<6x197xf64>) {
  ^bb0(%in: f32, %out: f64):
    %e = arith.extf %in : f32 to f64
    %s = arith.addf %out, %e : f64
    linalg.yield %s : f64
  } -> tensor<6x197xf64>
  return %y : tensor<6x197xf64>
}

// -----

// A row shorter than two vectors, and a reduction over an outer loop, stay
// scalar.

// AVX512-LABEL: func.func @short_or_outer
// AVX512-NOT: vector.transfer_read
// AVX512: return
func.func @short_or_outer(%x: tensor<4x24xf32>, %i: tensor<4xf32>, %z: tensor<64x32xf32>, %j: tensor<32xf32>) -> (tensor<4xf32>, tensor<32xf32>) {
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x24xf32>) outs(%i : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.maximumf %out, %in : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %w = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%z : tensor<64x32xf32>) outs(%j : tensor<32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %out, %in : f32
    linalg.yield %s : f32
  } -> tensor<32xf32>
  return %y, %w : tensor<4xf32>, tensor<32xf32>
}

// -----

// The window views of a depthwise convolution are strided slices of its
// padded input: the rows of one view are not contiguous, so the loops over
// rows and columns are not collapsed (that would copy each view into a new
// buffer); a row of 56 columns (which AVX-512's 16 lanes do not divide) is
// one vector of 56. Each tile computes two output rows (4 vectors of 16
// lanes each): its 18 reads of the padded input cover 4 rows, each read for
// up to three window rows, and each weight broadcast serves both rows.

// AVX512-LABEL: func.func @depthwise_views
// AVX512-NOT: tensor.collapse_shape {{.*}}tensor<1x8x56x56xf32>
// AVX512: scf.for %{{.*}} = %c0 to %c56 step %c2
// AVX512-COUNT-18: vector.transfer_read {{.*}} : tensor<1x8x58x58xf32>, vector<56xf32>
// AVX512: vector.transfer_write {{.*}}[%c0, %c0] {{.*}} : vector<56xf32>, tensor<2x56xf32>
// AVX512: vector.transfer_write {{.*}}[%c1, %c0] {{.*}} : vector<56xf32>, tensor<2x56xf32>
// AVX512: tensor.insert_slice {{.*}} [1, 1, 2, 56] [1, 1, 1, 1] : tensor<2x56xf32> into tensor<1x8x56x56xf32>
// AVX2 (rows in 7 vectors of 8): tiles of four rows, one vector wide.
// AVX2-LABEL: func.func @depthwise_views
// AVX2: scf.for %{{.*}} = %c0 to %c56 step %c4
// AVX2: scf.for %{{.*}} = %c0 to %c56 step %c8
// AVX2-COUNT-36: vector.transfer_read {{.*}} : tensor<1x8x58x58xf32>, vector<8xf32>
func.func @depthwise_views(%x: tensor<1x8x56x56xf32>, %w: tensor<8x1x3x3xf32>) -> tensor<1x8x56x56xf32> {
  %y = autopar.conv %x, %w {group = 8 : i64, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x8x56x56xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x56x56xf32>
  return %y : tensor<1x8x56x56xf32>
}

// Rows of 112 in vectors of 16 (AVX-512) or 8 (AVX2): four output rows per
// tile, 4 x 9 products from 6 x 3 reads.

// AVX512-LABEL: func.func @depthwise_wide_rows
// AVX512: scf.for %{{.*}} = %c0 to %c112 step %c4
// AVX512: scf.for %{{.*}} = %c0 to %c112 step %c16
// AVX512-COUNT-36: vector.transfer_read {{.*}} : tensor<1x8x114x114xf32>, vector<16xf32>
// AVX512-COUNT-4: vector.transfer_write {{.*}} : vector<16xf32>, tensor<4x16xf32>
// AVX2-LABEL: func.func @depthwise_wide_rows
// AVX2: scf.for %{{.*}} = %c0 to %c112 step %c4
// AVX2: scf.for %{{.*}} = %c0 to %c112 step %c8
// AVX2-COUNT-36: vector.transfer_read {{.*}} : tensor<1x8x114x114xf32>, vector<8xf32>
func.func @depthwise_wide_rows(%x: tensor<1x8x112x112xf32>, %w: tensor<8x1x3x3xf32>) -> tensor<1x8x112x112xf32> {
  %y = autopar.conv %x, %w {group = 8 : i64, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x8x112x112xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x112x112xf32>
  return %y : tensor<1x8x112x112xf32>
}

// Rows of 7 are computed over the flattened padded plane (rows of 9, 63
// positions rounded up to 64): whole vectors of 16 or 8 lanes, each view a
// contiguous run of the flattened padded input.
// AVX512-LABEL: func.func @depthwise_short_rows
// AVX512: tensor.collapse_shape %{{.*}} {{\[\[}}0], [1], [2, 3]] : tensor<1x8x10x9xf32> into tensor<1x8x90xf32>
// AVX512: scf.for %{{.*}} = %c0 to %c64 step %c16
// AVX512-COUNT-9: vector.transfer_read {{.*}} : tensor<1x8x90xf32>, vector<16xf32>
// AVX512: vector.transfer_write {{.*}} : vector<16xf32>, tensor<1x8x64xf32>
// AVX512: tensor.expand_shape {{.*}} output_shape [1, 8, 7, 9]
// AVX2-LABEL: func.func @depthwise_short_rows
// AVX2: scf.for %{{.*}} = %c0 to %c64 step %c8
// AVX2-COUNT-9: vector.transfer_read {{.*}} : tensor<1x8x90xf32>, vector<8xf32>
func.func @depthwise_short_rows(%x: tensor<1x8x7x7xf32>, %w: tensor<8x1x3x3xf32>) -> tensor<1x8x7x7xf32> {
  %y = autopar.conv %x, %w {group = 8 : i64, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x8x7x7xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x7x7xf32>
  return %y : tensor<1x8x7x7xf32>
}

// A stride-2 depthwise convolution reads its views at stride 2 along the
// innermost loop: a vector of a view would be a gather, so each is read as a
// contiguous vector of twice the lanes from the padded input (row 2 y + dy,
// column dx) and its even lanes are shuffled out. The reads stay in bounds
// (the view of dx = 2 ends at column 2 + 2 x 28 = 58, the padded width).

// AVX512-LABEL: func.func @depthwise_stride_two
// AVX512-SAME: (%[[X:.*]]: tensor<1x8x56x56xf32>,
// AVX512: %[[P:.*]] = tensor.pad %[[X]]
// AVX512: scf.for %[[C:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// AVX512: scf.for %[[Y:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// AVX512: %[[R0:.*]] = arith.muli %[[Y]], %[[TWO:.*]] : index
// AVX512: %[[W0:.*]] = vector.transfer_read %[[P]][%{{.*}}, %[[C]], %[[R0]], %{{.*}}], %{{.*}} {in_bounds = [true]} : tensor<1x8x58x58xf32>, vector<56xf32>
// AVX512: vector.shuffle %[[W0]], %[[W0]] [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54] : vector<56xf32>, vector<56xf32>
// AVX512-COUNT-8: vector.transfer_read %[[P]]{{.*}} {in_bounds = [true]} : tensor<1x8x58x58xf32>, vector<56xf32>
// AVX512: vector.transfer_write {{.*}} : vector<28xf32>, tensor<1x8x28x28xf32>
func.func @depthwise_stride_two(%x: tensor<1x8x56x56xf32>, %w: tensor<8x1x3x3xf32>) -> tensor<1x8x28x28xf32> {
  %y = autopar.conv %x, %w {group = 8 : i64, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x8x56x56xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x28x28xf32>
  return %y : tensor<1x8x28x28xf32>
}

// No padding at the start: the views of dx = 2 end one column past the
// padded input (2 + 2 x 28 = 58 > 57), so their wide reads are not in bounds
// (the column past the end is an odd lane, which the shuffle drops).

// AVX512-LABEL: func.func @depthwise_stride_two_end
// AVX512: vector.transfer_read {{.*}} {in_bounds = [true]} : tensor<1x8x57x57xf32>, vector<56xf32>
// AVX512: vector.transfer_read {{.*}} {in_bounds = [true]} : tensor<1x8x57x57xf32>, vector<56xf32>
// AVX512: vector.transfer_read %{{[^{]*}} : tensor<1x8x57x57xf32>, vector<56xf32>
func.func @depthwise_stride_two_end(%x: tensor<1x8x56x56xf32>, %w: tensor<8x1x3x3xf32>) -> tensor<1x8x28x28xf32> {
  %y = autopar.conv %x, %w {group = 8 : i64, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x8x56x56xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x28x28xf32>
  return %y : tensor<1x8x28x28xf32>
}

// Stride 3: left to LLVM's loop vectorizer (views not collapsed either).

// AVX512-LABEL: func.func @depthwise_stride_three
// AVX512-NOT: vector.transfer_read
// AVX512: linalg.generic
// AVX512-SAME: ins({{.*}} : tensor<1x8x19x19xf32>
func.func @depthwise_stride_three(%x: tensor<1x8x57x57xf32>, %w: tensor<8x1x3x3xf32>) -> tensor<1x8x19x19xf32> {
  %y = autopar.conv %x, %w {group = 8 : i64, strides = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x8x57x57xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x19x19xf32>
  return %y : tensor<1x8x19x19xf32>
}
