// RUN: autopar-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(autopar-test-sharding-rules))" -verify-diagnostics

// Each op's sharding rule, as its ODS definition declares it: loop iterator
// types (`*`: the loop stays whole), indexing maps (operands then results) and
// the operands summed into the result.

// Elementwise with broadcasting (the default rule): a size-1 dimension that
// broadcasts maps to 0.
func.func @elementwise(%a: tensor<8x16xf32>, %b: tensor<1x16xf32>) -> tensor<8x16xf32> {
  // expected-remark @+1 {{sharding rule: loops = [parallel, parallel], maps = [(d0, d1) -> (d0, d1), (d0, d1) -> (0, d1), (d0, d1) -> (d0, d1)], additive = []}}
  %y = autopar.add %a, %b : (tensor<8x16xf32>, tensor<1x16xf32>) -> tensor<8x16xf32>
  // expected-remark @+1 {{sharding rule: loops = [parallel, parallel], maps = [(d0, d1) -> (d0, d1), (d0, d1) -> (d0, d1)], additive = []}}
  %e = autopar.exp %y : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return %e : tensor<8x16xf32>
}

// -----

// Gemm: the contraction is a reduction loop and C is summed into the result.
func.func @gemm(%a: tensor<8x4xf32>, %b: tensor<16x4xf32>, %c: tensor<16xf32>) -> tensor<8x16xf32> {
  // expected-remark @+1 {{sharding rule: loops = [parallel, parallel, reduction], maps = [(d0, d1, d2) -> (d0, d2), (d0, d1, d2) -> (d1, d2), (d0, d1, d2) -> (d1), (d0, d1, d2) -> (d0, d1)], additive = [2]}}
  %y = autopar.gemm %a, %b, %c {trans_b = true} : (tensor<8x4xf32>, tensor<16x4xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// Softmax keeps its axis whole; a mean keeps its reduced dimension whole.
func.func @whole_loops(%x: tensor<4x8xf32>) -> tensor<4x1xf32> {
  // expected-remark @+1 {{sharding rule: loops = [parallel, parallel*], maps = [(d0, d1) -> (d0, d1), (d0, d1) -> (d0, d1)], additive = []}}
  %s = autopar.softmax %x {axis = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // expected-remark @+1 {{sharding rule: loops = [parallel, reduction*], maps = [(d0, d1) -> (d0, d1), (d0, d1) -> (d0, 0)], additive = []}}
  %m = autopar.reduce_mean %s {axes = array<i64: 1>} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  return %m : tensor<4x1xf32>
}

// -----

// A sum may be split along its reduced dimension (a pending sum).
func.func @sum(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-remark @+1 {{sharding rule: loops = [parallel, reduction], maps = [(d0, d1) -> (d0, d1), (d0, d1) -> (d0)], additive = []}}
  %m = autopar.reduce_sum %x {axes = array<i64: 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<4xf32>
  return %m : tensor<4xf32>
}

// -----

// Partitioned-program ops carry no rule.
shard.grid @grid(shape = 2)
func.func @no_rule(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-remark @+1 {{no sharding rule}}
  %p = autopar.to_partial %x on @grid grid_axes = [0] : tensor<4xf32>
  return %p : tensor<4xf32>
}

// -----

// Elementwise math and activations take the default rule; so do the binary
// max/min/mod/prelu (the slope broadcasts) and the predicates.
func.func @new_elementwise(%x: tensor<4x8xf32>, %s: tensor<8xf32>) -> tensor<4x8xi1> {
  // expected-remark @+1 {{sharding rule: loops = [parallel, parallel], maps = [(d0, d1) -> (d0, d1), (d0, d1) -> (d0, d1)], additive = []}}
  %a = autopar.acosh %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // expected-remark @+1 {{sharding rule: loops = [parallel, parallel], maps = [(d0, d1) -> (d0, d1), (d0, d1) -> (d0, d1)], additive = []}}
  %h = autopar.hard_sigmoid %a {alpha = 5.000000e-01 : f32} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // expected-remark @+1 {{sharding rule: loops = [parallel, parallel], maps = [(d0, d1) -> (d0, d1), (d0, d1) -> (d1), (d0, d1) -> (d0, d1)], additive = []}}
  %p = autopar.prelu %h, %s : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // expected-remark @+1 {{sharding rule: loops = [parallel, parallel], maps = [(d0, d1) -> (d0, d1), (d0, d1) -> (d1), (d0, d1) -> (d0, d1)], additive = []}}
  %m = autopar.max %p, %s : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // expected-remark @+1 {{sharding rule: loops = [parallel, parallel], maps = [(d0, d1) -> (d0, d1), (d0, d1) -> (d0, d1)], additive = []}}
  %i = autopar.is_inf %m {detect_negative = false} : (tensor<4x8xf32>) -> tensor<4x8xi1>
  return %i : tensor<4x8xi1>
}

// -----

// L1 and the sum of squares may be split along the reduced dimension (a
// pending sum); min, product, L2, log-sum and log-sum-exp keep it whole.
func.func @other_reductions(%x: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<4x1xf32>, tensor<4xf32>, tensor<4xf32>) {
  // expected-remark @+1 {{sharding rule: loops = [parallel, reduction], maps = [(d0, d1) -> (d0, d1), (d0, d1) -> (d0)], additive = []}}
  %l1 = autopar.reduce_l1 %x {axes = array<i64: 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<4xf32>
  // expected-remark @+1 {{sharding rule: loops = [parallel, reduction], maps = [(d0, d1) -> (d0, d1), (d0, d1) -> (d0, 0)], additive = []}}
  %ss = autopar.reduce_sum_square %x {axes = array<i64: 1>} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  // expected-remark @+1 {{sharding rule: loops = [parallel, reduction*], maps = [(d0, d1) -> (d0, d1), (d0, d1) -> (d0)], additive = []}}
  %l2 = autopar.reduce_l2 %x {axes = array<i64: 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<4xf32>
  // expected-remark @+1 {{sharding rule: loops = [parallel, reduction*], maps = [(d0, d1) -> (d0, d1), (d0, d1) -> (d0)], additive = []}}
  %lse = autopar.reduce_log_sum_exp %x {axes = array<i64: 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<4xf32>
  return %l1, %ss, %l2, %lse : tensor<4xf32>, tensor<4x1xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// ArgMax keeps its axis whole.
func.func @arg_max(%x: tensor<4x8xf32>) -> tensor<1x8xi64> {
  // expected-remark @+1 {{sharding rule: loops = [reduction*, parallel], maps = [(d0, d1) -> (d0, d1), (d0, d1) -> (0, d1)], additive = []}}
  %i = autopar.arg_max %x {axis = 0 : i64} : (tensor<4x8xf32>) -> tensor<1x8xi64>
  return %i : tensor<1x8xi64>
}

// -----

// GatherElements: the axis splits the indices only (data stays whole along
// it); a dimension where data and indices differ in size stays whole.
func.func @gather_elements(%d: tensor<4x8x3xf32>, %i: tensor<2x8x2xi64>) -> tensor<2x8x2xf32> {
  // expected-remark @+1 {{sharding rule: loops = [parallel, parallel, parallel*], maps = [(d0, d1, d2) -> (0, d1, 0), (d0, d1, d2) -> (d0, d1, d2), (d0, d1, d2) -> (d0, d1, d2)], additive = []}}
  %y = autopar.gather_elements %d, %i {axis = 0 : i64} : (tensor<4x8x3xf32>, tensor<2x8x2xi64>) -> tensor<2x8x2xf32>
  return %y : tensor<2x8x2xf32>
}

// -----

// Pad: padded dimensions stay whole; the pad value is replicated.
func.func @pad(%x: tensor<4x8xf32>, %v: tensor<f32>) -> tensor<4x11xf32> {
  // expected-remark @+1 {{sharding rule: loops = [parallel, parallel*], maps = [(d0, d1) -> (d0, d1), (d0, d1) -> (), (d0, d1) -> (d0, d1)], additive = []}}
  %y = autopar.pad %x, %v {pads = array<i64: 0, 1, 0, 2>} : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x11xf32>
  return %y : tensor<4x11xf32>
}

// -----

// TopK: the axis stays whole (the k best need the whole slice); the other
// dimensions split the input and both results.
func.func @top_k(%x: tensor<4x10xf32>) -> (tensor<4x3xf32>, tensor<4x3xi64>) {
  // expected-remark @+1 {{sharding rule: loops = [parallel, parallel*], maps = [(d0, d1) -> (d0, d1), (d0, d1) -> (d0, 0), (d0, d1) -> (d0, 0)], additive = []}}
  %v, %i = autopar.top_k %x {axis = 1 : i64, k = 3 : i64} : (tensor<4x10xf32>) -> (tensor<4x3xf32>, tensor<4x3xi64>)
  return %v, %i : tensor<4x3xf32>, tensor<4x3xi64>
}

// -----

// ScatterElements: the axis stays whole (an index may point anywhere on
// it); a dimension where indices have the size of data splits all four.
func.func @scatter_elements(%d: tensor<4x8x3xf32>, %i: tensor<4x2x3xi64>, %u: tensor<4x2x3xf32>) -> tensor<4x8x3xf32> {
  // expected-remark @+1 {{sharding rule: loops = [parallel, parallel*, parallel], maps = [(d0, d1, d2) -> (d0, d1, d2), (d0, d1, d2) -> (d0, 0, d2), (d0, d1, d2) -> (d0, 0, d2), (d0, d1, d2) -> (d0, d1, d2)], additive = []}}
  %y = autopar.scatter_elements %d, %i, %u {axis = 1 : i64, reduction = "add"} : (tensor<4x8x3xf32>, tensor<4x2x3xi64>, tensor<4x2x3xf32>) -> tensor<4x8x3xf32>
  return %y : tensor<4x8x3xf32>
}

// -----

// ScatterND: the k = 2 indexed dimensions stay whole and the indices are
// replicated; the trailing dimension splits data, updates and the result.
func.func @scatter_nd(%d: tensor<4x5x8xf32>, %i: tensor<2x2xi64>, %u: tensor<2x8xf32>) -> tensor<4x5x8xf32> {
  // expected-remark @+1 {{sharding rule: loops = [parallel*, parallel*, parallel], maps = [(d0, d1, d2) -> (d0, d1, d2), (d0, d1, d2) -> (0, 0), (d0, d1, d2) -> (0, d2), (d0, d1, d2) -> (d0, d1, d2)], additive = []}}
  %y = autopar.scatter_nd %d, %i, %u : (tensor<4x5x8xf32>, tensor<2x2xi64>, tensor<2x8xf32>) -> tensor<4x5x8xf32>
  return %y : tensor<4x5x8xf32>
}

// -----

// QuantizeLinear and DequantizeLinear are elementwise: a per-axis scale and
// zero point follow the loop of their axis, per-tensor ones are broadcast
// (rank 0: no dimension; one element: the constant 0).
func.func @quantization(%x: tensor<2x3x4xf32>, %s: tensor<3xf32>, %z: tensor<3xui8>, %s1: tensor<1xf32>, %z1: tensor<1xi8>, %s0: tensor<f32>, %z0: tensor<ui8>) -> (tensor<2x3x4xui8>, tensor<2x3x4xf32>, tensor<2x3x4xi8>, tensor<2x3x4xf32>) {
  // expected-remark @+1 {{sharding rule: loops = [parallel, parallel, parallel], maps = [(d0, d1, d2) -> (d0, d1, d2), (d0, d1, d2) -> (d1), (d0, d1, d2) -> (d1), (d0, d1, d2) -> (d0, d1, d2)], additive = []}}
  %q = autopar.quantize_linear %x, %s, %z {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xui8>) -> tensor<2x3x4xui8>
  // expected-remark @+1 {{sharding rule: loops = [parallel, parallel, parallel], maps = [(d0, d1, d2) -> (d0, d1, d2), (d0, d1, d2) -> (d1), (d0, d1, d2) -> (d1), (d0, d1, d2) -> (d0, d1, d2)], additive = []}}
  %d = autopar.dequantize_linear %q, %s, %z {axis = 1 : i64} : (tensor<2x3x4xui8>, tensor<3xf32>, tensor<3xui8>) -> tensor<2x3x4xf32>
  // expected-remark @+1 {{sharding rule: loops = [parallel, parallel, parallel], maps = [(d0, d1, d2) -> (d0, d1, d2), (d0, d1, d2) -> (0), (d0, d1, d2) -> (0), (d0, d1, d2) -> (d0, d1, d2)], additive = []}}
  %q1 = autopar.quantize_linear %x, %s1, %z1 : (tensor<2x3x4xf32>, tensor<1xf32>, tensor<1xi8>) -> tensor<2x3x4xi8>
  // expected-remark @+1 {{sharding rule: loops = [parallel, parallel, parallel], maps = [(d0, d1, d2) -> (d0, d1, d2), (d0, d1, d2) -> (), (d0, d1, d2) -> (), (d0, d1, d2) -> (d0, d1, d2)], additive = []}}
  %d0 = autopar.dequantize_linear %q, %s0, %z0 : (tensor<2x3x4xui8>, tensor<f32>, tensor<ui8>) -> tensor<2x3x4xf32>
  return %q, %d, %q1, %d0 : tensor<2x3x4xui8>, tensor<2x3x4xf32>, tensor<2x3x4xi8>, tensor<2x3x4xf32>
}

// -----

// BitShift is elementwise (the shift amounts broadcast) on ui8.
func.func @bit_shift(%x: tensor<4x8xui8>, %s: tensor<8xui8>) -> tensor<4x8xui8> {
  // expected-remark @+1 {{sharding rule: loops = [parallel, parallel], maps = [(d0, d1) -> (d0, d1), (d0, d1) -> (d1), (d0, d1) -> (d0, d1)], additive = []}}
  %r = autopar.bit_shift %x, %s {right = true} : (tensor<4x8xui8>, tensor<8xui8>) -> tensor<4x8xui8>
  return %r : tensor<4x8xui8>
}

// -----

// Random numbers are a function of each element's global position: every
// dimension may be split; the step counter is one replicated element.
func.func @random_uniform(%step: tensor<1xi64>) -> tensor<4x8xf32> {
  // expected-remark @+1 {{sharding rule: loops = [parallel, parallel], maps = [(d0, d1) -> (0), (d0, d1) -> (d0, d1)], additive = []}}
  %u = autopar.random_uniform counter %step {seed = 3 : i64} : (tensor<1xi64>) -> tensor<4x8xf32>
  return %u : tensor<4x8xf32>
}
