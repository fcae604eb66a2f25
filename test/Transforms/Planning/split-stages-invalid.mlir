// RUN: autopar-opt %s --verify-diagnostics --autopar-split-stages="blocks=1,1"
// RUN: not autopar-opt %s --autopar-split-stages="blocks=1,0,2" 2>&1 | FileCheck %s --check-prefix=EMPTY
// RUN: not autopar-opt %s --autopar-split-stages="stages=4" 2>&1 | FileCheck %s --check-prefix=FEW
// RUN: not autopar-opt %s --autopar-split-stages 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not autopar-opt %s --autopar-split-stages="stages=3 blocks=1,1" 2>&1 | FileCheck %s --check-prefix=MISMATCH

// NONE: autopar-split-stages needs stages=P (P >= 2) or blocks=K0,K1,...
// MISMATCH: stages=3 but blocks= names 2 stages
// EMPTY: a pipeline stage holds at least one repeated block, got 0
// FEW: pipeline stages are cut between repeated blocks, and the model has 3 repeated blocks for 4 stages

// expected-error @below {{the stages hold 2 repeated blocks, the model has 3}}
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w0 = autopar.weight "w0" : tensor<8x8xf32>
  %w1 = autopar.weight "w1" : tensor<8x8xf32>
  %w2 = autopar.weight "w2" : tensor<8x8xf32>
  %m0 = autopar.matmul %x, %w0 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %r0 = autopar.relu %m0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %m1 = autopar.matmul %r0, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %r1 = autopar.relu %m1 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %m2 = autopar.matmul %r1, %w2 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %r2 = autopar.relu %m2 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %r2 : tensor<4x8xf32>
}
