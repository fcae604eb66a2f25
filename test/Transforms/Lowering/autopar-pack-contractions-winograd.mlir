// RUN: autopar-opt %s -split-input-file --autopar-pack-contractions="isa=avx512 pack-weights=true" | FileCheck %s
// RUN: autopar-opt %s -split-input-file --pass-pipeline='builtin.module(autopar-pack-contractions{isa=avx512 pack-weights=true},func.func(canonicalize,autopar-vectorize-elementwise{isa=avx512}))' | FileCheck %s --check-prefix=VEC
// RUN: autopar-opt %s -split-input-file --autopar-pack-contractions="isa=avx512 pack-weights=true winograd=false" | FileCheck %s --check-prefix=OFF
// RUN: autopar-opt %s -split-input-file --autopar-pack-contractions="isa=avx512" | FileCheck %s --check-prefix=OFF

// A 3x3 unit-stride convolution of 32 channels on 16x16 takes the Winograd
// form F(2x2, 3x3): the 8x8 grid of 2x2 output tiles is 2 tiles of 32
// positions (4 lines of 8), 16 x 2 x 32 x 32 x 32 multiply-adds against
// 32 x 256 x 288 for the im2col product. The weight is transformed and
// packed by the driver (16 taps of 32 x 32 in 8 x 1 tiles, on the left);
// the padded input's even and odd columns are copied apart, one generic
// transforms the 16 views of them (stride 2 along the rows, contiguous
// along the columns) into the 16 packed taps, 16 mmt4ds multiply them, one generic transforms the 16
// accumulators into the four outputs of each tile, and one generic per
// output row parity writes those rows of the result in place (the two
// outputs of a tile selected by the parity of the column) and adds the bias.

shard.grid @grid(shape = 1)
// CHECK-DAG: #[[HALVES:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4 * 2 + d3)>
// CHECK-DAG: #[[ID5:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
// CHECK-DAG: #[[GRID:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d3, d1, d4, d2, d5)>
// CHECK-DAG: #[[ID6:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4, d5)>
// CHECK-DAG: #[[LACC:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d0, d3, d5, d2, d4, d6)>
// CHECK-DAG: #[[ID7:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3, d4, d5, d6)>
// CHECK-DAG: #[[TILE:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[BIAS:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1)>
// CHECK-LABEL: func.func @winograd
// CHECK: %[[W:.*]] = autopar.weight "conv.weight" {autopar.packed_source_type = tensor<32x32x3x3xf32>, autopar.packed_tiles = array<i64: 8, 1>, autopar.packed_transposed, autopar.winograd} : tensor<16x4x32x8x1xf32>
// CHECK: %[[B:.*]] = autopar.weight "conv.bias" : tensor<32xf32>
// CHECK: %[[P:.*]] = tensor.pad %{{.*}} low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: %[[D:.*]] = linalg.generic {indexing_maps = [#[[HALVES]], #[[ID5]]]{{.*}} ins(%[[P]] : tensor<1x32x18x18xf32>) outs(%{{.*}} : tensor<1x32x18x2x9xf32>)
// CHECK: tensor.extract_slice %[[D]][0, 0, 0, 0, 0] [1, 32, 8, 1, 8] [1, 1, 2, 1, 1] : tensor<1x32x18x2x9xf32> to tensor<1x32x8x8xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0], [1], [2, 3], [4, 5]] output_shape [1, 32, 2, 4, 1, 8]
// CHECK: tensor.extract_slice %[[D]][0, 0, 3, 1, 1] [1, 32, 8, 1, 8] [1, 1, 2, 1, 1]
// CHECK: %[[V:.*]]:16 = linalg.generic {indexing_maps = [#[[GRID]], {{.*}}, #[[ID6]], {{.*}}]
// CHECK: } -> (tensor<1x2x1x32x4x8xf32>,
// CHECK: %[[V0:.*]] = tensor.collapse_shape %[[V]]#0 {{\[\[}}0, 1, 2], [3], [4, 5]] : tensor<1x2x1x32x4x8xf32> into tensor<2x32x32xf32>
// CHECK: %[[V0P:.*]] = tensor.expand_shape %[[V0]] {{\[\[}}0], [1], [2, 3]] output_shape [2, 32, 32, 1]
// CHECK: %[[U0:.*]] = tensor.extract_slice %[[W]][0, 0, 0, 0, 0] [1, 4, 32, 8, 1] [1, 1, 1, 1, 1] : tensor<16x4x32x8x1xf32> to tensor<4x32x8x1xf32>
// CHECK: %[[M0:.*]] = linalg.mmt4d ins(%[[U0]], %[[V0P]] : tensor<4x32x8x1xf32>, tensor<2x32x32x1xf32>) outs(%{{.*}} : tensor<4x2x8x32xf32>)
// CHECK: %[[A0:.*]] = tensor.expand_shape %[[M0]] {{\[\[}}0], [1, 2, 3], [4], [5, 6]] output_shape [4, 1, 2, 1, 8, 4, 8]
// CHECK-COUNT-15: linalg.mmt4d
// CHECK: %[[Y:.*]]:4 = linalg.generic {indexing_maps = [#[[LACC]], {{.*}}, #[[ID7]], #[[ID7]], #[[ID7]], #[[ID7]]]
// CHECK-SAME: ins(%[[A0]],
// CHECK: } -> (tensor<1x4x8x2x4x1x8xf32>, tensor<1x4x8x2x4x1x8xf32>, tensor<1x4x8x2x4x1x8xf32>, tensor<1x4x8x2x4x1x8xf32>)
// CHECK: %[[Y00:.*]] = tensor.collapse_shape %[[Y]]#0 {{\[\[}}0], [1, 2], [3, 4], [5, 6]] : tensor<1x4x8x2x4x1x8xf32> into tensor<1x32x8x8xf32>
// CHECK: %[[Y01:.*]] = tensor.collapse_shape %[[Y]]#1
// CHECK: %[[Y10:.*]] = tensor.collapse_shape %[[Y]]#2
// CHECK: %[[Y11:.*]] = tensor.collapse_shape %[[Y]]#3
// CHECK: %[[E:.*]] = tensor.empty() : tensor<1x32x8x2x16xf32>
// CHECK: %[[EVEN:.*]] = tensor.extract_slice %[[E]][0, 0, 0, 0, 0] [1, 32, 8, 1, 16] [1, 1, 1, 1, 1] : tensor<1x32x8x2x16xf32> to tensor<1x32x8x16xf32>
// CHECK: %[[EVENP:.*]] = tensor.expand_shape %[[EVEN]] {{\[\[}}0], [1], [2], [3, 4]] output_shape [1, 32, 8, 8, 2]
// CHECK: %[[O0:.*]] = linalg.generic {indexing_maps = [#[[TILE]], #[[TILE]], #[[BIAS]], #[[ID5]]]
// CHECK-SAME: ins(%[[Y00]], %[[Y01]], %[[B]] : {{.*}}) outs(%[[EVENP]] : tensor<1x32x8x8x2xf32>)
// CHECK: linalg.index 4
// CHECK: arith.select
// CHECK: arith.addf
// CHECK: %[[C0:.*]] = tensor.collapse_shape %[[O0]]
// CHECK: %[[H0:.*]] = tensor.insert_slice %[[C0]] into %[[E]][0, 0, 0, 0, 0] [1, 32, 8, 1, 16] [1, 1, 1, 1, 1]
// CHECK: %[[ODD:.*]] = tensor.extract_slice %[[H0]][0, 0, 0, 1, 0] [1, 32, 8, 1, 16] [1, 1, 1, 1, 1]
// CHECK: linalg.generic {{.*}} ins(%[[Y10]], %[[Y11]], %[[B]] : {{.*}})
// CHECK: %[[H1:.*]] = tensor.insert_slice %{{.*}} into %[[H0]][0, 0, 0, 1, 0] [1, 32, 8, 1, 16] [1, 1, 1, 1, 1]
// CHECK: %[[R:.*]] = tensor.collapse_shape %[[H1]] {{\[\[}}0], [1], [2, 3], [4]] : tensor<1x32x8x2x16xf32> into tensor<1x32x16x16xf32>
// CHECK: return %[[R]]
// CHECK-NOT: autopar.conv
// OFF-LABEL: func.func @winograd
// OFF-NOT: autopar.winograd
// OFF: linalg.mmt4d ins(%{{.*}}, %{{.*}} : tensor<4x288x8x1xf32>, tensor<8x288x32x1xf32>)
func.func @winograd(%x: tensor<1x32x16x16xf32>) -> tensor<1x32x16x16xf32> {
  %w = autopar.weight "conv.weight" : tensor<32x32x3x3xf32>
  %b = autopar.weight "conv.bias" : tensor<32xf32>
  %y = autopar.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x32x16x16xf32>, tensor<32x32x3x3xf32>, tensor<32xf32>) -> tensor<1x32x16x16xf32>
  return %y : tensor<1x32x16x16xf32>
}

// -----

// A 7x7 output is a 4x4 grid of tiles (the last row and column of outputs
// computed and dropped): 16 positions, exactly two tiles of 8 (2 lines of
// 4) with the weight on the right (packed in 32-channel tiles), against 64
// positions in tiles of 32 on the left. The outputs are interleaved into
// the 8x8 grid of whole tiles, by the same row generics as an even output
// (vector loops), and the 7x7 result is copied out of it.

shard.grid @grid(shape = 1)
// CHECK-DAG: #[[RACC:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d3, d5, d1, d4, d6, d2)>
// CHECK-DAG: #[[PAIR:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @odd_output
// CHECK: autopar.weight "conv.weight" {{.*}}autopar.packed_tiles = array<i64: 32, 1>{{.*}}autopar.winograd} : tensor<16x1x64x32x1xf32>
// CHECK: tensor.pad %{{.*}} low[0, 0, 1, 1] high[0, 0, 2, 2]
// CHECK: } : tensor<1x64x7x7xf32> to tensor<1x64x10x10xf32>
// CHECK: linalg.generic
// CHECK: } -> (tensor<1x2x1x64x2x4xf32>,
// CHECK: linalg.mmt4d ins(%{{.*}}, %{{.*}} : tensor<2x64x8x1xf32>, tensor<1x64x32x1xf32>) outs(%{{.*}} : tensor<2x1x8x32xf32>)
// CHECK-COUNT-15: linalg.mmt4d
// CHECK: linalg.generic {indexing_maps = [#[[RACC]],
// CHECK: tensor.collapse_shape %{{.*}}#0 {{\[\[}}0], [1, 2], [3, 4], [5, 6]] : tensor<1x1x32x2x2x1x4xf32> into tensor<1x32x4x4xf32>
// CHECK: %[[EVEN:.*]] = tensor.empty() : tensor<1x32x4x2x8xf32>
// CHECK: linalg.generic {indexing_maps = [#[[PAIR]], #[[PAIR]], {{.*}}]{{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x32x4x4xf32>, tensor<1x32x4x4xf32>) outs(%{{.*}} : tensor<1x32x4x4x2xf32>)
// CHECK: tensor.insert_slice %{{.*}} into %[[EVEN]][0, 0, 0, 0, 0] [1, 32, 4, 1, 8]
// CHECK: linalg.generic {indexing_maps = [#[[PAIR]], #[[PAIR]], {{.*}}]{{.*}} outs(%{{.*}} : tensor<1x32x4x4x2xf32>)
// CHECK: %[[ALL:.*]] = tensor.insert_slice %{{.*}}[0, 0, 0, 1, 0] [1, 32, 4, 1, 8]
// CHECK: %[[GRID:.*]] = tensor.collapse_shape %[[ALL]] {{\[\[}}0], [1], [2, 3], [4]] : tensor<1x32x4x2x8xf32> into tensor<1x32x8x8xf32>
// CHECK: %[[VIEW:.*]] = tensor.extract_slice %[[GRID]][0, 0, 0, 0] [1, 32, 7, 7] [1, 1, 1, 1] : tensor<1x32x8x8xf32> to tensor<1x32x7x7xf32>
// CHECK: %[[Y:.*]] = linalg.copy ins(%[[VIEW]] : tensor<1x32x7x7xf32>) outs(%{{.*}} : tensor<1x32x7x7xf32>)
// CHECK: return %[[Y]]
// CHECK-NOT: arith.remui
// The copy out of the even grid, vectorized: one vector of a row of 7 per
// (channel, row), read from the 8x8 grid.
// VEC-LABEL: func.func @odd_output
// VEC: %[[GRID:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0], [1], [2, 3], [4]] : tensor<1x32x4x2x8xf32> into tensor<1x32x8x8xf32>
// VEC: scf.for %[[C:.*]] = %c0 to %c32 step %c1
// VEC: scf.for %[[R:.*]] = %c0 to %c7 step %c1
// VEC: %[[ROW:.*]] = vector.transfer_read %[[GRID]][%c0, %[[C]], %[[R]], %c0], %{{.*}} {in_bounds = [true]} : tensor<1x32x8x8xf32>, vector<7xf32>
// VEC: vector.transfer_write %[[ROW]], %{{.*}}[%c0, %[[C]], %[[R]], %c0] {in_bounds = [true]} : vector<7xf32>, tensor<1x32x7x7xf32>
// VEC-NOT: arith.remui
// VEC: return
// OFF-LABEL: func.func @odd_output
// OFF: linalg.mmt4d ins(%{{.*}}, %{{.*}} : tensor<7x576x8x1xf32>, tensor<1x576x32x1xf32>)
func.func @odd_output(%x: tensor<1x64x7x7xf32>) -> tensor<1x32x7x7xf32> {
  %w = autopar.weight "conv.weight" : tensor<32x64x3x3xf32>
  %y = autopar.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x64x7x7xf32>, tensor<32x64x3x3xf32>) -> tensor<1x32x7x7xf32>
  return %y : tensor<1x32x7x7xf32>
}

// -----

// Not in the Winograd form: a stride of 2, fewer than 32 input channels, and
// a weight that is also used by another op (it cannot be transformed: the
// convolution keeps the im2col product, its weight packed per call).

shard.grid @grid(shape = 1)
// CHECK-LABEL: func.func @not_winograd
// CHECK-NOT: autopar.winograd
// CHECK: linalg.mmt4d ins(%{{.*}}, %{{.*}} : tensor<4x288x8x1xf32>, tensor<2x288x32x1xf32>)
// CHECK: linalg.mmt4d ins(%{{.*}}, %{{.*}} : tensor<4x144x8x1xf32>, tensor<8x144x32x1xf32>)
// CHECK: linalg.pack
// CHECK: linalg.mmt4d ins(%{{.*}}, %{{.*}} : tensor<4x288x8x1xf32>, tensor<8x288x32x1xf32>)
// CHECK: return
func.func @not_winograd(%x: tensor<1x32x16x16xf32>, %x16: tensor<1x16x16x16xf32>) -> (tensor<1x32x8x8xf32>, tensor<1x32x16x16xf32>, tensor<1x32x16x16xf32>, tensor<32x32x3x3xf32>) {
  %w = autopar.weight "strided.weight" : tensor<32x32x3x3xf32>
  %s = autopar.conv %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x32x16x16xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x8x8xf32>
  %w16 = autopar.weight "narrow.weight" : tensor<32x16x3x3xf32>
  %n = autopar.conv %x16, %w16 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x16x16x16xf32>, tensor<32x16x3x3xf32>) -> tensor<1x32x16x16xf32>
  %ws = autopar.weight "shared.weight" : tensor<32x32x3x3xf32>
  %c = autopar.conv %x, %ws {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x32x16x16xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x16x16xf32>
  return %s, %n, %c, %ws : tensor<1x32x8x8xf32>, tensor<1x32x16x16xf32>, tensor<1x32x16x16xf32>, tensor<32x32x3x3xf32>
}
