// RUN: autopar-opt %s -split-input-file --autopar-lower-program-to-runtime -verify-diagnostics | FileCheck %s

// Inputs, weights (numbered by first appearance) and outputs. Inputs and
// outputs pass their block layout: global sizes, then the encoded grid axes
// splitting each dimension (0: whole).
// CHECK-NOT: shard.grid
// CHECK-DAG: func.func private @autopar_rt_read_input_f32(i64, memref<*xf32>, memref<*xi64>)
// CHECK-DAG: func.func private @autopar_rt_read_input_i32(i64, memref<*xi32>, memref<*xi64>)
// CHECK-DAG: memref.global "private" @__autopar_weight_0 : memref<4x8xf32> = uninitialized {alignment = 64 : i64}
// CHECK-DAG: memref.global "private" @__autopar_weight_1 : memref<8xf32> = uninitialized {alignment = 64 : i64}
// CHECK-DAG: func.func private @autopar_rt_resident_weight_f32(i64, memref<*xf32>)
// CHECK-DAG: func.func private @autopar_rt_write_output_f32(i64, memref<*xf32>, memref<*xi64>)
// CHECK-DAG: func.func private @autopar_rt_write_output_i32(i64, memref<*xi32>, memref<*xi64>)
// CHECK-LABEL: func.func @autopar_main() {
// CHECK: %[[IN0:.*]] = memref.alloc() : memref<2x4xf32>
// CHECK-NEXT: %[[IN0U:.*]] = memref.cast %[[IN0]] : memref<2x4xf32> to memref<*xf32>
// CHECK-NEXT: %[[L0:.*]] = arith.constant dense<[2, 4, 0, 0]> : tensor<4xi64>
// CHECK-NEXT: %[[L0B:.*]] = bufferization.to_buffer %[[L0]] read_only : tensor<4xi64> to memref<4xi64>
// CHECK-NEXT: %[[L0U:.*]] = memref.cast %[[L0B]] : memref<4xi64> to memref<*xi64>
// CHECK-NEXT: %[[I0:.*]] = arith.constant 0 : i64
// CHECK-NEXT: call @autopar_rt_read_input_f32(%[[I0]], %[[IN0U]], %[[L0U]]) : (i64, memref<*xf32>, memref<*xi64>) -> ()
// CHECK-NEXT: %[[X:.*]] = bufferization.to_tensor %[[IN0]] restrict : memref<2x4xf32> to tensor<2x4xf32>
// CHECK-NEXT: %[[IN1:.*]] = memref.alloc() : memref<3xi32>
// CHECK-NEXT: %[[IN1U:.*]] = memref.cast %[[IN1]] : memref<3xi32> to memref<*xi32>
// CHECK-NEXT: arith.constant dense<[3, 0]> : tensor<2xi64>
// CHECK-NEXT: bufferization.to_buffer
// CHECK-NEXT: %[[L1U:.*]] = memref.cast
// CHECK-NEXT: %[[I1:.*]] = arith.constant 1 : i64
// CHECK-NEXT: call @autopar_rt_read_input_i32(%[[I1]], %[[IN1U]], %[[L1U]])
// CHECK-NEXT: %[[N:.*]] = bufferization.to_tensor %[[IN1]] restrict
// Weights the program never stores are resident: one aligned global per
// name, filled once per process, read through one tensor for all its uses.
// CHECK-NEXT: %[[W0:.*]] = memref.get_global @__autopar_weight_0 : memref<4x8xf32>
// CHECK-NEXT: %[[W0U:.*]] = memref.cast %[[W0]]
// CHECK-NEXT: %[[ID0:.*]] = arith.constant 0 : i64
// CHECK-NEXT: call @autopar_rt_resident_weight_f32(%[[ID0]], %[[W0U]])
// CHECK-NEXT: %[[WT:.*]] = bufferization.to_tensor %[[W0]] restrict
// CHECK-NEXT: %[[W1:.*]] = memref.get_global @__autopar_weight_1 : memref<8xf32>
// CHECK-NEXT: memref.cast
// CHECK-NEXT: %[[ID1:.*]] = arith.constant 1 : i64
// CHECK-NEXT: call @autopar_rt_resident_weight_f32(%[[ID1]], %{{.*}})
// CHECK-NEXT: %[[BT:.*]] = bufferization.to_tensor %[[W1]] restrict
// CHECK-NOT: autopar_rt_resident_weight
// CHECK-NOT: autopar.weight
// CHECK-NEXT: %[[Y:.*]] = autopar.matmul %[[X]], %[[WT]]
// CHECK-NEXT: %[[Z:.*]] = autopar.add %[[Y]], %[[BT]]
// CHECK-NEXT: autopar.matmul %[[X]], %[[WT]]
// CHECK: %[[OUT:.*]] = bufferization.to_buffer %{{.*}} read_only : tensor<2x8xf32> to memref<2x8xf32>
// CHECK-NEXT: %[[OUTU:.*]] = memref.cast %[[OUT]] : memref<2x8xf32> to memref<*xf32>
// CHECK-NEXT: arith.constant dense<[2, 8, 0, 0]> : tensor<4xi64>
// CHECK-NEXT: bufferization.to_buffer
// CHECK-NEXT: %[[LO0:.*]] = memref.cast
// CHECK-NEXT: %[[O0:.*]] = arith.constant 0 : i64
// CHECK-NEXT: call @autopar_rt_write_output_f32(%[[O0]], %[[OUTU]], %[[LO0]])
// CHECK-NEXT: bufferization.to_buffer %[[N]] read_only : tensor<3xi32> to memref<3xi32>
// CHECK-NEXT: %[[NU:.*]] = memref.cast
// CHECK-NEXT: arith.constant dense<[3, 0]> : tensor<2xi64>
// CHECK-NEXT: bufferization.to_buffer
// CHECK-NEXT: %[[LO1:.*]] = memref.cast
// CHECK-NEXT: %[[O1:.*]] = arith.constant 1 : i64
// CHECK-NEXT: call @autopar_rt_write_output_i32(%[[O1]], %[[NU]], %[[LO1]])
// CHECK-NEXT: return
shard.grid @grid(shape = 1)
func.func @main(%x: tensor<2x4xf32>, %n: tensor<3xi32>) -> (tensor<2x8xf32>, tensor<3xi32>) {
  %w = autopar.weight "fc.weight" {autopar.global_type = tensor<4x8xf32>} : tensor<4x8xf32>
  %b = autopar.weight "fc.bias" : tensor<8xf32>
  %w2 = autopar.weight "fc.weight" : tensor<4x8xf32>
  %y = autopar.matmul %x, %w : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  %z = autopar.add %y, %b : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %u = autopar.matmul %x, %w2 : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  %v = autopar.add %z, %u : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %v, %n : tensor<2x8xf32>, tensor<3xi32>
}

// -----

// Collectives on a 2x2 grid: axes are encoded as hexadecimal digits (axis + 1).
// CHECK-NOT: shard.grid
// CHECK-DAG: func.func private @autopar_rt_group_index(i64) -> i64
// CHECK-DAG: func.func private @autopar_rt_all_reduce_f32(memref<*xf32>, memref<*xf32>, i64)
// CHECK-DAG: func.func private @autopar_rt_all_gather_f32(memref<*xf32>, memref<*xf32>, i64, i64)
// CHECK-DAG: func.func private @autopar_rt_reduce_scatter_f32(memref<*xf32>, memref<*xf32>, i64, i64)
// CHECK-DAG: func.func private @autopar_rt_all_to_all_f32(memref<*xf32>, memref<*xf32>, i64, i64, i64)
// CHECK-LABEL: func.func @autopar_main() {
// CHECK: %[[X:.*]] = bufferization.to_tensor %{{.*}} restrict : memref<8x4xf32> to tensor<8x4xf32>
//
// all_slice over [1, 0] (code 0x21 = 33) along dim 1, local size 1.
// CHECK-NEXT: %[[C33:.*]] = arith.constant 33 : i64
// CHECK-NEXT: %[[GI:.*]] = call @autopar_rt_group_index(%[[C33]]) : (i64) -> i64
// CHECK-NEXT: %[[SZ:.*]] = arith.constant 1 : i64
// CHECK-NEXT: %[[OFF:.*]] = arith.muli %[[GI]], %[[SZ]] : i64
// CHECK-NEXT: %[[OFFI:.*]] = arith.index_cast %[[OFF]] : i64 to index
// CHECK-NEXT: %[[S:.*]] = tensor.extract_slice %[[X]][0, %[[OFFI]]] [8, 1] [1, 1] : tensor<8x4xf32> to tensor<8x1xf32>
//
// all_reduce over [0, 1] (code 0x12 = 18) into a caller-allocated buffer.
// CHECK-NEXT: %[[IN:.*]] = bufferization.to_buffer %[[S]] read_only : tensor<8x1xf32> to memref<8x1xf32>
// CHECK-NEXT: %[[INU:.*]] = memref.cast %[[IN]] : memref<8x1xf32> to memref<*xf32>
// CHECK-NEXT: %[[RB:.*]] = memref.alloc() : memref<8x1xf32>
// CHECK-NEXT: %[[RBU:.*]] = memref.cast %[[RB]] : memref<8x1xf32> to memref<*xf32>
// CHECK-NEXT: %[[C18:.*]] = arith.constant 18 : i64
// CHECK-NEXT: call @autopar_rt_all_reduce_f32(%[[INU]], %[[RBU]], %[[C18]]) : (memref<*xf32>, memref<*xf32>, i64) -> ()
// CHECK-NEXT: %[[R:.*]] = bufferization.to_tensor %[[RB]] restrict : memref<8x1xf32> to tensor<8x1xf32>
//
// all_gather over [1, 0] along dim 1.
// CHECK-NEXT: bufferization.to_buffer %[[R]] read_only
// CHECK-NEXT: %[[GIN:.*]] = memref.cast
// CHECK-NEXT: %[[GB:.*]] = memref.alloc() : memref<8x4xf32>
// CHECK-NEXT: %[[GBU:.*]] = memref.cast %[[GB]]
// CHECK-NEXT: %[[G33:.*]] = arith.constant 33 : i64
// CHECK-NEXT: %[[GD:.*]] = arith.constant 1 : i64
// CHECK-NEXT: call @autopar_rt_all_gather_f32(%[[GIN]], %[[GBU]], %[[G33]], %[[GD]])
// CHECK-NEXT: bufferization.to_tensor %[[GB]] restrict
//
// reduce_scatter over [0] (code 1) along dim 0.
// CHECK-NEXT: bufferization.to_buffer %[[X]] read_only
// CHECK-NEXT: memref.cast
// CHECK-NEXT: memref.alloc() : memref<4x4xf32>
// CHECK-NEXT: memref.cast
// CHECK-NEXT: %[[RS1:.*]] = arith.constant 1 : i64
// CHECK-NEXT: %[[RSD:.*]] = arith.constant 0 : i64
// CHECK-NEXT: call @autopar_rt_reduce_scatter_f32(%{{.*}}, %{{.*}}, %[[RS1]], %[[RSD]])
// CHECK-NEXT: %[[RS:.*]] = bufferization.to_tensor
//
// all_to_all over [1] (code 2), split 1, concat 0.
// CHECK-NEXT: bufferization.to_buffer %[[X]] read_only
// CHECK-NEXT: memref.cast
// CHECK-NEXT: memref.alloc() : memref<16x2xf32>
// CHECK-NEXT: memref.cast
// CHECK-NEXT: %[[A2:.*]] = arith.constant 2 : i64
// CHECK-NEXT: %[[SPLIT:.*]] = arith.constant 1 : i64
// CHECK-NEXT: %[[CONCAT:.*]] = arith.constant 0 : i64
// CHECK-NEXT: call @autopar_rt_all_to_all_f32(%{{.*}}, %{{.*}}, %[[A2]], %[[SPLIT]], %[[CONCAT]])
// CHECK-NEXT: bufferization.to_tensor
//
// to_partial over [1]: device 0 of the group keeps the value, the others zeros.
// CHECK-NEXT: %[[P2:.*]] = arith.constant 2 : i64
// CHECK-NEXT: %[[PG:.*]] = call @autopar_rt_group_index(%[[P2]])
// CHECK-NEXT: %[[ZI:.*]] = arith.constant 0 : i64
// CHECK-NEXT: %[[FIRST:.*]] = arith.cmpi eq, %[[PG]], %[[ZI]] : i64
// CHECK-NEXT: %[[ZEROS:.*]] = arith.constant dense<0.000000e+00> : tensor<4x4xf32>
// CHECK-NEXT: arith.select %[[FIRST]], %[[RS]], %[[ZEROS]] : tensor<4x4xf32>
shard.grid @grid(shape = 2x2)
func.func @main(%x: tensor<8x4xf32>) -> (tensor<8x1xf32>, tensor<8x4xf32>, tensor<4x4xf32>, tensor<8x2xf32>) {
  %s = shard.all_slice %x on @grid grid_axes = [1, 0] slice_axis = 1 : tensor<8x4xf32> -> tensor<8x1xf32>
  %r = shard.all_reduce %s on @grid grid_axes = [0, 1] : tensor<8x1xf32> -> tensor<8x1xf32>
  %g = shard.all_gather %r on @grid grid_axes = [1, 0] gather_axis = 1 : tensor<8x1xf32> -> tensor<8x4xf32>
  %rs = shard.reduce_scatter %x on @grid grid_axes = [0] scatter_axis = 0 : tensor<8x4xf32> -> tensor<4x4xf32>
  %a = shard.all_to_all %x on @grid grid_axes = [1] split_axis = 1 concat_axis = 0 : tensor<8x4xf32> -> tensor<16x2xf32>
  %p = autopar.to_partial %rs on @grid grid_axes = [1] : tensor<4x4xf32>
  %a2 = shard.all_slice %a on @grid grid_axes = [0] slice_axis = 0 : tensor<16x2xf32> -> tensor<8x2xf32>
  return %r, %g, %p, %a2 : tensor<8x1xf32>, tensor<8x4xf32>, tensor<4x4xf32>, tensor<8x2xf32>
}

// -----

// swap_grid_axes on a 2x2x2 grid: the two axes are passed as plain numbers
// (not encoded), in op order, with a caller-allocated result buffer.
// CHECK-NOT: shard.grid
// CHECK-DAG: func.func private @autopar_rt_swap_grid_axes_f32(memref<*xf32>, memref<*xf32>, i64, i64)
// CHECK-DAG: func.func private @autopar_rt_swap_grid_axes_i64(memref<*xi64>, memref<*xi64>, i64, i64)
// CHECK-LABEL: func.func @autopar_main() {
// CHECK: %[[X:.*]] = bufferization.to_tensor %{{.*}} restrict : memref<4x8xf32> to tensor<4x8xf32>
// CHECK: %[[N:.*]] = bufferization.to_tensor %{{.*}} restrict : memref<3xi64> to tensor<3xi64>
// CHECK-NEXT: %[[IN:.*]] = bufferization.to_buffer %[[X]] read_only : tensor<4x8xf32> to memref<4x8xf32>
// CHECK-NEXT: %[[INU:.*]] = memref.cast %[[IN]] : memref<4x8xf32> to memref<*xf32>
// CHECK-NEXT: %[[OUT:.*]] = memref.alloc() : memref<4x8xf32>
// CHECK-NEXT: %[[OUTU:.*]] = memref.cast %[[OUT]] : memref<4x8xf32> to memref<*xf32>
// CHECK-NEXT: %[[A2:.*]] = arith.constant 2 : i64
// CHECK-NEXT: %[[A0:.*]] = arith.constant 0 : i64
// CHECK-NEXT: call @autopar_rt_swap_grid_axes_f32(%[[INU]], %[[OUTU]], %[[A2]], %[[A0]]) : (memref<*xf32>, memref<*xf32>, i64, i64) -> ()
// CHECK-NEXT: %[[Y:.*]] = bufferization.to_tensor %[[OUT]] restrict : memref<4x8xf32> to tensor<4x8xf32>
// CHECK-NEXT: %[[NIN:.*]] = bufferization.to_buffer %[[N]] read_only : tensor<3xi64> to memref<3xi64>
// CHECK-NEXT: %[[NINU:.*]] = memref.cast %[[NIN]] : memref<3xi64> to memref<*xi64>
// CHECK-NEXT: %[[NOUT:.*]] = memref.alloc() : memref<3xi64>
// CHECK-NEXT: %[[NOUTU:.*]] = memref.cast %[[NOUT]] : memref<3xi64> to memref<*xi64>
// CHECK-NEXT: %[[B0:.*]] = arith.constant 0 : i64
// CHECK-NEXT: %[[B1:.*]] = arith.constant 1 : i64
// CHECK-NEXT: call @autopar_rt_swap_grid_axes_i64(%[[NINU]], %[[NOUTU]], %[[B0]], %[[B1]]) : (memref<*xi64>, memref<*xi64>, i64, i64) -> ()
// CHECK-NEXT: %[[M:.*]] = bufferization.to_tensor %[[NOUT]] restrict : memref<3xi64> to tensor<3xi64>
// CHECK-NEXT: bufferization.to_buffer %[[Y]] read_only
// CHECK: bufferization.to_buffer %[[M]] read_only
// CHECK-NOT: autopar.swap_grid_axes
shard.grid @grid(shape = 2x2x2)
func.func @main(%x: tensor<4x8xf32>, %n: tensor<3xi64>) -> (tensor<4x8xf32>, tensor<3xi64>) {
  %y = autopar.swap_grid_axes %x on @grid grid_axes = [2, 0] : tensor<4x8xf32>
  %m = autopar.swap_grid_axes %n on @grid grid_axes = [0, 1] : tensor<3xi64>
  return %y, %m : tensor<4x8xf32>, tensor<3xi64>
}

// -----

// Split inputs and outputs (the partitioner's argument and result
// attributes): each device reads and writes only its block. Rows of x are
// split over axes [0, 1] (code 0x12 = 18), columns of y over axis 1 (code 2).
// CHECK-LABEL: func.func @autopar_main() {
// CHECK: memref.alloc() : memref<2x4xf32>
// CHECK: arith.constant dense<[8, 4, 18, 0]> : tensor<4xi64>
// CHECK: call @autopar_rt_read_input_f32
// CHECK: arith.constant dense<[2, 8, 0, 2]> : tensor<4xi64>
// CHECK: call @autopar_rt_write_output_f32
shard.grid @grid(shape = 2x2)
func.func @main(%x: tensor<2x4xf32> {autopar.sharding = #autopar.sharding<[[0, 1], []]>, autopar.global_type = tensor<8x4xf32>})
    -> (tensor<2x4xf32> {autopar.sharding = #autopar.sharding<[[], [1]]>, autopar.global_type = tensor<2x8xf32>}) {
  return %x : tensor<2x4xf32>
}

// -----

shard.grid @grid(shape = 2)
// expected-error @below {{'func.func' op argument #0 needs both 'autopar.sharding' and 'autopar.global_type' or neither}}
func.func @main(%x: tensor<2x4xf32> {autopar.sharding = #autopar.sharding<[[0], []]>}) -> tensor<2x4xf32> {
  return %x : tensor<2x4xf32>
}

// -----

shard.grid @grid(shape = 2)
// expected-error @below {{'func.func' op result #0 of local type 'tensor<2x4xf32>' does not match its global type 'tensor<8x4xf32>' and sharding #autopar.sharding<[[], [0]]>}}
func.func @main(%x: tensor<2x4xf32>) -> (tensor<2x4xf32> {autopar.sharding = #autopar.sharding<[[], [0]]>, autopar.global_type = tensor<8x4xf32>}) {
  return %x : tensor<2x4xf32>
}

// -----

// A weight the program stores (training state) gets a fresh buffer per step:
// it is loaded (from the stored state after the first step) and stored, never
// resident; the weight it does not store still is.
// CHECK-LABEL: func.func @autopar_main() {
// CHECK: %[[W:.*]] = memref.get_global @__autopar_weight_1 : memref<4xf32>
// CHECK: call @autopar_rt_resident_weight_f32
// CHECK: %[[B:.*]] = memref.alloc() : memref<4xf32>
// CHECK: call @autopar_rt_load_weight_f32
// CHECK: call @autopar_rt_store_weight_f32
// CHECK-NOT: __autopar_weight_0
shard.grid @grid(shape = 1)
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %w = autopar.weight "w" : tensor<4xf32>
  %s = autopar.weight "scale" : tensor<4xf32>
  %g = autopar.mul %x, %s : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %n = autopar.sub %w, %g : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %a = autopar.assign %w, %n : tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

// A random op of a partitioned inference pipeline's microbatch program: its
// block starts at the device's index in the group of axis 0 times the local
// rows, plus (autopar.microbatch_draw, the dimension the microbatches split)
// the runtime's microbatch index times the microbatch's global rows; the
// columns are whole.
// CHECK-LABEL: func.func @autopar_main() {
// CHECK: %[[ROWS:.*]] = arith.constant 2 : i64
// CHECK: %[[G:.*]] = call @autopar_rt_group_index(%{{.*}}) : (i64) -> i64
// CHECK: %[[D:.*]] = arith.muli %[[G]], %[[ROWS]] : i64
// CHECK: %[[GROWS:.*]] = arith.constant 4 : i64
// CHECK: %[[K:.*]] = call @autopar_rt_microbatch_index() : () -> i64
// CHECK: %[[M:.*]] = arith.muli %[[K]], %[[GROWS]] : i64
// CHECK: %[[O0:.*]] = arith.addi %[[D]], %[[M]] : i64
// CHECK: %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK: autopar.random_uniform offsets(%[[O0]], %[[ZERO]]) {global_shape = array<i64: 4, 3>, seed = 7 : i64, whole_shape = array<i64: 16, 3>} : () -> tensor<2x3xf32>
// CHECK-NOT: autopar.microbatch_draw
shard.grid @grid(shape = 2)
func.func @main() -> (tensor<2x3xf32> {autopar.sharding = #autopar.sharding<[[0], []]>, autopar.global_type = tensor<4x3xf32>}) {
  %u = autopar.random_uniform {seed = 7 : i64, global_shape = array<i64: 4, 3>, whole_shape = array<i64: 16, 3>, autopar.microbatch_draw = 0 : i64, autopar.sharding = #autopar.sharding<[[0], []]>} : () -> tensor<2x3xf32>
  return %u : tensor<2x3xf32>
}

// -----

// On one device, only the microbatch's position.
// CHECK-LABEL: func.func @autopar_main() {
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK-DAG: %[[COLS:.*]] = arith.constant 3 : i64
// CHECK: %[[K:.*]] = call @autopar_rt_microbatch_index() : () -> i64
// CHECK: %[[M:.*]] = arith.muli %[[K]], %[[COLS]] : i64
// CHECK: %[[O1:.*]] = arith.addi %{{.*}}, %[[M]] : i64
// CHECK: autopar.random_uniform offsets(%[[ZERO]], %[[O1]]) {seed = 7 : i64, whole_shape = array<i64: 4, 12>} : () -> tensor<4x3xf32>
shard.grid @grid(shape = 1)
func.func @main() -> tensor<4x3xf32> {
  %u = autopar.random_uniform {seed = 7 : i64, whole_shape = array<i64: 4, 12>, autopar.microbatch_draw = 1 : i64} : () -> tensor<4x3xf32>
  return %u : tensor<4x3xf32>
}
