// RUN: autopar-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(autopar-convert-to-linalg))" | FileCheck %s

// Convolution and pooling: explicit tensor.pad, then one window generic.

// Groups become explicit dimensions; the result starts from the bias and the
// output's spatial loops are innermost (loops n, g, m, c, kh, kw, oh, ow).
// CHECK-DAG: #[[BIAS:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d2)>
// CHECK-DAG: #[[X:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d3, d6 * 2 + d4, d7 * 2 + d5)>
// CHECK-DAG: #[[W:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d2, d3, d4, d5)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d6, d7)>
// CHECK-LABEL: func.func @conv_grouped
// CHECK-SAME: (%[[IN:.*]]: tensor<1x4x5x5xf32>, %[[WT:.*]]: tensor<6x2x3x3xf32>, %[[B:.*]]: tensor<6xf32>)
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[PAD:.*]] = tensor.pad %[[IN]] low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: tensor.yield %[[ZERO]] : f32
// CHECK: %[[XG:.*]] = tensor.expand_shape %[[PAD]] {{\[\[}}0], [1, 2], [3], [4]] output_shape [1, 2, 2, 7, 7]
// CHECK: %[[WG:.*]] = tensor.expand_shape %[[WT]] {{\[\[}}0, 1], [2], [3], [4]] output_shape [2, 3, 2, 3, 3]
// CHECK: %[[BG:.*]] = tensor.expand_shape %[[B]] {{\[\[}}0, 1]] output_shape [2, 3]
// CHECK: %[[INIT:.*]] = linalg.generic {indexing_maps = [#[[BIAS]], #{{.*}}]
// CHECK-SAME: ins(%[[BG]] : tensor<2x3xf32>) outs(%{{.*}} : tensor<1x2x3x3x3xf32>)
// CHECK: %[[CONV:.*]] = linalg.generic {indexing_maps = [#[[X]], #[[W]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "parallel", "parallel"]}
// CHECK-SAME: ins(%[[XG]], %[[WG]] : tensor<1x2x2x7x7xf32>, tensor<2x3x2x3x3xf32>) outs(%[[INIT]] : tensor<1x2x3x3x3xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: tensor.collapse_shape %[[CONV]] {{\[\[}}0], [1, 2], [3], [4]] : tensor<1x2x3x3x3xf32> into tensor<1x6x3x3xf32>
func.func @conv_grouped(%x: tensor<1x4x5x5xf32>, %w: tensor<6x2x3x3xf32>, %b: tensor<6xf32>) -> tensor<1x6x3x3xf32> {
  %0 = autopar.conv %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x4x5x5xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<1x6x3x3xf32>
  return %0 : tensor<1x6x3x3xf32>
}

// -----

// CHECK-DAG: #[[X:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d3, d5 * 2 + d4 * 2)>
// CHECK-LABEL: func.func @conv_1d
// CHECK: tensor.pad %{{.*}} low[0, 0, 1] high[0, 0, 2]
// CHECK: linalg.fill
// CHECK: linalg.generic {indexing_maps = [#[[X]], #{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "parallel"]}
func.func @conv_1d(%x: tensor<2x3x9xf32>, %w: tensor<2x3x3xf32>) -> tensor<2x2x4xf32> {
  %0 = autopar.conv %x, %w {strides = array<i64: 2>, pads = array<i64: 1, 2>, dilations = array<i64: 2>} : (tensor<2x3x9xf32>, tensor<2x3x3xf32>) -> tensor<2x2x4xf32>
  return %0 : tensor<2x2x4xf32>
}

// -----

// Padding with -inf never wins. A window of at most 64 positions is one
// elementwise generic over one strided view of the padded input per window
// position (row-major), folded from -inf: its loops are the output's, so it
// vectorizes along the output's last dimension.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @max_pool
// CHECK: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[PAD:.*]] = tensor.pad %{{.*}} low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: tensor.yield %[[NEGINF]] : f32
// CHECK: %[[V0:.*]] = tensor.extract_slice %[[PAD]][0, 0, 0, 0] [1, 2, 3, 3] [1, 1, 2, 2] : tensor<1x2x7x7xf32> to tensor<1x2x3x3xf32>
// CHECK: %[[V1:.*]] = tensor.extract_slice %[[PAD]][0, 0, 0, 1] [1, 2, 3, 3] [1, 1, 2, 2]
// CHECK-COUNT-6: tensor.extract_slice %[[PAD]]
// CHECK: %[[V8:.*]] = tensor.extract_slice %[[PAD]][0, 0, 2, 2] [1, 2, 3, 3] [1, 1, 2, 2]
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ID]], #[[ID]], #[[ID]], #[[ID]], #[[ID]], #[[ID]], #[[ID]], #[[ID]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
// CHECK-SAME: ins(%[[V0]], %[[V1]], {{.*}}, %[[V8]] : {{.*}}) outs(%{{.*}} : tensor<1x2x3x3xf32>)
// CHECK: ^bb0(%[[E0:[^:]*]]: f32, %[[E1:[^:]*]]: f32,
// CHECK: %[[M0:.*]] = arith.maximumf %[[NEGINF]], %[[E0]] : f32
// CHECK: arith.maximumf %[[M0]], %[[E1]] : f32
// CHECK-COUNT-7: arith.maximumf
// CHECK-NOT: arith.maximumf
// CHECK: linalg.yield
func.func @max_pool(%x: tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32> {
  %0 = autopar.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32>
  return %0 : tensor<1x2x3x3xf32>
}

// -----

// A depthwise convolution (one group per channel, one output channel each):
// bias plus one product per window position, with the weight's column of
// that position, in one elementwise generic over the views (f32: one fused
// multiply-add per position). Rows of 8 columns or more (here 32)
// keep the output's shape.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[CH:.*]] = affine_map<(d0, d1, d2, d3) -> (d1)>
// CHECK-LABEL: func.func @depthwise_wide
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x33x33xf32>, %[[W:.*]]: tensor<4x1x2x2xf32>, %[[B:.*]]: tensor<4xf32>)
// CHECK: %[[V0:.*]] = tensor.extract_slice %[[X]][0, 0, 0, 0] [1, 4, 32, 32] [1, 1, 1, 1]
// CHECK: %[[V3:.*]] = tensor.extract_slice %[[X]][0, 0, 1, 1] [1, 4, 32, 32] [1, 1, 1, 1]
// CHECK: %[[WC:.*]] = tensor.collapse_shape %[[W]] {{\[\[}}0], [1, 2, 3]] : tensor<4x1x2x2xf32> into tensor<4x4xf32>
// CHECK: %[[W0:.*]] = tensor.extract_slice %[[WC]][0, 0] [4, 1] [1, 1] : tensor<4x4xf32> to tensor<4xf32>
// CHECK: %[[W3:.*]] = tensor.extract_slice %[[WC]][0, 3] [4, 1] [1, 1] : tensor<4x4xf32> to tensor<4xf32>
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ID]], #[[ID]], #[[ID]], #[[CH]], #[[CH]], #[[CH]], #[[CH]], #[[CH]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
// CHECK-SAME: ins(%[[V0]], {{.*}}, %[[V3]], %[[W0]], {{.*}}, %[[W3]], %[[B]] :
// CHECK: ^bb0(%[[E0:[^:]*]]: f32, %{{[^:]*}}: f32, %{{[^:]*}}: f32, %{{[^:]*}}: f32, %[[C0:[^:]*]]: f32, %{{[^:]*}}: f32, %{{[^:]*}}: f32, %{{[^:]*}}: f32, %[[BIAS:[^:]*]]: f32,
// CHECK: %[[A0:.*]] = math.fma %[[E0]], %[[C0]], %[[BIAS]] : f32
// CHECK: %[[A1:.*]] = math.fma %{{.*}}, %{{.*}}, %[[A0]] : f32
// CHECK-COUNT-2: math.fma
// CHECK-NOT: arith.mulf
// CHECK-NOT: linalg.generic
func.func @depthwise_wide(%x: tensor<1x4x33x33xf32>, %w: tensor<4x1x2x2xf32>, %b: tensor<4xf32>) -> tensor<1x4x32x32xf32> {
  %0 = autopar.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 4 : i64} : (tensor<1x4x33x33xf32>, tensor<4x1x2x2xf32>, tensor<4xf32>) -> tensor<1x4x32x32xf32>
  return %0 : tensor<1x4x32x32xf32>
}

// -----

// A depthwise convolution whose output rows are narrow (5 columns: fewer
// than 8) is computed over its flattened padded
// plane: output position j = 6 y + x of the padded width 6, 30 positions
// rounded up to 32, each window position's view one contiguous run per
// channel at offset 6 dy + dx. The padding gains a row so that the last
// view (offset 7) stays inside; the columns past 5 are dropped.
// CHECK-DAG: #[[ID3:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[CH3:.*]] = affine_map<(d0, d1, d2) -> (d1)>
// CHECK-LABEL: func.func @depthwise_narrow
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x6x6xf32>, %[[W:.*]]: tensor<4x1x2x2xf32>, %[[B:.*]]: tensor<4xf32>)
// CHECK: %[[P:.*]] = tensor.pad %[[X]] low[0, 0, 0, 0] high[0, 0, 1, 0]
// CHECK: } : tensor<1x4x6x6xf32> to tensor<1x4x7x6xf32>
// CHECK: %[[F:.*]] = tensor.collapse_shape %[[P]] {{\[\[}}0], [1], [2, 3]] : tensor<1x4x7x6xf32> into tensor<1x4x42xf32>
// CHECK: %[[V0:.*]] = tensor.extract_slice %[[F]][0, 0, 0] [1, 4, 32] [1, 1, 1] : tensor<1x4x42xf32> to tensor<1x4x32xf32>
// CHECK: %[[V1:.*]] = tensor.extract_slice %[[F]][0, 0, 1] [1, 4, 32] [1, 1, 1]
// CHECK: %[[V2:.*]] = tensor.extract_slice %[[F]][0, 0, 6] [1, 4, 32] [1, 1, 1]
// CHECK: %[[V3:.*]] = tensor.extract_slice %[[F]][0, 0, 7] [1, 4, 32] [1, 1, 1]
// CHECK: %[[G:.*]] = linalg.generic {indexing_maps = [#[[ID3]], #[[ID3]], #[[ID3]], #[[ID3]], #[[CH3]], #[[CH3]], #[[CH3]], #[[CH3]], #[[CH3]], #[[ID3]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME: ins(%[[V0]], %[[V1]], %[[V2]], %[[V3]], {{.*}}, %[[B]] :
// CHECK-COUNT-4: math.fma
// CHECK: } -> tensor<1x4x32xf32>
// CHECK: %[[R:.*]] = tensor.extract_slice %[[G]][0, 0, 0] [1, 4, 30] [1, 1, 1] : tensor<1x4x32xf32> to tensor<1x4x30xf32>
// CHECK: %[[E:.*]] = tensor.expand_shape %[[R]] {{\[\[}}0], [1], [2, 3]] output_shape [1, 4, 5, 6] : tensor<1x4x30xf32> into tensor<1x4x5x6xf32>
// CHECK: %[[Y:.*]] = tensor.extract_slice %[[E]][0, 0, 0, 0] [1, 4, 5, 5] [1, 1, 1, 1] : tensor<1x4x5x6xf32> to tensor<1x4x5x5xf32>
// CHECK: return %[[Y]]
func.func @depthwise_narrow(%x: tensor<1x4x6x6xf32>, %w: tensor<4x1x2x2xf32>, %b: tensor<4xf32>) -> tensor<1x4x5x5xf32> {
  %0 = autopar.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 4 : i64} : (tensor<1x4x6x6xf32>, tensor<4x1x2x2xf32>, tensor<4xf32>) -> tensor<1x4x5x5xf32>
  return %0 : tensor<1x4x5x5xf32>
}

// -----

// Ceil mode: the end padding grows to hold the last window.
// CHECK-LABEL: func.func @max_pool_ceil
// CHECK: tensor.pad %{{.*}} low[0, 0, 0, 0] high[0, 0, 1, 1]
// CHECK: } : tensor<1x1x5x5xf32> to tensor<1x1x6x6xf32>
func.func @max_pool_ceil(%x: tensor<1x1x5x5xf32>) -> tensor<1x1x3x3xf32> {
  %0 = autopar.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = true} : (tensor<1x1x5x5xf32>) -> tensor<1x1x3x3xf32>
  return %0 : tensor<1x1x3x3xf32>
}

// -----

// Window sums divided by per-dimension counts: [2, 3] without the pads, [3, 3] with them.
// CHECK-DAG: #[[CNT:.*]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-LABEL: func.func @average_pool
// CHECK: %[[SUM:.*]] = linalg.generic
// CHECK: arith.addf
// CHECK: %[[COUNTS:.*]] = arith.constant dense<[2.000000e+00, 3.000000e+00]> : tensor<2xf32>
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[CNT]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME: ins(%[[SUM]], %[[COUNTS]] : tensor<1x1x2xf32>, tensor<2xf32>)
// CHECK: arith.divf
// CHECK: arith.constant dense<3.000000e+00> : tensor<2xf32>
func.func @average_pool(%x: tensor<1x1x4xf32>) -> (tensor<1x1x2xf32>, tensor<1x1x2xf32>) {
  %0 = autopar.average_pool %x {kernel_shape = array<i64: 3>, strides = array<i64: 2>, pads = array<i64: 1, 0>, dilations = array<i64: 1>} : (tensor<1x1x4xf32>) -> tensor<1x1x2xf32>
  %1 = autopar.average_pool %x {kernel_shape = array<i64: 3>, strides = array<i64: 2>, pads = array<i64: 1, 0>, dilations = array<i64: 1>, count_include_pad = true} : (tensor<1x1x4xf32>) -> tensor<1x1x2xf32>
  return %0, %1 : tensor<1x1x2xf32>, tensor<1x1x2xf32>
}

// -----

// CHECK-LABEL: func.func @global_average_pool
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction", "reduction"]
// CHECK: %[[N:.*]] = arith.constant 2.000000e+01 : f32
// CHECK: %[[MEAN:.*]] = linalg.generic
// CHECK: arith.divf %{{.*}}, %[[N]] : f32
// CHECK: tensor.expand_shape %[[MEAN]] {{\[\[}}0], [1, 2, 3]] output_shape [2, 3, 1, 1] : tensor<2x3xf32> into tensor<2x3x1x1xf32>
func.func @global_average_pool(%x: tensor<2x3x4x5xf32>) -> tensor<2x3x1x1xf32> {
  %0 = autopar.global_average_pool %x : (tensor<2x3x4x5xf32>) -> tensor<2x3x1x1xf32>
  return %0 : tensor<2x3x1x1xf32>
}
