// Microbatches: compute and activation traffic repeat per microbatch, a
// replicated weight's gradient is accumulated and all-reduced once per step.
// The MLP of auto-plan.mlir with an mse loss at 1 GB/s, training: one
// microbatch takes the Megatron split (256 KiB of activations each way
// against two 16 MiB gradient all-reduces); with 256 microbatches the
// activation traffic is 256 times as large while the gradient reduction is
// not, and data parallelism wins.
// RUN: autopar-opt %s --mlir-print-op-on-diagnostic=false --autopar-append-loss=loss=mse --autopar-auto-plan="grid=2 cluster=%S/Inputs/cluster-medium.json mode=training remarks=1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ONE
// RUN: autopar-opt %s --mlir-print-op-on-diagnostic=false --autopar-append-loss=loss=mse --autopar-auto-plan="grid=2 cluster=%S/Inputs/cluster-medium.json mode=training remarks=1 microbatches=256" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MANY
// RUN: not autopar-opt %s --mlir-print-op-on-diagnostic=false --autopar-auto-plan="grid=2 cluster=%S/Inputs/cluster-medium.json microbatches=4" 2>&1 | FileCheck %s --check-prefix=INFER
// RUN: not autopar-opt %s --mlir-print-op-on-diagnostic=false --autopar-auto-plan="grid=2 cluster=%S/Inputs/cluster-medium.json mode=training microbatches=0" 2>&1 | FileCheck %s --check-prefix=ZERO

// ONE: "mm1"{{.*}}: strategy in [_,_] [_,0] -> out [_,0]
// ONE: "mm2"{{.*}}: strategy in [_,0] [0,_] -> out [_,_]+partial(0)
// ONE: predicted step 1.611563e+00 s

// MANY: strategy [_,_];
// MANY: strategy [_,_];
// MANY: "mm1"{{.*}}: strategy in [0,_] [_,_] -> out [0,_]
// MANY: "mm2"{{.*}}: strategy in [0,_] [_,_] -> out [0,_]
// Compute is 256 times one microbatch's; communication is the two gradient
// all-reduces (2 x 16 MiB / 1 GB/s) plus 256 scalar loss all-reduces.
// MANY: predicted step 4.125266e+02 s (compute 4.124930e+02 s, communication 3.355546e-02 s)

// INFER: error: microbatches must be at least 1, and above 1 only in training, got 4
// ZERO: error: microbatches must be at least 1, and above 1 only in training, got 0

func.func @main(%x: tensor<64x1024xf32> loc("x")) -> tensor<64x1024xf32> {
  %w1 = autopar.weight "w1" : tensor<1024x4096xf32>
  %w2 = autopar.weight "w2" : tensor<4096x1024xf32>
  %h = autopar.matmul %x, %w1 : (tensor<64x1024xf32>, tensor<1024x4096xf32>) -> tensor<64x4096xf32> loc(fused<"mm1">["h"])
  %a = autopar.relu %h : (tensor<64x4096xf32>) -> tensor<64x4096xf32> loc(fused<"relu">["a"])
  %y = autopar.matmul %a, %w2 : (tensor<64x4096xf32>, tensor<4096x1024xf32>) -> tensor<64x1024xf32> loc(fused<"mm2">["y"])
  return %y : tensor<64x1024xf32>
}
