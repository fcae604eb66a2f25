// RUN: autopar-opt %s --split-input-file --autopar-schedule-microbatches="stage=0 stages=2" | FileCheck %s --check-prefix=FIRST
// RUN: autopar-opt %s --split-input-file --autopar-schedule-microbatches="stage=1 stages=2" | FileCheck %s --check-prefix=LAST
// RUN: autopar-opt %s --split-input-file --autopar-schedule-microbatches="stage=0 stages=2 schedule=gpipe" | FileCheck %s --check-prefix=GPIPE
// RUN: autopar-opt %s --split-input-file --autopar-schedule-microbatches="stage=0 stages=2 schedule=zb" -verify-diagnostics

// Three microbatches, forward (F) and backward (B) ops as differentiation
// leaves them (F0 F1 F2 B2 B1 B0), the weight loaded per microbatch.
// 1F1B on the first of two stages: one warm-up forward, then F1 B0 F2 B1,
// then B2; on the last stage F0 B0 F1 B1 F2 B2. The gradient sums run as
// soon as their operands exist, the weight store last.

// FIRST-LABEL: func.func @main
// FIRST: %[[W:.*]] = autopar.weight "w" : tensor<4xf32>
// FIRST: autopar.send {{.*}} tag 0
// FIRST: autopar.send {{.*}} tag 1
// FIRST: autopar.recv from 1 tag 0
// FIRST: autopar.send {{.*}} tag 2
// FIRST: autopar.recv from 1 tag 1
// FIRST: autopar.add
// FIRST: autopar.recv from 1 tag 2
// FIRST: autopar.assign %[[W]]
// FIRST-NOT: autopar.microbatch

// LAST-LABEL: func.func @main
// LAST: autopar.send {{.*}} tag 0
// LAST: autopar.recv from 1 tag 0
// LAST: autopar.send {{.*}} tag 1
// LAST: autopar.recv from 1 tag 1
// LAST: autopar.send {{.*}} tag 2
// LAST: autopar.recv from 1 tag 2

// GPIPE-LABEL: func.func @main
// GPIPE: autopar.send {{.*}} tag 0
// GPIPE: autopar.send {{.*}} tag 1
// GPIPE: autopar.send {{.*}} tag 2
// GPIPE: autopar.recv from 1 tag 0
// GPIPE: autopar.recv from 1 tag 1
// GPIPE: autopar.recv from 1 tag 2

// expected-error@+1 {{unknown schedule 'zb', expected 1f1b or gpipe}}
module {
func.func @main(%x0: tensor<4xf32>, %x1: tensor<4xf32>, %x2: tensor<4xf32>) {
  %w0 = autopar.weight "w" {autopar.microbatch = 0 : i64} : tensor<4xf32>
  %y0 = autopar.mul %x0, %w0 {autopar.microbatch = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s0 = autopar.send %y0 to 1 tag 0 {autopar.microbatch = 0 : i64} : tensor<4xf32>
  %w1 = autopar.weight "w" {autopar.microbatch = 1 : i64} : tensor<4xf32>
  %y1 = autopar.mul %x1, %w1 {autopar.microbatch = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s1 = autopar.send %y1 to 1 tag 1 {autopar.microbatch = 1 : i64} : tensor<4xf32>
  %w2 = autopar.weight "w" {autopar.microbatch = 2 : i64} : tensor<4xf32>
  %y2 = autopar.mul %x2, %w2 {autopar.microbatch = 2 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s2 = autopar.send %y2 to 1 tag 2 {autopar.microbatch = 2 : i64} : tensor<4xf32>
  %d2 = autopar.recv from 1 tag 2 {autopar.backward, autopar.microbatch = 2 : i64} : tensor<4xf32>
  %g2 = autopar.mul %d2, %x2 {autopar.backward, autopar.microbatch = 2 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %d1 = autopar.recv from 1 tag 1 {autopar.backward, autopar.microbatch = 1 : i64} : tensor<4xf32>
  %g1 = autopar.mul %d1, %x1 {autopar.backward, autopar.microbatch = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %d0 = autopar.recv from 1 tag 0 {autopar.backward, autopar.microbatch = 0 : i64} : tensor<4xf32>
  %g0 = autopar.mul %d0, %x0 {autopar.backward, autopar.microbatch = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %a = autopar.add %g0, %g1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %g = autopar.add %a, %g2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %n = autopar.sub %w0, %g : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %u = autopar.assign %w0, %n : tensor<4xf32>
  return
}
}
