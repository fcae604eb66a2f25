//===- AutoparIndexingOps.td - top-k and scatter ops -------*- tablegen -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Ops that select or write elements at computed positions: TopK,
// ScatterElements and ScatterND. Included by AutoparOps.td (after the
// classes it uses); kept in its own file so that the op families of other
// branches merge without conflicts.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_DIALECT_AUTOPAR_IR_AUTOPARINDEXINGOPS_TD
#define AUTOPAR_DIALECT_AUTOPAR_IR_AUTOPARINDEXINGOPS_TD

def Autopar_TopKOp : Autopar_ComputeOp<"top_k",
    [Autopar_OwnRule, Autopar_ReductionCost<2>]> {
  let summary = "ONNX TopK along `axis` (non-negative) with a constant `k`";
  let description = [{
    `values` holds the `k` largest (or, without `largest`, smallest)
    elements of each slice along `axis`, sorted best first; `indices` (int64)
    their positions in the input. Of equal elements the one with the lower
    index comes first, as ONNX requires. The result order is sorted even
    when `sorted` is false (ONNX leaves it unspecified then).
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$axis, I64Attr:$k,
    DefaultValuedAttr<BoolAttr, "true">:$largest,
    DefaultValuedAttr<BoolAttr, "true">:$sorted);
  let results = (outs AnyRankedTensor:$values, AnyRankedTensor:$indices);
}

def Autopar_ScatterElementsOp : Autopar_ComputeOp<"scatter_elements",
    [Autopar_OwnRule, Autopar_DataMovementCost]> {
  let summary = "ONNX ScatterElements (and Scatter) along `axis` (non-negative)";
  let description = [{
    The result is `data` with, for every position i of `indices` (and of
    `updates`, of the same shape), the element at i with its `axis`
    coordinate replaced by `indices[i]` set to `updates[i]` (`reduction`
    `none`; later positions win over earlier ones in row-major order) or
    combined with it (`add`, `mul`, `max`, `min`). Negative indices count
    from the end; an index out of range is a runtime error.
  }];
  let arguments = (ins AnyRankedTensor:$data, AnyRankedTensor:$indices,
    AnyRankedTensor:$updates, I64Attr:$axis,
    DefaultValuedAttr<StrAttr, "\"none\"">:$reduction);
  let results = (outs AnyRankedTensor:$result);
}

def Autopar_ScatterNDOp : Autopar_ComputeOp<"scatter_nd",
    [Autopar_OwnRule, Autopar_DataMovementCost]> {
  let summary = "ONNX ScatterND";
  let description = [{
    `indices` has shape [I..., k] with k <= rank(data); `updates` has shape
    [I..., data[k:]...]. For every index tuple i of I, the slice of the
    result at `indices[i]` (its first k coordinates) is set to (or, by
    `reduction`, combined with) `updates[i]`. Negative indices count from
    the end; an index out of range is a runtime error.
  }];
  let arguments = (ins AnyRankedTensor:$data, AnyRankedTensor:$indices,
    AnyRankedTensor:$updates,
    DefaultValuedAttr<StrAttr, "\"none\"">:$reduction);
  let results = (outs AnyRankedTensor:$result);
}

#endif // AUTOPAR_DIALECT_AUTOPAR_IR_AUTOPARINDEXINGOPS_TD
