// Search decisions on a two-layer MLP against fixed cost tables (the cluster
// files in Inputs/): a change in the cost model or the search shows up here.
//
// Fast links: compute dominates, the batch is split (data parallel).
// RUN: env AUTOPAR_CPU_ISA=avx512 autopar-opt %s --autopar-auto-plan="grid=2 cluster=%S/Inputs/cluster-fast.json" | FileCheck %s --check-prefix=FAST
// Slow links (1 kB/s, 1 s per message): nothing is worth sending.
// RUN: env AUTOPAR_CPU_ISA=avx512 autopar-opt %s --autopar-auto-plan="grid=2 cluster=%S/Inputs/cluster-slow.json" | FileCheck %s --check-prefix=SLOW
// 25 MB per device cannot hold both 16 MiB weights: Megatron column/row split.
// RUN: env AUTOPAR_CPU_ISA=avx512 autopar-opt %s --autopar-auto-plan="grid=2 cluster=%S/Inputs/cluster-small-memory.json" | FileCheck %s --check-prefix=SMALL
// Training at 1 GB/s: data parallel would all-reduce 32 MiB of gradients,
// Megatron only 256 KiB of activations each way.
// RUN: env AUTOPAR_CPU_ISA=avx512 autopar-opt %s --autopar-auto-plan="grid=2 cluster=%S/Inputs/cluster-medium.json mode=inference" | FileCheck %s --check-prefix=FAST
// RUN: env AUTOPAR_CPU_ISA=avx512 autopar-opt %s --autopar-auto-plan="grid=2 cluster=%S/Inputs/cluster-medium.json mode=training" | FileCheck %s --check-prefix=SMALL
// Both axes of a 2x2 grid split the batch.
// RUN: env AUTOPAR_CPU_ISA=avx512 autopar-opt %s --autopar-auto-plan="grid=2x2 cluster=%S/Inputs/cluster-2x2.json" | FileCheck %s --check-prefix=GRID2D
// The report: strategy and runner-up per op, prediction on the function.
// RUN: env AUTOPAR_CPU_ISA=avx512 autopar-opt %s --mlir-print-op-on-diagnostic=false --autopar-auto-plan="grid=2 cluster=%S/Inputs/cluster-medium.json remarks=1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARKS

func.func @main(%x: tensor<64x1024xf32> loc("x")) -> tensor<64x1024xf32> {
  %w1 = autopar.weight "w1" : tensor<1024x4096xf32>
  %w2 = autopar.weight "w2" : tensor<4096x1024xf32>
  %h = autopar.matmul %x, %w1 : (tensor<64x1024xf32>, tensor<1024x4096xf32>) -> tensor<64x4096xf32> loc(fused<"mm1">["h"])
  %a = autopar.relu %h : (tensor<64x4096xf32>) -> tensor<64x4096xf32> loc(fused<"relu">["a"])
  %y = autopar.matmul %a, %w2 : (tensor<64x4096xf32>, tensor<4096x1024xf32>) -> tensor<64x1024xf32> loc(fused<"mm2">["y"])
  return %y : tensor<64x1024xf32>
}

// FAST: shard.grid @grid(shape = 2)
// FAST-LABEL: func.func @main
// FAST-SAME: autopar.sharding = #autopar.sharding<{{\[\[}}0], [{{\]\]}}>
// FAST: autopar.weight "w1" {autopar.shardings = [#autopar.sharding<{{\[\[}}], [{{\]\]}}>]}
// FAST: autopar.weight "w2" {autopar.shardings = [#autopar.sharding<{{\[\[}}], [{{\]\]}}>]}
// FAST: autopar.matmul {{.*}}#autopar.sharding<{{\[\[}}0], [{{\]\]}}>
// FAST: autopar.relu {{.*}}#autopar.sharding<{{\[\[}}0], [{{\]\]}}>
// FAST: autopar.matmul {{.*}}#autopar.sharding<{{\[\[}}0], [{{\]\]}}>

// SLOW-LABEL: func.func @main
// SLOW-NOT: [0]
// SLOW: return

// SMALL-LABEL: func.func @main
// SMALL-SAME: autopar.sharding = #autopar.sharding<{{\[\[}}], [{{\]\]}}>
// SMALL: autopar.weight "w1" {autopar.shardings = [#autopar.sharding<{{\[\[}}], [0{{\]\]}}>]}
// SMALL: autopar.weight "w2" {autopar.shardings = [#autopar.sharding<{{\[\[}}0], [{{\]\]}}>]}
// SMALL: autopar.matmul {{.*}}#autopar.sharding<{{\[\[}}], [0{{\]\]}}>
// SMALL: autopar.relu {{.*}}#autopar.sharding<{{\[\[}}], [0{{\]\]}}>
// SMALL: autopar.matmul {{.*}}#autopar.sharding<{{\[\[}}], []], partial = [0]>

// On the 2x2 grid the batch splits over both axes. The runtime input may be
// read split over both or over axis 0 only (each device then reads its half
// and slices its quarter locally, free): the step ties, and the search, which
// minimizes the step only, may return either (since the seventh session,
// with Clp's presolve off for programs without memory rows, axis 0 only).
// GRID2D-LABEL: func.func @main
// GRID2D-SAME: autopar.sharding = #autopar.sharding<{{\[\[}}0{{(, 1)?}}], [{{\]\]}}>
// GRID2D: autopar.matmul {{.*}}#autopar.sharding<{{\[\[}}0, 1], [{{\]\]}}>
// GRID2D: autopar.relu {{.*}}#autopar.sharding<{{\[\[}}0, 1], [{{\]\]}}>

// REMARKS: remark: strategy [_,_]; runner-up [0,_] costs 8.388608e-03 s more
// REMARKS: remark: strategy [_,_]; runner-up [0,_] costs 8.388608e-03 s more
// REMARKS: remark: loc(fused<"mm1">["h"]): strategy in [0,_] [_,_] -> out [0,_]; runner-up in [_,_] [_,0] -> out [_,0] costs 3.932160e-04 s more
// REMARKS: remark: loc(fused<"relu">["a"]): strategy in [0,_] -> out [0,_]; runner-up in [_,0] -> out [_,0]
// REMARKS: remark: loc(fused<"mm2">["y"]): strategy in [0,_] [_,_] -> out [0,_]; runner-up in [_,0] [0,_] -> out [_,_]+partial(0)
// REMARKS: remark: predicted step 5.371331e-01 s (compute 5.370020e-01 s, communication 1.310720e-04 s), peak memory 35258368 bytes at 'mm1'
