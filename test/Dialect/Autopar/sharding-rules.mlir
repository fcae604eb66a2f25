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
