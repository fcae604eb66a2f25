//===- AutoparGradientInterface.td - reverse-mode rules ----*- tablegen -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_DIALECT_AUTOPAR_IR_AUTOPARGRADIENTINTERFACE_TD
#define AUTOPAR_DIALECT_AUTOPAR_IR_AUTOPARGRADIENTINTERFACE_TD

include "mlir/IR/OpBase.td"

def Autopar_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let description = [{
    The reverse-mode rule of an op: given the gradients of the loss with
    respect to the op's results, the op builds the vector-Jacobian product,
    the gradients with respect to its operands, out of autopar ops (which
    the planner, the partitioner and the lowering already know). The rules
    live next to the ops' semantics (lib/Dialect/Autopar/IR/Gradients.cpp)
    and are attached to the ops when the dialect loads;
    `autopar-differentiate` calls them in reverse program order.

    Gradients of operands that are broadcast by the op are reduced back to
    the operand's shape (broadcast-undo by summation). An op without this
    interface has no gradient rule: differentiating through it is an error
    naming the node and the op.
  }];
  let cppNamespace = "::mlir::autopar";
  let methods = [
    InterfaceMethod<
      /*desc=*/[{Builds, at the builder's insertion point, the gradient of
        every operand `i` with `wanted[i]` set from `resultGrads` (one per
        result; a null value is a zero gradient). Appends one value per
        operand to `operandGrads`: the gradient, of the operand's type, or
        null when it is not wanted or the operand is not differentiable
        (integer indices, conditions). Fails with a diagnostic on the op
        when its attributes or operands are outside the rule.}],
      /*retTy=*/"::llvm::LogicalResult",
      /*methodName=*/"buildGradients",
      /*args=*/(ins "::mlir::OpBuilder &":$builder,
                    "::mlir::ValueRange":$resultGrads,
                    "::llvm::ArrayRef<bool>":$wanted,
                    "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>
  ];
}

#endif // AUTOPAR_DIALECT_AUTOPAR_IR_AUTOPARGRADIENTINTERFACE_TD
