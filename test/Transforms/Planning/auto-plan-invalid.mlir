// RUN: not autopar-opt %s --mlir-print-op-on-diagnostic=false --autopar-auto-plan="grid=2 cluster=%S/Inputs/cluster-tiny-memory.json" 2>&1 | FileCheck %s --check-prefix=TINY
// RUN: not autopar-opt %s --mlir-print-op-on-diagnostic=false --autopar-auto-plan="grid=2x2 cluster=%S/Inputs/cluster-fast.json" 2>&1 | FileCheck %s --check-prefix=AXES
// RUN: not autopar-opt %s --mlir-print-op-on-diagnostic=false --autopar-auto-plan="grid=2" 2>&1 | FileCheck %s --check-prefix=NOCLUSTER
// RUN: not autopar-opt %s --mlir-print-op-on-diagnostic=false --autopar-auto-plan="grid=2 cluster=%S/Inputs/cluster-fast.json mode=serving" 2>&1 | FileCheck %s --check-prefix=MODE

// TINY: error: no plan fits in 1000 bytes per device; the smallest peak any plan reaches is 17956864 bytes (17.12 MiB) at 'relu'
// AXES: error: {{.*}}cluster has 1 axes, grid has 2
// NOCLUSTER: error: autopar-auto-plan needs a cluster file (cluster=FILE.json)
// MODE: error: unknown mode 'serving', expected inference or training

func.func @main(%x: tensor<64x1024xf32> loc("x")) -> tensor<64x1024xf32> {
  %w1 = autopar.weight "w1" : tensor<1024x4096xf32>
  %w2 = autopar.weight "w2" : tensor<4096x1024xf32>
  %h = autopar.matmul %x, %w1 : (tensor<64x1024xf32>, tensor<1024x4096xf32>) -> tensor<64x4096xf32> loc(fused<"mm1">["h"])
  %a = autopar.relu %h : (tensor<64x4096xf32>) -> tensor<64x4096xf32> loc(fused<"relu">["a"])
  %y = autopar.matmul %a, %w2 : (tensor<64x4096xf32>, tensor<4096x1024xf32>) -> tensor<64x1024xf32> loc(fused<"mm2">["y"])
  return %y : tensor<64x1024xf32>
}
