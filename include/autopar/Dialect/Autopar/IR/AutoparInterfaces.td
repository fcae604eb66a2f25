//===- AutoparInterfaces.td - autopar op interfaces --------*- tablegen -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_DIALECT_AUTOPAR_IR_AUTOPARINTERFACES_TD
#define AUTOPAR_DIALECT_AUTOPAR_IR_AUTOPARINTERFACES_TD

include "mlir/IR/OpBase.td"

def Autopar_ShardingRuleInterface : OpInterface<"ShardingRuleInterface"> {
  let description = [{
    Completes the loop-based sharding rule that every autopar op exposes
    through upstream `shard::ShardingInterface` (iterator types and indexing
    maps) with what the maps cannot say:
    - which operands are *added* into a reduction result rather than
      multiplied into it: when a reduction loop of the op is split, the result
      is a pending sum and an additive operand (the `C` of Gemm, the bias of
      Conv) must be a pending sum over the same axes, so that it is added
      exactly once;
    - which loops must stay whole on every device: the softmax axis, the
      normalized dimensions of a layer norm, the spatial windows of a
      convolution, the concatenated dimension of a concat, a max or mean
      reduction. Operands are gathered along them before the op runs.
    The rule itself (`getShardingRule`) defaults to the elementwise rule
    with multidirectional broadcasting; an op with another rule declares the
    method with `DeclareOpInterfaceMethods` and implements it next to the op
    (ShardingRules.cpp). Every op with this interface gets the upstream
    `shard::ShardingInterface` built from its rule when the dialect loads.
  }];
  let cppNamespace = "::mlir::autopar";
  let methods = [
    InterfaceMethod<
      /*desc=*/[{Returns the loop iterators, the indexing maps (operands then
        results) and the loops that may be split.}],
      /*retTy=*/"::mlir::autopar::LoopShardingRule",
      /*methodName=*/"getShardingRule",
      /*args=*/(ins),
      /*methodBody=*/"",
      /*defaultImplementation=*/[{
        return ::mlir::autopar::getElementwiseShardingRule(
            $_op.getOperation());
      }]>,
    InterfaceMethod<
      /*desc=*/"Returns true when operand `index` is summed into the result.",
      /*retTy=*/"bool",
      /*methodName=*/"isAdditiveOperand",
      /*args=*/(ins "unsigned":$index),
      /*methodBody=*/"",
      /*defaultImplementation=*/"return false;">,
    InterfaceMethod<
      /*desc=*/"Returns false when loop `loop` must not be split.",
      /*retTy=*/"bool",
      /*methodName=*/"isLoopSplittable",
      /*args=*/(ins "unsigned":$loop),
      /*methodBody=*/"",
      /*defaultImplementation=*/[{
        ::mlir::autopar::LoopShardingRule rule = $_op.getShardingRule();
        return loop < rule.splittable.size() && rule.splittable[loop];
      }]>
  ];
}

def Autopar_CostInterface : OpInterface<"CostInterface"> {
  let description = [{
    How the cost model prices an op: its class (each class has its own
    calibrated FLOP rate and bandwidth) and its FLOPs per point of its loop
    nest. Both come from the op's `Autopar_Cost<class, flops>` trait in ODS,
    or, for an op whose class depends on its attributes (conv), from
    methods its ODS definition declares; an op that lists this interface
    with neither does not compile.
  }];
  let cppNamespace = "::mlir::autopar";
  let methods = [
    InterfaceMethod<"Returns the class the op is priced in.",
      "::mlir::autopar::OpClass", "getCostClass", (ins)>,
    InterfaceMethod<"Returns the FLOPs per point of the op's loop nest.",
      "double", "getFlopsPerIteration", (ins)>
  ];
}

#endif // AUTOPAR_DIALECT_AUTOPAR_IR_AUTOPARINTERFACES_TD
