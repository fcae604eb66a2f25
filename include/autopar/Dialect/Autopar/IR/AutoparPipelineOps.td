//===- AutoparPipelineOps.td - pipeline stage boundaries ---*- tablegen -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Operations of a pipeline stage's training step: boundary tensors sent to
// and received from the other stages' programs (MPMD), point to point.
// Included from AutoparOps.td (one dialect, one op list).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_DIALECT_AUTOPAR_IR_AUTOPARPIPELINEOPS_TD
#define AUTOPAR_DIALECT_AUTOPAR_IR_AUTOPARPIPELINEOPS_TD

def Autopar_SendOp : Autopar_Op<"send", [Autopar_OwnRule,
    Autopar_CostInterface, Autopar_DataMovementCost,
    AllTypesMatch<["input", "result"]>, MemoryEffects<[MemWrite]>]> {
  let summary = "send a boundary tensor to another pipeline stage";
  let description = [{
    Sends `input` to the program of pipeline stage `stage`, where an
    `autopar.recv` with the same `tag` from this stage receives it. Every
    device of this stage's grid sends its whole copy to the device of the
    same rank in the other stage's grid (the stages' grids have the same
    device count). The send does not wait for the receiver. The result is
    `input`; it exists so that the op has a sharding rule. The rule keeps the
    tensor whole: the two stages are planned separately, and a whole tensor
    is the one layout both sides know.

    Differentiating a send receives the gradient of `input` from `stage`
    (an `autopar.recv` with the same tag): the send is where a stage's
    backward pass is seeded.

    ```mlir
    %0 = autopar.send %y to 1 tag 3 : tensor<4x16xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input,
    ConfinedAttr<I64Attr, [IntNonNegative]>:$stage,
    ConfinedAttr<I64Attr, [IntNonNegative]>:$tag);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `to` $stage `tag` $tag attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Autopar_RecvOp : Autopar_Op<"recv", [Autopar_OwnRule,
    Autopar_CostInterface, Autopar_DataMovementCost,
    MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "receive a boundary tensor from another pipeline stage";
  let description = [{
    Receives the tensor that the program of pipeline stage `stage` sends with
    `tag` (`autopar.send`), whole on every device of this stage's grid, and
    waits for it. Its sharding rule keeps it whole (see `autopar.send`).

    Differentiating a receive sends the result's gradient back to `stage`
    with the same tag (zeros when the result does not reach the loss: the
    other stage waits for it).

    ```mlir
    %x = autopar.recv from 0 tag 3 : tensor<4x16xf32>
    ```
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntNonNegative]>:$stage,
    ConfinedAttr<I64Attr, [IntNonNegative]>:$tag);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "`from` $stage `tag` $tag attr-dict `:` type($result)";
  let hasVerifier = 1;
}

#endif // AUTOPAR_DIALECT_AUTOPAR_IR_AUTOPARPIPELINEOPS_TD
