// The schedule of a data-tiled matmul per ISA: a parallel loop (threads) over
// the column panels (N1), loops over the row tiles (M1) and the reduction (K1) around one vector.contract
// of the register tile, whose accumulator starts from zeros in registers
// (the output's zero fill goes: the output starts uninitialized) and is
// written after the reduction loop; packs and unpacks become
// pad/reshape/transpose.
// RUN: autopar-opt %s --pass-pipeline="builtin.module(autopar-pack-contractions{isa=avx512},func.func(autopar-convert-to-linalg,autopar-tile-contractions))" | FileCheck %s --check-prefixes=CHECK,AVX512
// RUN: autopar-opt %s --pass-pipeline="builtin.module(autopar-pack-contractions{isa=avx2},func.func(autopar-convert-to-linalg,autopar-tile-contractions))" | FileCheck %s --check-prefixes=CHECK,AVX2
// RUN: autopar-opt %s --pass-pipeline="builtin.module(autopar-pack-contractions{isa=generic},func.func(autopar-convert-to-linalg,autopar-tile-contractions))" | FileCheck %s --check-prefixes=CHECK,GENERIC

// CHECK-LABEL: func.func @matmul
// CHECK-NOT: linalg.pack
// AVX2: tensor.pad {{.*}} high[2, 0]
// CHECK: linalg.transpose
// AVX512: %[[E:.*]] = tensor.empty() : tensor<5x3x8x32xf32>
// AVX512-NOT: linalg.fill
// AVX512: %[[P:.*]] = scf.forall (%[[N1:.*]]) in (3) shared_outs(%[[O:.*]] = %[[E]]) -> (tensor<5x3x8x32xf32>)
// AVX512: %[[S:.*]] = tensor.extract_slice %[[O]][0, %[[N1]], 0, 0] [5, 1, 8, 32] [1, 1, 1, 1]
// AVX512: %[[T:.*]] = scf.for %[[M1:.*]] = %{{.*}} to %c5 step %c1 iter_args(%[[I:.*]] = %[[S]]) -> (tensor<5x1x8x32xf32>)
// AVX512-NOT: vector.transfer_read %[[I]]
// AVX512: %[[ACC:.*]] = arith.constant dense<0.000000e+00> : vector<8x32xf32>
// AVX512: %[[SUM:.*]] = scf.for %[[K1:.*]] = %{{.*}} to %c64 step %c1 iter_args(%[[R:.*]] = %[[ACC]]) -> (vector<8x32xf32>)
// AVX512: %[[A:.*]] = vector.transfer_read %{{.*}}[%[[M1]], %[[K1]], %c0, %c0]{{.*}} : tensor<5x64x8x1xf32>, vector<8x1xf32>
// AVX512: %[[B:.*]] = vector.transfer_read %{{.*}}[%[[N1]], %[[K1]], %c0, %c0]{{.*}} : tensor<3x64x32x1xf32>, vector<32x1xf32>
// AVX512: %[[C:.*]] = vector.contract {{.*}} %[[A]], %[[B]], %[[R]] : vector<8x1xf32>, vector<32x1xf32> into vector<8x32xf32>
// AVX512: scf.yield %[[C]] : vector<8x32xf32>
// AVX512: vector.transfer_write %[[SUM]], %[[I]][%[[M1]], %c0, %c0, %c0]
// AVX512: scf.forall.in_parallel
// AVX512-NEXT: tensor.parallel_insert_slice %[[T]] into %[[O]][0, %[[N1]], 0, 0] [5, 1, 8, 32]

// AVX2: scf.forall (%{{.*}}) in (6) {{.*}} -> (tensor<7x6x6x16xf32>)
// AVX2: arith.constant dense<0.000000e+00> : vector<6x16xf32>
// AVX2: scf.for {{.*}} -> (vector<6x16xf32>)
// AVX2: vector.contract {{.*}} : vector<6x1xf32>, vector<16x1xf32> into vector<6x16xf32>

// GENERIC: scf.forall (%{{.*}}) in (12) {{.*}} -> (tensor<10x12x4x8xf32>)
// GENERIC: vector.contract {{.*}} : vector<4x1xf32>, vector<8x1xf32> into vector<4x8xf32>

// CHECK-NOT: linalg.mmt4d
// CHECK: linalg.transpose
// CHECK: tensor.collapse_shape
// CHECK: linalg.copy ins(%{{.*}} : tensor<40x96xf32>)
func.func @matmul(%x: tensor<40x64xf32>, %w: tensor<64x96xf32>) -> tensor<40x96xf32> {
  %y = autopar.matmul %x, %w : (tensor<40x64xf32>, tensor<64x96xf32>) -> tensor<40x96xf32>
  return %y : tensor<40x96xf32>
}

// A batched contraction: the parallel loop covers the batch and the column
// panels.
// AVX2-LABEL: func.func @batched
// AVX2: scf.forall (%{{.*}}, %{{.*}}) in (6, 3) {{.*}} -> (tensor<6x4x3x6x16xf32>)
// AVX2: scf.for {{.*}} -> (tensor<1x4x1x6x16xf32>)
// AVX2: scf.for {{.*}} -> (vector<6x16xf32>)
// AVX2: vector.contract {{.*}} : vector<6x1xf32>, vector<16x1xf32> into vector<6x16xf32>
// AVX2: scf.forall.in_parallel
func.func @batched(%q: tensor<2x3x20x16xf32>, %k: tensor<2x3x16x40xf32>) -> tensor<2x3x20x40xf32> {
  %y = autopar.matmul %q, %k : (tensor<2x3x20x16xf32>, tensor<2x3x16x40xf32>) -> tensor<2x3x20x40xf32>
  return %y : tensor<2x3x20x40xf32>
}

// A pointwise convolution's `linalg.contract` (autopar-pack-contractions reads
// X [C, positions] in place and accumulates into the output, M1 x m0 x P1 x
// n0): the same schedule as an mmt4d, a parallel loop over the column tiles
// (P1), loops over the row tiles (M1) and the reduction around one 8 x 32
// register tile; its accumulator rows are n0 positions apart from the next
// channel's (8 x 1 x 32, the unit dimension dropped from the contraction).

// AVX512-LABEL: func.func @pointwise_in_place
// AVX512: %[[P:.*]] = scf.forall (%[[P1:.*]]) in (2) shared_outs(%[[O:.*]] = %{{.*}}) -> (tensor<2x8x2x32xf32>)
// AVX512: tensor.extract_slice %[[O]][0, 0, %[[P1]], 0] [2, 8, 1, 32] [1, 1, 1, 1]
// AVX512: scf.for %[[M1:.*]] = %{{.*}} to %c2 step %c1 iter_args(%[[I:.*]] = %{{.*}}) -> (tensor<2x8x1x32xf32>)
// AVX512: vector.transfer_read %[[I]][%[[M1]], %c0, %c0, %c0]{{.*}} : tensor<2x8x1x32xf32>, vector<8x1x32xf32>
// AVX512: scf.for %[[K:.*]] = %{{.*}} to %c32 step %c1 iter_args(%[[R:.*]] = %{{.*}}) -> (vector<8x32xf32>)
// AVX512: %[[A:.*]] = vector.transfer_read %{{.*}}[%[[M1]], %[[K]], %c0, %c0]{{.*}} : tensor<2x32x8x1xf32>, vector<8x1xf32>
// AVX512: %[[B:.*]] = vector.transfer_read %{{.*}}[%[[K]], %[[P1]], %c0, %c0]{{.*}} : tensor<32x2x32x1xf32>, vector<32x1xf32>
// AVX512: vector.contract {{.*}} %[[A]], %[[B]], %[[R]] : vector<8x1xf32>, vector<32x1xf32> into vector<8x32xf32>
// AVX512-NOT: linalg.contract
// AVX512: tensor.expand_shape %{{.*}} {{\[\[}}0, 1], [2, 3]] output_shape [1, 16, 8, 8]
func.func @pointwise_in_place(%x: tensor<1x32x8x8xf32>, %w: tensor<16x32x1x1xf32>, %b: tensor<16xf32>) -> tensor<1x16x8x8xf32> {
  %y = autopar.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x32x8x8xf32>, tensor<16x32x1x1xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
  return %y : tensor<1x16x8x8xf32>
}
