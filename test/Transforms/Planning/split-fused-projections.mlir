// RUN: autopar-opt %s -split-input-file --autopar-split-fused-projections | FileCheck %s
// RUN: autopar-opt %s -split-input-file --autopar-split-fused-projections --autopar-apply-plan="grid=2 plan=tensor" | FileCheck %s --check-prefix=TENSOR

// GPT-2's attention projection as PyTorch exports nn.Linear(64, 192) then
// .split(64, dim=2): one projection per part on the part's columns of the
// weight and elements of the bias; the parts keep the split results' names.
// CHECK-LABEL: func.func @main
// CHECK-DAG: %[[W0:.*]] = autopar.weight "qkv.weight.part0of3" {autopar.weight_part = {axis = 1 : i64, offset = 0 : i64, source = "qkv.weight"}} : tensor<64x64xf32>
// CHECK-DAG: %[[W1:.*]] = autopar.weight "qkv.weight.part1of3" {autopar.weight_part = {axis = 1 : i64, offset = 64 : i64, source = "qkv.weight"}} : tensor<64x64xf32>
// CHECK-DAG: %[[W2:.*]] = autopar.weight "qkv.weight.part2of3" {autopar.weight_part = {axis = 1 : i64, offset = 128 : i64, source = "qkv.weight"}} : tensor<64x64xf32>
// CHECK-DAG: %[[B0:.*]] = autopar.weight "qkv.bias.part0of3" {autopar.weight_part = {axis = 0 : i64, offset = 0 : i64, source = "qkv.bias"}} : tensor<64xf32>
// CHECK-DAG: %[[B2:.*]] = autopar.weight "qkv.bias.part2of3" {autopar.weight_part = {axis = 0 : i64, offset = 128 : i64, source = "qkv.bias"}} : tensor<64xf32>
// CHECK-DAG: %[[P0:.*]] = autopar.matmul %arg0, %[[W0]] : (tensor<4x16x64xf32>, tensor<64x64xf32>) -> tensor<4x16x64xf32>
// CHECK-DAG: %[[Q:.*]] = autopar.add %[[B0]], %[[P0]] : (tensor<64xf32>, tensor<4x16x64xf32>) -> tensor<4x16x64xf32>
// CHECK-DAG: %[[P2:.*]] = autopar.matmul %arg0, %[[W2]]
// CHECK-DAG: %[[V:.*]] = autopar.add %[[B2]], %[[P2]]
// CHECK-NOT: autopar.split
// CHECK-NOT: "qkv.weight"
// CHECK: return %[[Q]], %{{.*}}, %[[V]]

// Each part is split by its own columns: every device holds its heads of q,
// k and v, and nothing is gathered.
// TENSOR-LABEL: func.func @main
// TENSOR: autopar.weight "qkv.weight.part0of3" {{.*}}autopar.shardings = [#autopar.sharding<{{\[\[}}], [0{{\]\]}}>]
// TENSOR: autopar.weight "qkv.weight.part1of3" {{.*}}autopar.shardings = [#autopar.sharding<{{\[\[}}], [0{{\]\]}}>]
// TENSOR: autopar.weight "qkv.weight.part2of3" {{.*}}autopar.shardings = [#autopar.sharding<{{\[\[}}], [0{{\]\]}}>]
// TENSOR-COUNT-3: autopar.add {{.*}}autopar.shardings = [#autopar.sharding<{{\[\[}}], [], [0{{\]\]}}>]
func.func @main(%x: tensor<4x16x64xf32> loc("x")) -> (tensor<4x16x64xf32>, tensor<4x16x64xf32>, tensor<4x16x64xf32>) {
  %w = autopar.weight "qkv.weight" : tensor<64x192xf32>
  %b = autopar.weight "qkv.bias" : tensor<192xf32>
  %p = autopar.matmul %x, %w : (tensor<4x16x64xf32>, tensor<64x192xf32>) -> tensor<4x16x192xf32> loc(fused<"MatMul_0">["p"])
  %s = autopar.add %b, %p : (tensor<192xf32>, tensor<4x16x192xf32>) -> tensor<4x16x192xf32> loc(fused<"Add_0">["s"])
  %q, %k, %v = autopar.split %s {axis = 2 : i64} : (tensor<4x16x192xf32>) -> (tensor<4x16x64xf32>, tensor<4x16x64xf32>, tensor<4x16x64xf32>) loc(fused<"Split_0">["q", "k", "v"])
  return %q, %k, %v : tensor<4x16x64xf32>, tensor<4x16x64xf32>, tensor<4x16x64xf32>
}

// -----

// nn.MultiheadAttention's in_proj through a Gemm with a transposed weight
// and its bias as C, cut by three slices (in any order): the weight is cut
// along its rows, the bias along its elements; alpha, beta and trans_b stay.
// CHECK-LABEL: func.func @main
// CHECK-DAG: %[[W1:.*]] = autopar.weight "in_proj_weight.part1of3" {autopar.weight_part = {axis = 0 : i64, offset = 8 : i64, source = "in_proj_weight"}} : tensor<8x8xf32>
// CHECK-DAG: %[[C1:.*]] = autopar.weight "in_proj_bias.part1of3" {autopar.weight_part = {axis = 0 : i64, offset = 8 : i64, source = "in_proj_bias"}} : tensor<8xf32>
// CHECK-DAG: %[[K:.*]] = autopar.gemm %arg0, %[[W1]], %[[C1]] {alpha = 5.000000e-01 : f32, trans_b = true} : (tensor<6x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<6x8xf32>
// CHECK-NOT: autopar.slice
// CHECK: return %{{.*}}, %[[K]], %{{.*}}
func.func @main(%x: tensor<6x8xf32> loc("x")) -> (tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>) {
  %w = autopar.weight "in_proj_weight" : tensor<24x8xf32>
  %c = autopar.weight "in_proj_bias" : tensor<24xf32>
  %p = autopar.gemm %x, %w, %c {alpha = 0.5 : f32, trans_b = true} : (tensor<6x8xf32>, tensor<24x8xf32>, tensor<24xf32>) -> tensor<6x24xf32> loc(fused<"Gemm_0">["p"])
  %v = autopar.slice %p {starts = array<i64: 0, 16>, steps = array<i64: 1, 1>} : (tensor<6x24xf32>) -> tensor<6x8xf32> loc(fused<"Slice_2">["v"])
  %q = autopar.slice %p {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<6x24xf32>) -> tensor<6x8xf32> loc(fused<"Slice_0">["q"])
  %k = autopar.slice %p {starts = array<i64: 0, 8>, steps = array<i64: 1, 1>} : (tensor<6x24xf32>) -> tensor<6x8xf32> loc(fused<"Slice_1">["k"])
  return %q, %k, %v : tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>
}

// -----

// A training export reads nn.Linear's [3E, E] weight through a Transpose:
// each part is a block of rows with its own transpose. The ops are built
// kind by kind, so the parts are no repeated blocks for the planner.
// CHECK-LABEL: func.func @main
// CHECK: %[[W0:.*]] = autopar.weight "qkv.weight.part0of3" {autopar.weight_part = {axis = 0 : i64, offset = 0 : i64, source = "qkv.weight"}} : tensor<8x8xf32>
// CHECK: autopar.weight "qkv.weight.part1of3" {autopar.weight_part = {axis = 0 : i64, offset = 8 : i64, source = "qkv.weight"}} : tensor<8x8xf32>
// CHECK: %[[T0:.*]] = autopar.transpose %[[W0]] {perm = array<i64: 1, 0>} : (tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK: autopar.transpose
// CHECK: autopar.transpose
// CHECK: autopar.matmul %arg0, %[[T0]] : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
// CHECK: autopar.matmul
// CHECK: autopar.matmul
// CHECK-COUNT-3: autopar.add
// CHECK-NOT: tensor<8x24xf32>
// CHECK-NOT: autopar.split
func.func @main(%x: tensor<2x4x8xf32> loc("x")) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %w = autopar.weight "qkv.weight" : tensor<24x8xf32>
  %b = autopar.weight "qkv.bias" : tensor<24xf32>
  %t = autopar.transpose %w {perm = array<i64: 1, 0>} : (tensor<24x8xf32>) -> tensor<8x24xf32> loc(fused<"Transpose_0">["t"])
  %p = autopar.matmul %x, %t : (tensor<2x4x8xf32>, tensor<8x24xf32>) -> tensor<2x4x24xf32> loc(fused<"MatMul_0">["p"])
  %s = autopar.add %p, %b : (tensor<2x4x24xf32>, tensor<24xf32>) -> tensor<2x4x24xf32> loc(fused<"Add_0">["s"])
  %q, %k, %v = autopar.split %s {axis = 2 : i64} : (tensor<2x4x24xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) loc(fused<"Split_0">["q", "k", "v"])
  return %q, %k, %v : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// -----

// Left as they are: a weight read elsewhere too, a split into unequal
// parts, a split along another dimension, and slices that overlap.
// CHECK-LABEL: func.func @main
// CHECK-NOT: weight_part
// CHECK: autopar.split
// CHECK-NOT: weight_part
// CHECK: autopar.split
// CHECK-NOT: weight_part
// CHECK: autopar.split
// CHECK-NOT: weight_part
// CHECK: autopar.slice
// CHECK-NOT: weight_part
// CHECK: autopar.slice
// CHECK-NOT: weight_part
func.func @main(%x: tensor<6x8xf32> loc("x")) -> (tensor<6x8xf32>, tensor<6x8xf32>, tensor<3x24xf32>, tensor<6x12xf32>, tensor<8x24xf32>) {
  %w = autopar.weight "shared" : tensor<8x24xf32>
  %p = autopar.matmul %x, %w : (tensor<6x8xf32>, tensor<8x24xf32>) -> tensor<6x24xf32>
  %a:3 = autopar.split %p {axis = 1 : i64} : (tensor<6x24xf32>) -> (tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>)
  %w2 = autopar.weight "unequal" : tensor<8x24xf32>
  %p2 = autopar.matmul %x, %w2 : (tensor<6x8xf32>, tensor<8x24xf32>) -> tensor<6x24xf32>
  %b:2 = autopar.split %p2 {axis = 1 : i64} : (tensor<6x24xf32>) -> (tensor<6x8xf32>, tensor<6x16xf32>)
  %w3 = autopar.weight "rows" : tensor<8x24xf32>
  %p3 = autopar.matmul %x, %w3 : (tensor<6x8xf32>, tensor<8x24xf32>) -> tensor<6x24xf32>
  %c:2 = autopar.split %p3 {axis = 0 : i64} : (tensor<6x24xf32>) -> (tensor<3x24xf32>, tensor<3x24xf32>)
  %w4 = autopar.weight "overlap" : tensor<8x24xf32>
  %p4 = autopar.matmul %x, %w4 : (tensor<6x8xf32>, tensor<8x24xf32>) -> tensor<6x24xf32>
  %d = autopar.slice %p4 {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<6x24xf32>) -> tensor<6x12xf32>
  %e = autopar.slice %p4 {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<6x24xf32>) -> tensor<6x12xf32>
  return %a#0, %b#0, %c#0, %e, %w : tensor<6x8xf32>, tensor<6x8xf32>, tensor<3x24xf32>, tensor<6x12xf32>, tensor<8x24xf32>
}

// -----

// nn.TransformerEncoder exported in eval mode: its layers are deep copies of
// one layer, and the export keeps one initializer for equal weights, so both
// layers' projections read one weight and one bias. The weight is split once
// (before the first projection) and both layers read its parts.
// CHECK-LABEL: func.func @main
// CHECK-NOT: "in_proj"
// CHECK-NOT: "in_proj_bias"
// CHECK: %[[W0:.*]] = autopar.weight "in_proj.part0of3" {autopar.weight_part = {axis = 1 : i64, offset = 0 : i64, source = "in_proj"}} : tensor<8x8xf32>
// CHECK: %[[W1:.*]] = autopar.weight "in_proj.part1of3"
// CHECK: %[[W2:.*]] = autopar.weight "in_proj.part2of3"
// CHECK: %[[P0:.*]] = autopar.matmul %arg0, %[[W0]]
// CHECK: %[[P1:.*]] = autopar.matmul %arg0, %[[W1]]
// CHECK: %[[P2:.*]] = autopar.matmul %arg0, %[[W2]]
// CHECK: %[[B0:.*]] = autopar.weight "in_proj_bias.part0of3"
// CHECK: %[[B1:.*]] = autopar.weight "in_proj_bias.part1of3"
// CHECK: %[[B2:.*]] = autopar.weight "in_proj_bias.part2of3"
// CHECK: %[[Q:.*]] = autopar.add %[[P0]], %[[B0]]
// CHECK: %[[K:.*]] = autopar.add %[[P1]], %[[B1]]
// CHECK: %[[V:.*]] = autopar.add %[[P2]], %[[B2]]
// CHECK: %[[Y:.*]] = autopar.add %[[Q]], %[[V]]
// CHECK-NOT: autopar.weight
// CHECK: %[[R0:.*]] = autopar.matmul %[[Y]], %[[W0]]
// CHECK: autopar.matmul %[[Y]], %[[W1]]
// CHECK: autopar.matmul %[[Y]], %[[W2]]
// CHECK-NOT: autopar.weight
// CHECK: %[[Q2:.*]] = autopar.add %[[R0]], %[[B0]]
// CHECK: %[[K2:.*]] = autopar.add %{{.*}}, %[[B1]]
// CHECK: autopar.add %{{.*}}, %[[B2]]
// CHECK-NOT: autopar.split
// CHECK: return %[[K]], %[[Q2]], %[[K2]]
func.func @main(%x: tensor<2x4x8xf32> loc("x")) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %w = autopar.weight "in_proj" : tensor<8x24xf32>
  %b = autopar.weight "in_proj_bias" : tensor<24xf32>
  %p = autopar.matmul %x, %w : (tensor<2x4x8xf32>, tensor<8x24xf32>) -> tensor<2x4x24xf32> loc(fused<"MatMul_0">["p"])
  %s = autopar.add %p, %b : (tensor<2x4x24xf32>, tensor<24xf32>) -> tensor<2x4x24xf32> loc(fused<"Add_0">["s"])
  %q, %k, %v = autopar.split %s {axis = 2 : i64} : (tensor<2x4x24xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) loc(fused<"Split_0">["q", "k", "v"])
  %y = autopar.add %q, %v : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc(fused<"Add_1">["y"])
  %p2 = autopar.matmul %y, %w : (tensor<2x4x8xf32>, tensor<8x24xf32>) -> tensor<2x4x24xf32> loc(fused<"MatMul_1">["p2"])
  %s2 = autopar.add %p2, %b : (tensor<2x4x24xf32>, tensor<24xf32>) -> tensor<2x4x24xf32> loc(fused<"Add_2">["s2"])
  %q2, %k2, %v2 = autopar.split %s2 {axis = 2 : i64} : (tensor<2x4x24xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) loc(fused<"Split_1">["q2", "k2", "v2"])
  return %k, %q2, %k2, %v2 : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// -----

// Left fused: one weight read by two projections cut into 3 and into 2
// parts, and one read by a projection and by another op.
// CHECK-LABEL: func.func @main
// CHECK-NOT: weight_part
// CHECK: autopar.split
// CHECK-NOT: weight_part
// CHECK: autopar.split
// CHECK-NOT: weight_part
// CHECK: autopar.split
// CHECK-NOT: weight_part
func.func @main(%x: tensor<6x8xf32> loc("x")) -> (tensor<6x8xf32>, tensor<6x12xf32>, tensor<6x8xf32>, tensor<8x24xf32>) {
  %w = autopar.weight "mixed" : tensor<8x24xf32>
  %p = autopar.matmul %x, %w : (tensor<6x8xf32>, tensor<8x24xf32>) -> tensor<6x24xf32>
  %a:3 = autopar.split %p {axis = 1 : i64} : (tensor<6x24xf32>) -> (tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>)
  %p2 = autopar.matmul %x, %w : (tensor<6x8xf32>, tensor<8x24xf32>) -> tensor<6x24xf32>
  %b:2 = autopar.split %p2 {axis = 1 : i64} : (tensor<6x24xf32>) -> (tensor<6x12xf32>, tensor<6x12xf32>)
  %w3 = autopar.weight "read_elsewhere" : tensor<8x24xf32>
  %p3 = autopar.matmul %x, %w3 : (tensor<6x8xf32>, tensor<8x24xf32>) -> tensor<6x24xf32>
  %c:3 = autopar.split %p3 {axis = 1 : i64} : (tensor<6x24xf32>) -> (tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>)
  %n = autopar.neg %w3 : (tensor<8x24xf32>) -> tensor<8x24xf32>
  return %a#0, %b#0, %c#0, %n : tensor<6x8xf32>, tensor<6x12xf32>, tensor<6x8xf32>, tensor<8x24xf32>
}
