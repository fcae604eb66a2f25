// Activation recomputation (training): four identical attention blocks on 2
// devices with an mse loss. `recompute=auto` stores everything while memory
// does not bind, and otherwise takes the fastest of none, selective (the
// attention core: scores, softmax and probabilities x V run forward again;
// the S x S scores and probabilities are not stored) and full (only what
// leaves each block is stored; every block runs forward again).
//
// RUN: autopar-opt %s --mlir-print-op-on-diagnostic=false --autopar-append-loss=loss=mse --autopar-auto-plan="grid=2 cluster=%S/Inputs/cluster-medium.json mode=training remarks=1 recompute=auto" -o /dev/null 2>&1 | FileCheck %s --check-prefix=LOOSE
// RUN: autopar-opt %s --mlir-print-op-on-diagnostic=false --autopar-append-loss=loss=mse --autopar-auto-plan="grid=2 cluster=%S/Inputs/cluster-24mb.json mode=training remarks=1 recompute=auto" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SELECTIVE
// RUN: autopar-opt %s --mlir-print-op-on-diagnostic=false --autopar-append-loss=loss=mse --autopar-auto-plan="grid=2 cluster=%S/Inputs/cluster-14mb.json mode=training remarks=1 recompute=auto" -o /dev/null 2>&1 | FileCheck %s --check-prefix=FULL
// RUN: autopar-opt %s --mlir-print-op-on-diagnostic=false --autopar-append-loss=loss=mse --autopar-auto-plan="grid=2 cluster=%S/Inputs/cluster-14mb.json mode=training remarks=1 recompute=auto fold=false" -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNFOLDED
// RUN: not autopar-opt %s --mlir-print-op-on-diagnostic=false --autopar-append-loss=loss=mse --autopar-auto-plan="grid=2 cluster=%S/Inputs/cluster-8mb.json mode=training recompute=auto" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOFIT
// Pinned settings are priced as given, whatever the memory.
// RUN: autopar-opt %s --mlir-print-op-on-diagnostic=false --autopar-append-loss=loss=mse --autopar-auto-plan="grid=2 cluster=%S/Inputs/cluster-medium.json mode=training remarks=1 recompute=selective" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PINSEL
// RUN: autopar-opt %s --mlir-print-op-on-diagnostic=false --autopar-append-loss=loss=mse --autopar-auto-plan="grid=2 cluster=%S/Inputs/cluster-medium.json mode=training remarks=1 recompute=full:1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PINONE
// RUN: not autopar-opt %s --mlir-print-op-on-diagnostic=false --autopar-append-loss=loss=mse --autopar-auto-plan="grid=2 cluster=%S/Inputs/cluster-medium.json mode=training recompute=full:5" -o /dev/null 2>&1 | FileCheck %s --check-prefix=TOOMANY
// RUN: not autopar-opt %s --mlir-print-op-on-diagnostic=false --autopar-auto-plan="grid=2 cluster=%S/Inputs/cluster-medium.json recompute=full" -o /dev/null 2>&1 | FileCheck %s --check-prefix=INFER
// RUN: not autopar-opt %s --mlir-print-op-on-diagnostic=false --autopar-auto-plan="grid=2 cluster=%S/Inputs/cluster-medium.json mode=training recompute=most" -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// A model without attention or repeated blocks has nothing to recompute.
// RUN: not autopar-opt %S/auto-plan-microbatches.mlir --mlir-print-op-on-diagnostic=false --autopar-auto-plan="grid=2 cluster=%S/Inputs/cluster-medium.json mode=training recompute=selective" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOCORE
// RUN: not autopar-opt %S/auto-plan-microbatches.mlir --mlir-print-op-on-diagnostic=false --autopar-auto-plan="grid=2 cluster=%S/Inputs/cluster-medium.json mode=training recompute=full" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOBLOCKS

// Every activation of 4 blocks split over 2 devices, 4 MiB weights and
// states: 29 MiB, under the 1 GB limit. The runtime input x and the mse
// target are stored whole (2 x 256 KiB more than split): reading a whole
// input split is free, so the step ties with split inputs and the search,
// which minimizes the step only, may return either (since 2026-12-07 it
// returns whole inputs here; before, split ones at 28.5 MiB).
// LOOSE: predicted step 4.064615e+00 s (compute 4.059372e+00 s, communication 5.242884e-03 s), peak memory 30408716 bytes at 'scores0', recomputation none (0.000000e+00 s)
// Selective recomputation drops 4 MiB per block (scores and probabilities,
// 1024 x 1024 f32 halved) and holds one block's back during its backward:
// 12 MiB less. It repeats 2 x 2 x 1024^2 x 128 / 2 flops per block at
// 1 GFLOP/s (0.268 s) plus the softmax.
// SELECTIVE: predicted step 5.150939e+00 s {{.*}} peak memory 17301516 bytes at 'scores0', recomputation selective (1.084228e+00 s)
// With full recomputation the same tie: since the seventh session (Clp's
// presolve off without memory rows) whole inputs here too (256 KiB more).
// FULL: predicted step 5.419639e+00 s {{.*}} peak memory 12582924 bytes at 'q0', recomputation full (1.352927e+00 s)
// Unfolded, the blocks may differ (the last one's input gather is cheaper
// without sharing): slightly faster; of its ties, the search returned one
// storing the inputs split (256 KiB less) until the sixth session, and one
// storing one of them whole since the seventh.
// UNFOLDED: predicted step 5.419508e+00 s {{.*}} peak memory 12320780 bytes at 'q0', recomputation full (1.352927e+00 s)
// NOFIT: error: no plan fits in 8000000 bytes per device among the plans in which identical repeated blocks share one strategy and each op splits only its first reduction loop with recomputation none, selective or full; with full recomputation, the smallest peak any of them reaches is 9961484 bytes (9.50 MiB) at 'q0'
// PINSEL: recomputation selective (1.084228e+00 s)
// One block of four recomputed: its working set is live during its backward
// pass, so the peak barely moves (what Megatron's recompute-num-layers 1
// gives too). The same step (4.403371 s) ties with whole or split inputs
// (29622284 bytes until the sixth session, 29884428 since the seventh).
// PINONE: predicted step 4.403371e+00 s {{.*}} peak memory 29884428 bytes at 'q0', recomputation full:1 (3.382318e-01 s)
// TOOMANY: error: full recomputation of 5 blocks, but the model has 4 repeated blocks
// INFER: error: recompute needs mode=training
// UNKNOWN: error: unknown recompute 'most', expected none, selective, full, full:K or auto
// NOCORE: error: selective recomputation needs an attention core (a contraction of two activations followed by ops that lead only to another one), and this model has none
// NOBLOCKS: error: full recomputation recomputes repeated blocks, and this model has none

func.func @main(%x: tensor<1024x128xf32> loc("x")) -> tensor<1024x128xf32> {
  %wq0 = autopar.weight "wq0" : tensor<128x128xf32>
  %wk0 = autopar.weight "wk0" : tensor<128x128xf32>
  %wv0 = autopar.weight "wv0" : tensor<128x128xf32>
  %wo0 = autopar.weight "wo0" : tensor<128x128xf32>
  %q0 = autopar.matmul %x, %wq0 : (tensor<1024x128xf32>, tensor<128x128xf32>) -> tensor<1024x128xf32> loc(fused<"q0">["q0"])
  %k0 = autopar.matmul %x, %wk0 : (tensor<1024x128xf32>, tensor<128x128xf32>) -> tensor<1024x128xf32> loc(fused<"k0">["k0"])
  %v0 = autopar.matmul %x, %wv0 : (tensor<1024x128xf32>, tensor<128x128xf32>) -> tensor<1024x128xf32> loc(fused<"v0">["v0"])
  %kt0 = autopar.transpose %k0 {perm = array<i64: 1, 0>} : (tensor<1024x128xf32>) -> tensor<128x1024xf32> loc(fused<"kt0">["kt0"])
  %s0 = autopar.matmul %q0, %kt0 : (tensor<1024x128xf32>, tensor<128x1024xf32>) -> tensor<1024x1024xf32> loc(fused<"scores0">["s0"])
  %p0 = autopar.softmax %s0 {axis = 1 : i64} : (tensor<1024x1024xf32>) -> tensor<1024x1024xf32> loc(fused<"probs0">["p0"])
  %c0 = autopar.matmul %p0, %v0 : (tensor<1024x1024xf32>, tensor<1024x128xf32>) -> tensor<1024x128xf32> loc(fused<"context0">["c0"])
  %o0 = autopar.matmul %c0, %wo0 : (tensor<1024x128xf32>, tensor<128x128xf32>) -> tensor<1024x128xf32> loc(fused<"proj0">["o0"])
  %r0 = autopar.add %x, %o0 : (tensor<1024x128xf32>, tensor<1024x128xf32>) -> tensor<1024x128xf32> loc(fused<"res0">["r0"])
  %wq1 = autopar.weight "wq1" : tensor<128x128xf32>
  %wk1 = autopar.weight "wk1" : tensor<128x128xf32>
  %wv1 = autopar.weight "wv1" : tensor<128x128xf32>
  %wo1 = autopar.weight "wo1" : tensor<128x128xf32>
  %q1 = autopar.matmul %r0, %wq1 : (tensor<1024x128xf32>, tensor<128x128xf32>) -> tensor<1024x128xf32> loc(fused<"q1">["q1"])
  %k1 = autopar.matmul %r0, %wk1 : (tensor<1024x128xf32>, tensor<128x128xf32>) -> tensor<1024x128xf32> loc(fused<"k1">["k1"])
  %v1 = autopar.matmul %r0, %wv1 : (tensor<1024x128xf32>, tensor<128x128xf32>) -> tensor<1024x128xf32> loc(fused<"v1">["v1"])
  %kt1 = autopar.transpose %k1 {perm = array<i64: 1, 0>} : (tensor<1024x128xf32>) -> tensor<128x1024xf32> loc(fused<"kt1">["kt1"])
  %s1 = autopar.matmul %q1, %kt1 : (tensor<1024x128xf32>, tensor<128x1024xf32>) -> tensor<1024x1024xf32> loc(fused<"scores1">["s1"])
  %p1 = autopar.softmax %s1 {axis = 1 : i64} : (tensor<1024x1024xf32>) -> tensor<1024x1024xf32> loc(fused<"probs1">["p1"])
  %c1 = autopar.matmul %p1, %v1 : (tensor<1024x1024xf32>, tensor<1024x128xf32>) -> tensor<1024x128xf32> loc(fused<"context1">["c1"])
  %o1 = autopar.matmul %c1, %wo1 : (tensor<1024x128xf32>, tensor<128x128xf32>) -> tensor<1024x128xf32> loc(fused<"proj1">["o1"])
  %r1 = autopar.add %r0, %o1 : (tensor<1024x128xf32>, tensor<1024x128xf32>) -> tensor<1024x128xf32> loc(fused<"res1">["r1"])
  %wq2 = autopar.weight "wq2" : tensor<128x128xf32>
  %wk2 = autopar.weight "wk2" : tensor<128x128xf32>
  %wv2 = autopar.weight "wv2" : tensor<128x128xf32>
  %wo2 = autopar.weight "wo2" : tensor<128x128xf32>
  %q2 = autopar.matmul %r1, %wq2 : (tensor<1024x128xf32>, tensor<128x128xf32>) -> tensor<1024x128xf32> loc(fused<"q2">["q2"])
  %k2 = autopar.matmul %r1, %wk2 : (tensor<1024x128xf32>, tensor<128x128xf32>) -> tensor<1024x128xf32> loc(fused<"k2">["k2"])
  %v2 = autopar.matmul %r1, %wv2 : (tensor<1024x128xf32>, tensor<128x128xf32>) -> tensor<1024x128xf32> loc(fused<"v2">["v2"])
  %kt2 = autopar.transpose %k2 {perm = array<i64: 1, 0>} : (tensor<1024x128xf32>) -> tensor<128x1024xf32> loc(fused<"kt2">["kt2"])
  %s2 = autopar.matmul %q2, %kt2 : (tensor<1024x128xf32>, tensor<128x1024xf32>) -> tensor<1024x1024xf32> loc(fused<"scores2">["s2"])
  %p2 = autopar.softmax %s2 {axis = 1 : i64} : (tensor<1024x1024xf32>) -> tensor<1024x1024xf32> loc(fused<"probs2">["p2"])
  %c2 = autopar.matmul %p2, %v2 : (tensor<1024x1024xf32>, tensor<1024x128xf32>) -> tensor<1024x128xf32> loc(fused<"context2">["c2"])
  %o2 = autopar.matmul %c2, %wo2 : (tensor<1024x128xf32>, tensor<128x128xf32>) -> tensor<1024x128xf32> loc(fused<"proj2">["o2"])
  %r2 = autopar.add %r1, %o2 : (tensor<1024x128xf32>, tensor<1024x128xf32>) -> tensor<1024x128xf32> loc(fused<"res2">["r2"])
  %wq3 = autopar.weight "wq3" : tensor<128x128xf32>
  %wk3 = autopar.weight "wk3" : tensor<128x128xf32>
  %wv3 = autopar.weight "wv3" : tensor<128x128xf32>
  %wo3 = autopar.weight "wo3" : tensor<128x128xf32>
  %q3 = autopar.matmul %r2, %wq3 : (tensor<1024x128xf32>, tensor<128x128xf32>) -> tensor<1024x128xf32> loc(fused<"q3">["q3"])
  %k3 = autopar.matmul %r2, %wk3 : (tensor<1024x128xf32>, tensor<128x128xf32>) -> tensor<1024x128xf32> loc(fused<"k3">["k3"])
  %v3 = autopar.matmul %r2, %wv3 : (tensor<1024x128xf32>, tensor<128x128xf32>) -> tensor<1024x128xf32> loc(fused<"v3">["v3"])
  %kt3 = autopar.transpose %k3 {perm = array<i64: 1, 0>} : (tensor<1024x128xf32>) -> tensor<128x1024xf32> loc(fused<"kt3">["kt3"])
  %s3 = autopar.matmul %q3, %kt3 : (tensor<1024x128xf32>, tensor<128x1024xf32>) -> tensor<1024x1024xf32> loc(fused<"scores3">["s3"])
  %p3 = autopar.softmax %s3 {axis = 1 : i64} : (tensor<1024x1024xf32>) -> tensor<1024x1024xf32> loc(fused<"probs3">["p3"])
  %c3 = autopar.matmul %p3, %v3 : (tensor<1024x1024xf32>, tensor<1024x128xf32>) -> tensor<1024x128xf32> loc(fused<"context3">["c3"])
  %o3 = autopar.matmul %c3, %wo3 : (tensor<1024x128xf32>, tensor<128x128xf32>) -> tensor<1024x128xf32> loc(fused<"proj3">["o3"])
  %r3 = autopar.add %r2, %o3 : (tensor<1024x128xf32>, tensor<1024x128xf32>) -> tensor<1024x128xf32> loc(fused<"res3">["r3"])
  return %r3 : tensor<1024x128xf32>
}
