// A training loss appended for planning: @main then returns a scalar only.
// RUN: autopar-opt %s --autopar-append-loss="loss=cross_entropy" | FileCheck %s --check-prefix=CE
// RUN: autopar-opt %s --autopar-append-loss="loss=mse" | FileCheck %s --check-prefix=MSE
// RUN: not autopar-opt %s --mlir-print-op-on-diagnostic=false --autopar-append-loss="loss=output" 2>&1 | FileCheck %s --check-prefix=NOTSCALAR
// RUN: not autopar-opt %s --mlir-print-op-on-diagnostic=false --autopar-append-loss="loss=hinge" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
//
// The decision the loss changes (1 GB/s links, training): with the logits
// returned, they must end replicated, so the head is split by vocabulary
// columns and gathered; with the loss, nothing is gathered at the output and
// the head stays batch-split all the way to a pending scalar sum.
// RUN: autopar-opt %s --mlir-print-op-on-diagnostic=false --autopar-auto-plan="grid=2 cluster=%S/Inputs/cluster-medium.json mode=training remarks=1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=LOGITS
// RUN: autopar-opt %s --mlir-print-op-on-diagnostic=false --autopar-append-loss="loss=cross_entropy" --autopar-auto-plan="grid=2 cluster=%S/Inputs/cluster-medium.json mode=training remarks=1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=LOSS

// CE-LABEL: func.func @main
// CE-SAME: (%{{.*}}: tensor<8x16x64xf32>, %[[LABELS:.*]]: tensor<8x16xi64>) -> tensor<f32>
// CE: %[[HEAD:.*]] = autopar.matmul
// CE: %[[COL:.*]] = autopar.reshape %[[LABELS]] : (tensor<8x16xi64>) -> tensor<8x16x1xi64>
// CE: %[[IOTA:.*]] = autopar.constant dense<"0x0000000000000000010000000000000002{{.*}}"> : tensor<128xi64>
// CE: %[[MASK:.*]] = autopar.equal %[[COL]], %[[IOTA]] : (tensor<8x16x1xi64>, tensor<128xi64>) -> tensor<8x16x128xi1>
// CE: %[[HOT:.*]] = autopar.cast %[[MASK]] : (tensor<8x16x128xi1>) -> tensor<8x16x128xf32>
// CE: %[[LSM:.*]] = autopar.log_softmax %[[HEAD]] {axis = 2 : i64}
// CE: %[[PICK:.*]] = autopar.mul %[[LSM]], %[[HOT]]
// CE: %[[SUM:.*]] = autopar.reduce_sum %[[PICK]] {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<8x16x128xf32>) -> tensor<f32>
// CE: %[[SCALE:.*]] = autopar.constant dense<-7.812500e-03> : tensor<f32>
// CE: %[[RES:.*]] = autopar.mul %[[SUM]], %[[SCALE]]
// CE: return %[[RES]] : tensor<f32>

// MSE-LABEL: func.func @main
// MSE-SAME: (%{{.*}}: tensor<8x16x64xf32>, %[[TARGET:.*]]: tensor<8x16x128xf32>) -> tensor<f32>
// MSE: %[[Y:.*]] = autopar.matmul
// MSE: %[[D:.*]] = autopar.sub %[[Y]], %[[TARGET]]
// MSE: %[[S:.*]] = autopar.mul %[[D]], %[[D]]
// MSE: %[[T:.*]] = autopar.reduce_sum %[[S]] {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<8x16x128xf32>) -> tensor<f32>
// MSE: %[[F:.*]] = autopar.constant dense<6.10351563E-5> : tensor<f32>
// MSE: %[[L:.*]] = autopar.mul %[[T]], %[[F]]
// MSE: return %[[L]] : tensor<f32>

// NOTSCALAR: error: an 'output' loss needs a scalar model output, got 'tensor<8x16x128xf32>'
// UNKNOWN: error: unknown loss 'hinge', expected cross_entropy, mse or output

// LOGITS: "head"{{.*}}: strategy in [_,_,_] [_,0] -> out [_,_,0]
// LOSS: "head"{{.*}}: strategy in [0,_,_] [_,_] -> out [0,_,_]
// LOSS: loss.sum{{.*}}: strategy in [0,_,_] -> out []+partial(0)

func.func @main(%x: tensor<8x16x64xf32> loc("x")) -> tensor<8x16x128xf32> {
  %w = autopar.weight "w" : tensor<64x128xf32>
  %y = autopar.matmul %x, %w : (tensor<8x16x64xf32>, tensor<64x128xf32>) -> tensor<8x16x128xf32> loc(fused<"head">["logits"])
  return %y : tensor<8x16x128xf32>
}
