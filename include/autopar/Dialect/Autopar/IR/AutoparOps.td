//===- AutoparOps.td - autopar operations ------------------*- tablegen -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_DIALECT_AUTOPAR_IR_AUTOPAROPS_TD
#define AUTOPAR_DIALECT_AUTOPAR_IR_AUTOPAROPS_TD

include "autopar/Dialect/Autopar/IR/AutoparBase.td"
include "autopar/Dialect/Autopar/IR/AutoparAttrs.td"
include "autopar/Dialect/Autopar/IR/AutoparInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

//===----------------------------------------------------------------------===//
// Values without producers in the graph
//===----------------------------------------------------------------------===//

def Autopar_WeightOp : Autopar_Op<"weight", [Pure]> {
  let summary = "a model weight (ONNX initializer) whose data lives outside the IR";
  let description = [{
    Names an ONNX initializer. The data is kept by the importer's weight store
    and, after partitioning, written per device by the compiler driver; it is
    never printed into the IR. In a partitioned program the result type is the
    device's local shard and `sharding` records which part of the global
    tensor (of type `global_type`) the device holds.

    ```mlir
    %w = autopar.weight "fc1.weight" : tensor<16x8xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
}

def Autopar_ConstantOp : Autopar_Op<"constant", [ConstantLike, Pure,
    AllTypesMatch<["value", "result"]>]> {
  let summary = "a small constant tensor (ONNX Constant)";
  let description = [{
    A constant produced by an ONNX `Constant` node. Large constants are
    imported as `autopar.weight` instead so that their data stays out of the
    IR.
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// ONNX compute operations
//===----------------------------------------------------------------------===//

class Autopar_ComputeOp<string mnemonic, list<Trait> traits = []>
    : Autopar_Op<mnemonic, !listconcat(traits, [Pure,
        DeclareOpInterfaceMethods<InferTypeOpInterface>])> {
  let assemblyFormat =
    "operands attr-dict `:` functional-type(operands, results)";
}

def Autopar_MatMulOp : Autopar_ComputeOp<"matmul"> {
  let summary = "ONNX MatMul (numpy matmul semantics)";
  let description = [{
    `Y = A @ B` with numpy semantics: 1-D operands are promoted (a leading 1
    for `A`, a trailing 1 for `B`) and removed from the result; leading batch
    dimensions broadcast.
  }];
  let arguments = (ins AnyRankedTensor:$a, AnyRankedTensor:$b);
  let results = (outs AnyRankedTensor:$result);
}

def Autopar_GemmOp : Autopar_ComputeOp<"gemm", [
    DeclareOpInterfaceMethods<Autopar_PartialSumRuleInterface, ["isAdditiveOperand"]>]> {
  let summary = "ONNX Gemm: Y = alpha * op(A) * op(B) + beta * C";
  let description = [{
    `A` and `B` are matrices, transposed first when `trans_a`/`trans_b` is
    set. The optional `C` broadcasts unidirectionally to the `M x N` result.
  }];
  let arguments = (ins AnyRankedTensor:$a, AnyRankedTensor:$b,
    Optional<AnyRankedTensor>:$c,
    DefaultValuedAttr<F32Attr, "1.0">:$alpha,
    DefaultValuedAttr<F32Attr, "1.0">:$beta,
    DefaultValuedAttr<BoolAttr, "false">:$trans_a,
    DefaultValuedAttr<BoolAttr, "false">:$trans_b);
  let results = (outs AnyRankedTensor:$result);
}

def Autopar_AddOp : Autopar_ComputeOp<"add", [Commutative]> {
  let summary = "ONNX Add with multidirectional (numpy) broadcasting";
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs);
  let results = (outs AnyRankedTensor:$result);
}

def Autopar_ReluOp : Autopar_ComputeOp<"relu"> {
  let summary = "ONNX Relu: Y = max(X, 0)";
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
}

//===----------------------------------------------------------------------===//
// Partitioned-program operations
//===----------------------------------------------------------------------===//

def Autopar_ToPartialOp : Autopar_Op<"to_partial", [Pure,
    AllTypesMatch<["input", "result"]>,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "turn a replicated value into a pending sum over grid axes";
  let description = [{
    A local reshard with no communication: the device whose coordinates on
    every axis of `grid_axes` are 0 keeps its value; every other device holds
    zeros. Summing over those axes gives back the input. The partitioner uses
    it when an additive operand (the bias of a Gemm whose reduction is split)
    must join a pending sum.

    ```mlir
    %p = autopar.to_partial %c on @grid grid_axes = [1] : tensor<16xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$grid,
    DenseI64ArrayAttr:$grid_axes);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $grid `grid_axes` `=` $grid_axes attr-dict `:` type($result)
  }];
}

#endif // AUTOPAR_DIALECT_AUTOPAR_IR_AUTOPAROPS_TD
