// RUN: autopar-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(autopar-convert-to-linalg,canonicalize,autopar-fuse-elementwise,autopar-chunk-parallel-loops{min-flops-per-thread=0 min-chunk-work=1024},autopar-vectorize-elementwise{isa=avx512}))' | FileCheck %s
// RUN: autopar-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(autopar-convert-to-linalg,canonicalize,autopar-fuse-elementwise,autopar-chunk-parallel-loops))' | FileCheck %s --check-prefix=DEFAULT
// RUN: not autopar-opt %s --pass-pipeline='builtin.module(func.func(autopar-chunk-parallel-loops{max-chunks=1}))' 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not autopar-opt %s --pass-pipeline='builtin.module(func.func(autopar-chunk-parallel-loops{flops-per-byte=-1}))' 2>&1 | FileCheck %s --check-prefix=NEGATIVE

// BAD: autopar-chunk-parallel-loops: min-chunk-work must be at least 1 and max-chunks at least 2, got: 4096 and 1
// NEGATIVE: autopar-chunk-parallel-loops: min-flops-per-thread and flops-per-byte must not be negative, got: 1000000 and -1

// Every op that splits (min-flops-per-thread=0): an elementwise op of 16384
// iterations in 16 chunks of 4 channels (at least 1024 iterations each),
// the outermost loop that has 16 chunks. Each chunk
// is vectorized: its 4 channels of 16x16 are contiguous and collapse into
// one loop of 1024 in vectors of 16.

// CHECK-LABEL: func.func @relu
// CHECK: %[[E:.*]] = tensor.empty() : tensor<1x64x16x16xf32>
// CHECK: %[[R:.*]] = scf.forall (%[[I:.*]]) = (0) to (64) step (4) shared_outs(%[[O:.*]] = %[[E]]) -> (tensor<1x64x16x16xf32>)
// CHECK: %[[X:.*]] = tensor.extract_slice %{{.*}}[0, %[[I]], 0, 0] [1, 4, 16, 16] [1, 1, 1, 1] : tensor<1x64x16x16xf32> to tensor<1x4x16x16xf32>
// CHECK: %[[S:.*]] = tensor.extract_slice %[[O]][0, %[[I]], 0, 0] [1, 4, 16, 16] [1, 1, 1, 1] : tensor<1x64x16x16xf32> to tensor<1x4x16x16xf32>
// CHECK: %[[XC:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0], [1, 2, 3]] : tensor<1x4x16x16xf32> into tensor<1x1024xf32>
// CHECK: %[[SC:.*]] = tensor.collapse_shape %[[S]] {{\[\[}}0], [1, 2, 3]] : tensor<1x4x16x16xf32> into tensor<1x1024xf32>
// CHECK: %[[L:.*]] = scf.for %{{.*}} = %c0 to %c1024 step %c16 iter_args(%{{.*}} = %[[SC]])
// CHECK: vector.transfer_read %[[XC]]{{.*}} : tensor<1x1024xf32>, vector<16xf32>
// CHECK: arith.select {{.*}} : vector<16xi1>, vector<16xf32>
// CHECK: vector.transfer_write {{.*}} : vector<16xf32>, tensor<1x1024xf32>
// CHECK: %[[Y:.*]] = tensor.expand_shape %[[L]] {{.*}} : tensor<1x1024xf32> into tensor<1x4x16x16xf32>
// CHECK: scf.forall.in_parallel
// CHECK-NEXT: tensor.parallel_insert_slice %[[Y]] into %[[O]][0, %[[I]], 0, 0] [1, 4, 16, 16] [1, 1, 1, 1] : tensor<1x4x16x16xf32> into tensor<1x64x16x16xf32>
// CHECK: return %[[R]]

// With the default grain (a million equivalent FLOPs per thread, a byte
// moved counting 4), the op's 128 KB (512,000) are less than two threads'
// worth: the op stays whole.
// DEFAULT-LABEL: func.func @relu
// DEFAULT-NOT: scf.forall
// DEFAULT: linalg.generic
// DEFAULT-NOT: scf.forall
// DEFAULT: return
func.func @relu(%x: tensor<1x64x16x16xf32>) -> tensor<1x64x16x16xf32> {
  %y = autopar.relu %x : (tensor<1x64x16x16xf32>) -> tensor<1x64x16x16xf32>
  return %y : tensor<1x64x16x16xf32>
}

// -----

// A 3x3 max pooling at stride 2 (one generic over the 9 window views of the
// padded input): 2 x 32 x 16 x 16 iterations in 16 chunks of 2 channels (the
// batch loop gives only 2). Each chunk reads its channels of the 9 strided
// views, in vectors of 16 (a stride-2 view as a read of 32 and a shuffle).
// The pad (2 x 32 x 34 x 34 elements) becomes a chunked fill and a chunked
// copy into the interior, whose rows are not contiguous: the copy is not
// collapsed across them (through the forall's shared output), it writes
// rows of 32 in vectors of 16.

// CHECK-LABEL: func.func @max_pool
// CHECK-NOT: tensor.pad
// CHECK: %[[F:.*]] = scf.forall (%{{.*}}) = (0) to (32) step (2) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<2x32x34x34xf32>)
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<2x2x34x34xf32>)
// CHECK: %[[IN:.*]] = tensor.extract_slice %[[F]][0, 0, 1, 1] [2, 32, 32, 32] [1, 1, 1, 1]
// CHECK: %[[CP:.*]] = scf.forall (%{{.*}}) = (0) to (32) step (2) shared_outs(%{{.*}} = %[[IN]]) -> (tensor<2x32x32x32xf32>)
// CHECK-NOT: tensor.collapse_shape
// CHECK: vector.transfer_read %{{.*}} : tensor<2x32x32x32xf32>, vector<16xf32>
// CHECK: vector.transfer_write %{{.*}} : vector<16xf32>, tensor<2x2x32x32xf32>
// CHECK: %[[P:.*]] = tensor.insert_slice %[[CP]] into %[[F]][0, 0, 1, 1] [2, 32, 32, 32] [1, 1, 1, 1]
// CHECK: scf.forall (%[[C:.*]]) = (0) to (32) step (2) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<2x32x16x16xf32>)
// CHECK: scf.for
// CHECK: %[[CH:.*]] = affine.apply #{{.*}}()[%[[C]], %{{.*}}]
// CHECK: %[[V:.*]] = vector.transfer_read %[[P]][%{{.*}}, %[[CH]], %{{.*}}, %{{.*}}]{{.*}} : tensor<2x32x34x34xf32>, vector<32xf32>
// CHECK: vector.shuffle %[[V]], %[[V]] [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30] : vector<32xf32>, vector<32xf32>
// CHECK: arith.maximumf {{.*}} : vector<16xf32>
// CHECK: scf.forall.in_parallel
// CHECK: tensor.parallel_insert_slice {{.*}} [2, 2, 16, 16] [1, 1, 1, 1] : tensor<2x2x16x16xf32> into tensor<2x32x16x16xf32>

// With the default grain (a million equivalent FLOPs per thread, a byte
// moved counting 4), the pad (296 KB written, 256 KB read: 2.2 million)
// still becomes a fill and a copy. The copy (256 KB read and written, 2.1
// million) is chunked; the fill alone (296 KB, 1.2 million) and the pooling
// (the padded tensor its 9 views read, 296 KB, and 64 KB written: 1.4
// million) stay whole.
// DEFAULT-LABEL: func.func @max_pool
// DEFAULT-NOT: tensor.pad
// DEFAULT-NOT: scf.forall
// DEFAULT: linalg.fill
// DEFAULT: scf.forall {{.*}} -> (tensor<2x32x32x32xf32>)
// DEFAULT: linalg.copy
// DEFAULT: tensor.insert_slice
// DEFAULT-NOT: scf.forall
// DEFAULT: linalg.generic
// DEFAULT-NOT: scf.forall
// DEFAULT: return
func.func @max_pool(%x: tensor<2x32x32x32xf32>) -> tensor<2x32x16x16xf32> {
  %y = autopar.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x32x32x32xf32>) -> tensor<2x32x16x16xf32>
  return %y : tensor<2x32x16x16xf32>
}

// -----

// Less than two chunks of work (2 x 8 x 32 = 512 iterations): left whole,
// and still vectorized.

// CHECK-LABEL: func.func @tiny
// CHECK-NOT: scf.forall
// CHECK: vector.transfer_read {{.*}} vector<16xf32>
// CHECK-NOT: scf.forall
// CHECK: return
func.func @tiny(%x: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  %y = autopar.relu %x : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  return %y : tensor<2x8x32xf32>
}

// -----

// One loop: its chunks are multiples of 16 iterations (48000 / 16 = 3000 is
// not; 48000 / 15 = 3200 is).

// CHECK-LABEL: func.func @flat
// CHECK: scf.forall (%{{.*}}) = (0) to (48000) step (3200)
// CHECK: tensor.extract_slice {{.*}} [3200] [1] : tensor<48000xf32> to tensor<3200xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c3200 step %c16
// CHECK: vector.transfer_read {{.*}} : tensor<48000xf32>, vector<16xf32>
// CHECK: vector.transfer_write {{.*}} : vector<16xf32>, tensor<3200xf32>
func.func @flat(%x: tensor<48000xf32>) -> tensor<48000xf32> {
  %y = autopar.relu %x : (tensor<48000xf32>) -> tensor<48000xf32>
  return %y : tensor<48000xf32>
}

// -----

// A reduction is chunked along its parallel loops only (the rows), never
// along the reduced one; each chunk's rows are still reduced in vectors of
// 16 partial sums.

// CHECK-LABEL: func.func @reduce
// CHECK: scf.forall (%{{.*}}) = (0) to (64) step (4) shared_outs
// CHECK: tensor.extract_slice {{.*}} [1, 4, 256] [1, 1, 1] : tensor<1x64x256xf32> to tensor<1x4x256xf32>
// CHECK: vector.transfer_read {{.*}} : tensor<1x4x16x16xf32>, vector<16xf32>
// CHECK: arith.addf {{.*}} : vector<16xf64>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: scf.forall.in_parallel
func.func @reduce(%x: tensor<1x64x256xf32>) -> tensor<1x64x1xf32> {
  %y = autopar.reduce_sum %x {axes = array<i64: 2>, keepdims = true} : (tensor<1x64x256xf32>) -> tensor<1x64x1xf32>
  return %y : tensor<1x64x1xf32>
}

// -----

// The rows p of a flat im2col copy of a 31 x 31 output (976 rows: 61 tiles
// of 16, past the 961 positions) read position (p floordiv 31, p mod 31).
// Linalg's tiling slices the input at the chunk's first position and indexes
// the slice with the same map from the chunk's own row 0, which is right
// only when the chunks start at multiples of 31 rows: 4 chunks of 244 rows
// would read row 248, position (8, 0), at (0, 4) of the slice that starts
// at (7, 27), i.e. at (7, 31), past the end of row 7. No chunk count of the
// rows gives
// multiples of 31. Nor can the images be the chunks: the slice of the p mod
// 31 dimension would be 975 mod 31 + 1 = 15 wide (its size is the map at
// the last row), and rows read up to 30. The op stays whole.

// CHECK-LABEL: func.func @flat_rows_misaligned
// CHECK-NOT: scf.forall
// CHECK: linalg.generic
// CHECK-NOT: scf.forall
// CHECK: return
#positions = affine_map<(n, p, c) -> (n, p floordiv 31, p mod 31, c)>
#rows = affine_map<(n, p, c) -> (n, p, c)>
func.func @flat_rows_misaligned(%x: tensor<2x32x31x4xf32>) -> tensor<2x976x4xf32> {
  %e = tensor.empty() : tensor<2x976x4xf32>
  %y = linalg.generic {indexing_maps = [#positions, #rows], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<2x32x31x4xf32>) outs(%e : tensor<2x976x4xf32>) {
  ^bb0(%a: f32, %b: f32):
    linalg.yield %a : f32
  } -> tensor<2x976x4xf32>
  return %y : tensor<2x976x4xf32>
}

// -----

// 992 rows: 4 chunks of 248 (at least 1024 iterations each), 8 whole rows
// of positions each, tile the rows exactly.

// CHECK-LABEL: func.func @flat_rows_aligned
// CHECK: scf.forall (%[[P:.*]]) = (0) to (992) step (248) shared_outs
// CHECK: %[[ROW:.*]] = affine.apply #{{.*}}(%[[P]])
// CHECK: %[[COL:.*]] = affine.apply #{{.*}}(%[[P]])
// CHECK: tensor.extract_slice %{{.*}}[0, %[[ROW]], %[[COL]], 0] [2, 8, 31, 4] [1, 1, 1, 1]
#positions2 = affine_map<(n, p, c) -> (n, p floordiv 31, p mod 31, c)>
#rows2 = affine_map<(n, p, c) -> (n, p, c)>
func.func @flat_rows_aligned(%x: tensor<2x32x31x4xf32>) -> tensor<2x992x4xf32> {
  %e = tensor.empty() : tensor<2x992x4xf32>
  %y = linalg.generic {indexing_maps = [#positions2, #rows2], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<2x32x31x4xf32>) outs(%e : tensor<2x992x4xf32>) {
  ^bb0(%a: f32, %b: f32):
    linalg.yield %a : f32
  } -> tensor<2x992x4xf32>
  return %y : tensor<2x992x4xf32>
}
