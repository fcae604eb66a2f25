//===- AutoparTrainingOps.td - training-step operations ----*- tablegen -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Operations that only training steps use. Included from AutoparOps.td (one
// dialect, one op list); kept apart from the ONNX operators.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_DIALECT_AUTOPAR_IR_AUTOPARTRAININGOPS_TD
#define AUTOPAR_DIALECT_AUTOPAR_IR_AUTOPARTRAININGOPS_TD

def Autopar_AssignOp : Autopar_Op<"assign", [Autopar_OwnRule,
    Autopar_CostInterface, Autopar_DataMovementCost,
    AllTypesMatch<["weight", "value", "result"]>,
    MemoryEffects<[MemWrite]>]> {
  let summary = "store the next value of a weight (program state)";
  let description = [{
    Gives the weight that `weight` loads (an `autopar.weight`) the value
    `value` for the next run of the program: the step's updated parameters
    and optimizer state. Loads of the weight in the same run still read the
    old value. The runtime keeps the value in memory between steps
    (`autopar-runner --steps`). The result is `value`; it exists so that the
    op has the sharding rule of an elementwise op (every operand and the
    result share one sharding), and the partitioner gives it the weight's
    own sharding, so each device stores exactly the shard it loads.

    ```mlir
    %w = autopar.weight "fc.weight" : tensor<16x8xf32>
    ...
    %0 = autopar.assign %w, %next : tensor<16x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$weight, AnyRankedTensor:$value);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$weight `,` $value attr-dict `:` type($result)";
  let hasVerifier = 1;
}

#endif // AUTOPAR_DIALECT_AUTOPAR_IR_AUTOPARTRAININGOPS_TD
