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
    Implemented for every autopar op next to its upstream interface (see
    ShardingInterfaceImpl.cpp).
  }];
  let cppNamespace = "::mlir::autopar";
  let methods = [
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
      /*defaultImplementation=*/"return true;">
  ];
}

#endif // AUTOPAR_DIALECT_AUTOPAR_IR_AUTOPARINTERFACES_TD
