// RUN: autopar-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(autopar-convert-to-linalg,canonicalize,autopar-fuse-elementwise))' | FileCheck %s

// Add, Relu and a broadcast Add: one generic, one memory pass.

// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[Y:.*]]: tensor<4x8xf32>, %[[Z:.*]]: tensor<8xf32>)
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[Y]], %[[Z]] : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>)
// CHECK: arith.addf
// CHECK: arith.cmpf olt
// CHECK: arith.select
// CHECK: arith.addf
// CHECK: return %[[R]]
// CHECK-NOT: linalg.generic
func.func @chain(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %z: tensor<8xf32>) -> tensor<4x8xf32> {
  %a = autopar.add %x, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %r = autopar.relu %a : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = autopar.add %r, %z : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}

// -----

// A value with two consumers is computed once, not once per consumer.

// CHECK-LABEL: func.func @two_consumers
// CHECK: %[[E:.*]] = linalg.generic
// CHECK: math.exp
// CHECK: linalg.generic {{.*}} ins(%[[E]], %{{.*}} :
// CHECK-NOT: math.exp
// CHECK: linalg.generic {{.*}} ins(%[[E]], %{{.*}} :
// CHECK-NOT: math.exp
func.func @two_consumers(%x: tensor<16xf32>, %y: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %e = autopar.exp %x : (tensor<16xf32>) -> tensor<16xf32>
  %a = autopar.mul %e, %y : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  %b = autopar.add %e, %y : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  return %a, %b : tensor<16xf32>, tensor<16xf32>
}

// -----

// A small value read through a broadcast is not recomputed for every copy:
// the exp of 8 elements stays one generic of 8.

// CHECK-LABEL: func.func @broadcast_read
// CHECK: %[[E:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<8xf32>)
// CHECK: math.exp
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[E]] : tensor<64x8xf32>, tensor<8xf32>)
// CHECK-NOT: math.exp
func.func @broadcast_read(%x: tensor<64x8xf32>, %s: tensor<8xf32>) -> tensor<64x8xf32> {
  %e = autopar.exp %s : (tensor<8xf32>) -> tensor<8xf32>
  %y = autopar.mul %x, %e : (tensor<64x8xf32>, tensor<8xf32>) -> tensor<64x8xf32>
  return %y : tensor<64x8xf32>
}

// -----

// The zero padding of a convolution's input whose producer is an
// elementwise generic with no other use: the producer writes into the
// interior of the padded tensor, and the pad (a copy of the whole tensor)
// goes. Only the border is zero-filled: the rows above and below (two below:
// the depthwise convolution's flattened plane, 6 rows of 8, reads one row
// past the window's), then the columns left and right of the interior rows,
// a cache line (16 f32) wide into the interior (overwritten later); rows of
// 8 are filled whole.

// CHECK-LABEL: func.func @relu_into_padding
// CHECK-NOT: tensor.pad
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[E:.*]] = tensor.empty() : tensor<1x8x9x8xf32>
// CHECK: %[[S0:.*]] = tensor.extract_slice %[[E]][0, 0, 0, 0] [1, 8, 1, 8] [1, 1, 1, 1]
// CHECK: %[[F0:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[S0]] : tensor<1x8x1x8xf32>)
// CHECK: %[[B0:.*]] = tensor.insert_slice %[[F0]] into %[[E]][0, 0, 0, 0] [1, 8, 1, 8] [1, 1, 1, 1]
// CHECK: %[[S1:.*]] = tensor.extract_slice %[[B0]][0, 0, 7, 0] [1, 8, 2, 8] [1, 1, 1, 1]
// CHECK: %[[F1:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[S1]] : tensor<1x8x2x8xf32>)
// CHECK: %[[B1:.*]] = tensor.insert_slice %[[F1]] into %[[B0]][0, 0, 7, 0] [1, 8, 2, 8] [1, 1, 1, 1]
// CHECK: %[[S2:.*]] = tensor.extract_slice %[[B1]][0, 0, 1, 0] [1, 8, 6, 8] [1, 1, 1, 1]
// CHECK: %[[F2:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[S2]] : tensor<1x8x6x8xf32>)
// CHECK: %[[B2:.*]] = tensor.insert_slice %[[F2]] into %[[B1]][0, 0, 1, 0] [1, 8, 6, 8] [1, 1, 1, 1]
// CHECK-NOT: linalg.fill
// CHECK: %[[I:.*]] = tensor.extract_slice %[[B2]][0, 0, 1, 1] [1, 8, 6, 6] [1, 1, 1, 1]
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<1x8x6x6xf32>) outs(%[[I]] : tensor<1x8x6x6xf32>)
// CHECK: arith.select
// CHECK: %[[P:.*]] = tensor.insert_slice %[[R]] into %[[B2]][0, 0, 1, 1] [1, 8, 6, 6] [1, 1, 1, 1]
// CHECK: tensor.collapse_shape %[[P]] {{\[\[}}0], [1], [2, 3]] : tensor<1x8x9x8xf32> into tensor<1x8x72xf32>
// CHECK-NOT: tensor.pad
func.func @relu_into_padding(%x: tensor<1x8x6x6xf32>, %w: tensor<8x1x3x3xf32>) -> tensor<1x8x6x6xf32> {
  %r = autopar.relu %x : (tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32>
  %y = autopar.conv %r, %w {group = 8 : i64, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x8x6x6xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x6x6xf32>
  return %y : tensor<1x8x6x6xf32>
}

// -----

// Rows of 40 (padded to 42): the column slabs are [0, 16) and [26, 42).

// CHECK-LABEL: func.func @relu_into_padding_wide_rows
// CHECK: linalg.fill {{.*}} outs(%{{.*}} : tensor<1x8x1x42xf32>)
// CHECK: linalg.fill {{.*}} outs(%{{.*}} : tensor<1x8x1x42xf32>)
// CHECK: tensor.extract_slice %{{.*}}[0, 0, 1, 0] [1, 8, 6, 16] [1, 1, 1, 1]
// CHECK: linalg.fill {{.*}} outs(%{{.*}} : tensor<1x8x6x16xf32>)
// CHECK: tensor.extract_slice %{{.*}}[0, 0, 1, 26] [1, 8, 6, 16] [1, 1, 1, 1]
// CHECK: linalg.fill {{.*}} outs(%{{.*}} : tensor<1x8x6x16xf32>)
// CHECK-NOT: linalg.fill
// CHECK: tensor.extract_slice %{{.*}}[0, 0, 1, 1] [1, 8, 6, 40] [1, 1, 1, 1]
func.func @relu_into_padding_wide_rows(%x: tensor<1x8x6x40xf32>, %w: tensor<8x1x3x3xf32>) -> tensor<1x8x6x40xf32> {
  %r = autopar.relu %x : (tensor<1x8x6x40xf32>) -> tensor<1x8x6x40xf32>
  %y = autopar.conv %r, %w {group = 8 : i64, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x8x6x40xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x6x40xf32>
  return %y : tensor<1x8x6x40xf32>
}

// -----

// A producer with another use keeps its result and the pad (fusing would
// compute it twice).

// CHECK-LABEL: func.func @relu_used_twice
// CHECK: tensor.pad
func.func @relu_used_twice(%x: tensor<1x8x6x6xf32>, %w: tensor<8x1x3x3xf32>) -> (tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>) {
  %r = autopar.relu %x : (tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32>
  %y = autopar.conv %r, %w {group = 8 : i64, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x8x6x6xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x6x6xf32>
  return %y, %r : tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>
}

// -----

// A gradient accumulated over two microbatches: fusing the first add into the
// second would compute it after the second matmul and keep both of its
// operands (twice its result) live across that matmul. It stays before it.

// CHECK-LABEL: func.func @accumulation_across_matmul
// CHECK: %[[G1:.*]] = linalg.generic {{.*}}"reduction"
// CHECK: %[[G2:.*]] = linalg.generic {{.*}}"reduction"
// CHECK: %[[ACC:.*]] = linalg.generic {{.*}} ins(%[[G1]], %[[G2]] :
// CHECK: %[[G3:.*]] = linalg.generic {{.*}}"reduction"
// CHECK: linalg.generic {{.*}} ins(%[[ACC]], %[[G3]] :
func.func @accumulation_across_matmul(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %z: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %g1 = autopar.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %g2 = autopar.matmul %y, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %acc = autopar.add %g1, %g2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %g3 = autopar.matmul %z, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %acc2 = autopar.add %acc, %g3 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %acc2 : tensor<4x8xf32>
}

// -----

// Across the same matmul, a producer whose operands stay live anyway (here
// arguments; weights and inputs read from resident buffers) still fuses: it
// holds nothing more.

// CHECK-LABEL: func.func @resident_operands_across_matmul
// CHECK: %[[G:.*]] = linalg.generic {{.*}}"reduction"
// CHECK-NOT: linalg.generic
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %[[G]] :
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: arith.addf
func.func @resident_operands_across_matmul(%m: tensor<4x8xf32>, %b: tensor<4x8xf32>, %z: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %s = autopar.mul %m, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %g = autopar.matmul %z, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %r = autopar.add %s, %g : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// A chain of 16 adds, each reading the two before it: every intermediate has
// two uses until its consumers fuse, and the chain needs more sweeps of the
// greedy driver than its default limit of 10 (the pass failed without a
// diagnostic). It fuses into one loop of 16 adds.

// CHECK-LABEL: func.func @long_chain
// CHECK-COUNT-1: linalg.generic
// CHECK-COUNT-16: arith.addf
// CHECK-NOT: linalg.generic
func.func @long_chain(%x: tensor<4xf32>, %c: tensor<4xf32>) -> tensor<4xf32> {
  %v0 = autopar.add %x, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %v1 = autopar.add %v0, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %v2 = autopar.add %v1, %v0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %v3 = autopar.add %v2, %v1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %v4 = autopar.add %v3, %v2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %v5 = autopar.add %v4, %v3 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %v6 = autopar.add %v5, %v4 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %v7 = autopar.add %v6, %v5 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %v8 = autopar.add %v7, %v6 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %v9 = autopar.add %v8, %v7 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %v10 = autopar.add %v9, %v8 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %v11 = autopar.add %v10, %v9 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %v12 = autopar.add %v11, %v10 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %v13 = autopar.add %v12, %v11 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %v14 = autopar.add %v13, %v12 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %v15 = autopar.add %v14, %v13 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %v15 : tensor<4xf32>
}

// -----

// A bias add and the exported GELU, 0.5 * f * (1 + erf(f / sqrt(2))): the
// bias add has two readers, which fuse into one loop and then read it once,
// so it fuses too. One loop reads y and the bias and writes the result; the
// cost model prices the chain so (ElementwiseFusion.h).

// CHECK-LABEL: func.func @bias_gelu
// CHECK-NOT: linalg.generic
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x16xf32>, tensor<16xf32>)
// CHECK: math.erf
// CHECK-NOT: linalg.generic
func.func @bias_gelu(%y: tensor<4x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %c = autopar.constant dense<1.41421354> : tensor<f32>
  %one = autopar.constant dense<1.0> : tensor<f32>
  %half = autopar.constant dense<0.5> : tensor<f32>
  %f = autopar.add %y, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %d = autopar.div %f, %c : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %e = autopar.erf %d : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %e1 = autopar.add %e, %one : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %m = autopar.mul %f, %e1 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %g = autopar.mul %m, %half : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  return %g : tensor<4x16xf32>
}

// -----

// Scaled and masked scores into a softmax: the softmax reads its input in two
// loop nests (the maximum, then the exponentials), so the masked scores are
// stored; only the scale fuses into the mask's add. The cost model prices a
// softmax so (ElementwiseFusion.h).

// CHECK-LABEL: func.func @scale_mask_softmax
// CHECK: %[[U:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x8x8xf32>, tensor<8x8xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: linalg.generic {{.*}} ins(%[[U]] : tensor<2x8x8xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[U]], %{{.*}} : tensor<2x8x8xf32>, tensor<2x8xf32>)
// CHECK: math.exp
func.func @scale_mask_softmax(%s: tensor<2x8x8xf32>, %mask: tensor<8x8xf32>) -> tensor<2x8x8xf32> {
  %c = autopar.constant dense<0.5> : tensor<f32>
  %t = autopar.mul %s, %c : (tensor<2x8x8xf32>, tensor<f32>) -> tensor<2x8x8xf32>
  %u = autopar.add %t, %mask : (tensor<2x8x8xf32>, tensor<8x8xf32>) -> tensor<2x8x8xf32>
  %p = autopar.softmax %u {axis = 2 : i64} : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  return %p : tensor<2x8x8xf32>
}

// -----

// A depthwise convolution over its flattened padded plane (rows of 7 padded
// to 9: 63 positions, rounded up to 64), then Clip and a per-channel scale:
// both are moved onto the 64 positions, the convolution fuses into them
// (one generic, one memory pass), and the output's views (the first 63
// positions as 7 rows of 9, their first 7 columns) are taken of the result.
// Returned (as a pad or a pointwise convolution's reshape would read it), the
// view is copied by an elementwise generic, which is vectorized, rather than
// by bufferization's scalar copy.

// CHECK-LABEL: func.func @flat_depthwise_clip
// CHECK: %[[G:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel"]{{.*}} outs(%{{.*}} : tensor<1x8x64xf32>)
// CHECK-COUNT-9: math.fma
// CHECK: arith.select
// CHECK: arith.mulf
// CHECK: } -> tensor<1x8x64xf32>
// CHECK: %[[R:.*]] = tensor.extract_slice %[[G]][0, 0, 0] [1, 8, 63] [1, 1, 1]
// CHECK: %[[E:.*]] = tensor.expand_shape %[[R]] {{\[\[}}0], [1], [2, 3]] output_shape [1, 8, 7, 9]
// CHECK: %[[Y:.*]] = tensor.extract_slice %[[E]][0, 0, 0, 0] [1, 8, 7, 7] [1, 1, 1, 1]
// CHECK: %[[C:.*]] = linalg.generic {{.*}} ins(%[[Y]] : tensor<1x8x7x7xf32>) outs(%{{.*}} : tensor<1x8x7x7xf32>)
// CHECK-NEXT: ^bb0(%[[IN:[^:]*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: linalg.yield %[[IN]] : f32
// CHECK: return %[[C]]
func.func @flat_depthwise_clip(%x: tensor<1x8x7x7xf32>, %w: tensor<8x1x3x3xf32>, %b: tensor<8xf32>, %s: tensor<8x1x1xf32>) -> tensor<1x8x7x7xf32> {
  %y = autopar.conv %x, %w, %b {group = 8 : i64, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x8x7x7xf32>, tensor<8x1x3x3xf32>, tensor<8xf32>) -> tensor<1x8x7x7xf32>
  %c = autopar.clip %y {min = 0.0 : f64, max = 6.0 : f64} : (tensor<1x8x7x7xf32>) -> tensor<1x8x7x7xf32>
  %z = autopar.mul %c, %s : (tensor<1x8x7x7xf32>, tensor<8x1x1xf32>) -> tensor<1x8x7x7xf32>
  return %z : tensor<1x8x7x7xf32>
}

// -----

// An elementwise op whose other input indexes the rows and columns (a
// residual add) is not moved onto the wide domain: the convolution's
// generic and the add stay apart.

// CHECK-LABEL: func.func @flat_depthwise_residual
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x8x64xf32>)
// CHECK: tensor.expand_shape
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x8x7x7xf32>)
func.func @flat_depthwise_residual(%x: tensor<1x8x7x7xf32>, %w: tensor<8x1x3x3xf32>) -> tensor<1x8x7x7xf32> {
  %y = autopar.conv %x, %w {group = 8 : i64, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x8x7x7xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x7x7xf32>
  %z = autopar.add %y, %x : (tensor<1x8x7x7xf32>, tensor<1x8x7x7xf32>) -> tensor<1x8x7x7xf32>
  return %z : tensor<1x8x7x7xf32>
}
