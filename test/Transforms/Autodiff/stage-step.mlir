// RUN: autopar-opt %s --autopar-build-stage-step="microbatches=2" -split-input-file | FileCheck %s --check-prefix=STEP
// RUN: autopar-opt %s --pass-pipeline="builtin.module(autopar-build-stage-step{microbatches=2},builtin.module(autopar-differentiate{optimizer=sgd lr=0.5}))" -split-input-file | FileCheck %s --check-prefix=GRAD

// Two stages of a 2-layer model, as autopar-split-stages leaves them (the
// loss appended before the split), each made the forward half of its
// training step over two microbatches.

// STEP-LABEL: module @stage0
// STEP: func.func @main(%[[X0:.*]]: tensor<2x4xf32> {autopar.stage_input = {input = 0 : i64, microbatch = 0 : i64}}, %[[X1:.*]]: tensor<2x4xf32> {autopar.stage_input = {input = 0 : i64, microbatch = 1 : i64}}) {
// STEP: %[[W0:.*]] = autopar.weight "w0" {autopar.microbatch = 0 : i64}
// STEP: %[[Y0:.*]] = autopar.matmul %[[X0]], %[[W0]] {autopar.microbatch = 0 : i64}
// STEP: autopar.send %[[Y0]] to 1 tag 0 {autopar.microbatch = 0 : i64} : tensor<2x4xf32>
// STEP: autopar.weight "w0" {autopar.microbatch = 1 : i64}
// STEP: autopar.send %{{.*}} to 1 tag 1 {autopar.microbatch = 1 : i64} : tensor<2x4xf32>
// STEP: return{{$}}
// STEP-LABEL: module @stage1
// STEP: func.func @main(%[[T0:.*]]: tensor<2x4xf32> {autopar.stage_input = {input = 1 : i64, microbatch = 0 : i64}}, %[[T1:.*]]: tensor<2x4xf32> {autopar.stage_input = {input = 1 : i64, microbatch = 1 : i64}}) -> (tensor<f32> {autopar.stage_output = {output = 0 : i64}})
// STEP: %[[R0:.*]] = autopar.recv from 0 tag 0 {autopar.microbatch = 0 : i64} : tensor<2x4xf32>
// STEP: %[[L0:.*]] = autopar.reduce_sum
// STEP: %[[R1:.*]] = autopar.recv from 0 tag 1 {autopar.microbatch = 1 : i64} : tensor<2x4xf32>
// STEP: %[[L1:.*]] = autopar.reduce_sum
// STEP: %[[SUM:.*]] = autopar.add %[[L0]], %[[L1]]
// STEP: %[[HALF:.*]] = autopar.constant dense<5.000000e-01> : tensor<f32>
// STEP: %[[MEAN:.*]] = autopar.mul %[[SUM]], %[[HALF]]
// STEP: return %[[MEAN]] : tensor<f32>

// Stage 0's backward pass is seeded by the gradients received back from
// stage 1; stage 1 sends the gradient of what it received.
// GRAD-LABEL: module @stage0
// GRAD: autopar.recv from 1 tag 1 {autopar.backward, autopar.microbatch = 1 : i64} : tensor<2x4xf32>
// GRAD: autopar.recv from 1 tag 0 {autopar.backward, autopar.microbatch = 0 : i64} : tensor<2x4xf32>
// GRAD: autopar.assign
// GRAD-LABEL: module @stage1
// GRAD: autopar.send %{{.*}} to 0 tag 1 {autopar.backward, autopar.microbatch = 1 : i64} : tensor<2x4xf32>
// GRAD: autopar.send %{{.*}} to 0 tag 0 {autopar.backward, autopar.microbatch = 0 : i64} : tensor<2x4xf32>
// GRAD: autopar.assign
module {
  module @stage0 attributes {autopar.stage = 0 : i64} {
    func.func @main(%x: tensor<2x4xf32> {autopar.stage_input = {input = 0 : i64}})
        -> (tensor<2x4xf32> {autopar.stage_output = {boundary = 0 : i64, to = [1]}}) {
      %w = autopar.weight "w0" : tensor<4x4xf32>
      %y = autopar.matmul %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
      return %y : tensor<2x4xf32>
    }
  }
  module @stage1 attributes {autopar.stage = 1 : i64} {
    func.func @main(%a: tensor<2x4xf32> {autopar.stage_input = {boundary = 0 : i64, from = 0 : i64}},
                    %t: tensor<2x4xf32> {autopar.stage_input = {input = 1 : i64}})
        -> (tensor<f32> {autopar.stage_output = {output = 0 : i64}}) {
      %w = autopar.weight "w1" : tensor<4x4xf32>
      %y = autopar.matmul %a, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
      %d = autopar.sub %y, %t : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
      %l = autopar.reduce_sum %d {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
      return %l : tensor<f32>
    }
  }
}

// -----

// A weight both stages read (tied embeddings: "emb" is stage 0's input
// projection and stage 1's output projection) keeps one value: both stages
// mark its loads with the exchange tag after the boundary tensor's (tags 0
// and 1 for 2 microbatches), send their gradient to the other stage, and add
// both in stage order (stage 0's first) before the same update.

// STEP-LABEL: module @stage0
// STEP: autopar.weight "emb" {autopar.microbatch = 0 : i64, autopar.tied = {self = 0 : i64, stages = array<i64: 0, 1>, tag = 2 : i64}}
// STEP-LABEL: module @stage1
// STEP: autopar.weight "emb" {autopar.microbatch = 0 : i64, autopar.tied = {self = 1 : i64, stages = array<i64: 0, 1>, tag = 2 : i64}}

// GRAD-LABEL: module @stage0
// GRAD: %[[OWN0:.*]] = autopar.add {{.*}} -> tensor<4x4xf32>
// GRAD: autopar.send %[[OWN0]] to 1 tag 2 {autopar.gradient_exchange} : tensor<4x4xf32>
// GRAD: %[[PEER1:.*]] = autopar.recv from 1 tag 2 {autopar.gradient_exchange} : tensor<4x4xf32>
// GRAD: %[[SUM0:.*]] = autopar.add %[[OWN0]], %[[PEER1]]
// GRAD: autopar.mul %[[SUM0]]
// GRAD: autopar.assign
// GRAD-LABEL: module @stage1
// GRAD: %[[OWN1:.*]] = autopar.add {{.*}} -> tensor<4x4xf32>
// GRAD: autopar.send %[[OWN1]] to 0 tag 2 {autopar.gradient_exchange} : tensor<4x4xf32>
// GRAD: %[[PEER0:.*]] = autopar.recv from 0 tag 2 {autopar.gradient_exchange} : tensor<4x4xf32>
// GRAD: %[[SUM1:.*]] = autopar.add %[[PEER0]], %[[OWN1]]
// GRAD: autopar.mul %[[SUM1]]
module {
  module @stage0 attributes {autopar.stage = 0 : i64} {
    func.func @main(%x: tensor<2x4xf32> {autopar.stage_input = {input = 0 : i64}})
        -> (tensor<2x4xf32> {autopar.stage_output = {boundary = 0 : i64, to = [1]}}) {
      %w = autopar.weight "emb" : tensor<4x4xf32>
      %y = autopar.matmul %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
      return %y : tensor<2x4xf32>
    }
  }
  module @stage1 attributes {autopar.stage = 1 : i64} {
    func.func @main(%a: tensor<2x4xf32> {autopar.stage_input = {boundary = 0 : i64, from = 0 : i64}},
                    %t: tensor<2x4xf32> {autopar.stage_input = {input = 1 : i64}})
        -> (tensor<f32> {autopar.stage_output = {output = 0 : i64}}) {
      %w = autopar.weight "emb" : tensor<4x4xf32>
      %y = autopar.matmul %a, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
      %d = autopar.sub %y, %t : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
      %l = autopar.reduce_sum %d {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
      return %l : tensor<f32>
    }
  }
}
