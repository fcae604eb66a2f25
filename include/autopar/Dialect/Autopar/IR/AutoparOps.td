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
// What every op declares: sharding rule, cost class, view-ness
//===----------------------------------------------------------------------===//

/// The op's sharding rule is the elementwise rule with broadcasting (the
/// interface's default).
def Autopar_ElementwiseRule : TraitList<[Autopar_ShardingRuleInterface]>;
/// The op implements `getShardingRule()` next to its definition
/// (ShardingRules.cpp).
def Autopar_OwnRule : DeclareOpInterfaceMethods<Autopar_ShardingRuleInterface,
    ["getShardingRule"]>;
/// Like Autopar_OwnRule, and some operands are summed into the result (they
/// join a pending sum when a reduction loop is split).
def Autopar_OwnRuleWithAdditiveOperands
    : DeclareOpInterfaceMethods<Autopar_ShardingRuleInterface,
        ["getShardingRule", "isAdditiveOperand"]>;

/// The class the cost model prices the op in and its FLOPs per loop point.
class Autopar_Cost<string cls, int flops>
    : ParamNativeOpTrait<"CostTrait",
        "::mlir::autopar::OpClass::" # cls # ", " # flops> {
  let cppNamespace = "::mlir::autopar";
}
def Autopar_ElementwiseCost : Autopar_Cost<"Elementwise", 1>;
/// exp, log, tanh, ...: polynomial evaluations or libm calls.
def Autopar_TranscendentalCost : Autopar_Cost<"Elementwise", 20>;
def Autopar_MatMulCost : Autopar_Cost<"MatMul", 2>;
def Autopar_DataMovementCost : Autopar_Cost<"DataMovement", 0>;
class Autopar_ReductionCost<int flops> : Autopar_Cost<"Reduction", flops>;

/// The result is a view of the operand's buffer once bufferized.
def Autopar_View : NativeOpTrait<"IsView"> {
  let cppNamespace = "::mlir::autopar";
}

/// Operand 0 is read only at the positions the indices select, one element
/// per result element (gathers): the cost model counts the gathered bytes,
/// not the whole operand.
def Autopar_ReadsByIndex : NativeOpTrait<"ReadsByIndex"> {
  let cppNamespace = "::mlir::autopar";
}

//===----------------------------------------------------------------------===//
// Values without producers in the graph
//===----------------------------------------------------------------------===//

def Autopar_WeightOp : Autopar_Op<"weight", [Pure, Autopar_OwnRule,
    Autopar_CostInterface, Autopar_DataMovementCost]> {
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
    AllTypesMatch<["value", "result"]>, Autopar_OwnRule,
    Autopar_CostInterface, Autopar_DataMovementCost]> {
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

/// An ONNX compute op. `traits` must hold its cost (Autopar_Cost) and its
/// sharding rule (Autopar_ElementwiseRule or Autopar_OwnRule).
class Autopar_ComputeOp<string mnemonic, list<Trait> traits = []>
    : Autopar_Op<mnemonic, !listconcat(traits, [Pure,
        DeclareOpInterfaceMethods<InferTypeOpInterface>,
        Autopar_CostInterface])> {
  let assemblyFormat =
    "operands attr-dict `:` functional-type(operands, results)";
}

def Autopar_MatMulOp : Autopar_ComputeOp<"matmul", [Autopar_OwnRule]> {
  let summary = "ONNX MatMul (numpy matmul semantics)";
  let description = [{
    `Y = A @ B` with numpy semantics: 1-D operands are promoted (a leading 1
    for `A`, a trailing 1 for `B`) and removed from the result; leading batch
    dimensions broadcast.

    Cost class: `BatchedMatMul` when both operands carry batch dimensions
    and `B`'s hold more than one matrix (attention's products: each batch
    multiplies its own right-hand matrix, packed when the op runs, in
    small per-batch GEMMs), `MatMul` otherwise (a right-hand side shared by
    every batch, such as a weight); 2 FLOPs per loop point.
  }];
  let arguments = (ins AnyRankedTensor:$a, AnyRankedTensor:$b);
  let results = (outs AnyRankedTensor:$result);
  let extraClassDeclaration = [{
    /// CostInterface: `BatchedMatMul` for two batched operands, `MatMul`
    /// otherwise.
    ::mlir::autopar::OpClass getCostClass();
    /// CostInterface: a multiply and an add per loop point.
    static double getFlopsPerIteration() { return 2; }
  }];
}

def Autopar_GemmOp : Autopar_ComputeOp<"gemm",
    [Autopar_OwnRuleWithAdditiveOperands, Autopar_MatMulCost]> {
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

def Autopar_AddOp : Autopar_ComputeOp<"add", [Commutative,
    Autopar_ElementwiseRule, Autopar_ElementwiseCost]> {
  let summary = "ONNX Add with multidirectional (numpy) broadcasting";
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs);
  let results = (outs AnyRankedTensor:$result);
}

def Autopar_ReluOp : Autopar_ComputeOp<"relu",
    [Autopar_ElementwiseRule, Autopar_ElementwiseCost]> {
  let summary = "ONNX Relu: Y = max(X, 0)";
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
}

//===----------------------------------------------------------------------===//
// Elementwise operations
//===----------------------------------------------------------------------===//

/// One input, elementwise rule; `cost` is Autopar_ElementwiseCost unless
/// given.
class Autopar_UnaryOp<string mnemonic, list<Trait> traits = [],
                      Trait cost = Autopar_ElementwiseCost>
    : Autopar_ComputeOp<mnemonic,
        !listconcat(traits, [Autopar_ElementwiseRule, cost])> {
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
}

def Autopar_AbsOp : Autopar_UnaryOp<"abs"> { let summary = "ONNX Abs"; }
def Autopar_NegOp : Autopar_UnaryOp<"neg"> { let summary = "ONNX Neg"; }
def Autopar_SqrtOp : Autopar_UnaryOp<"sqrt"> { let summary = "ONNX Sqrt"; }
def Autopar_ReciprocalOp : Autopar_UnaryOp<"reciprocal"> {
  let summary = "ONNX Reciprocal: 1 / X";
}
def Autopar_ExpOp : Autopar_UnaryOp<"exp", [],
    Autopar_TranscendentalCost> { let summary = "ONNX Exp"; }
def Autopar_LogOp : Autopar_UnaryOp<"log", [],
    Autopar_TranscendentalCost> { let summary = "ONNX Log"; }
def Autopar_SigmoidOp : Autopar_UnaryOp<"sigmoid", [],
    Autopar_TranscendentalCost> {
  let summary = "ONNX Sigmoid: 1 / (1 + exp(-X))";
}
def Autopar_TanhOp : Autopar_UnaryOp<"tanh", [],
    Autopar_TranscendentalCost> { let summary = "ONNX Tanh"; }
def Autopar_ErfOp : Autopar_UnaryOp<"erf", [],
    Autopar_TranscendentalCost> { let summary = "ONNX Erf"; }
def Autopar_NotOp : Autopar_UnaryOp<"not"> {
  let summary = "ONNX Not (boolean)";
}
def Autopar_LeakyReluOp : Autopar_UnaryOp<"leaky_relu"> {
  let summary = "ONNX LeakyRelu: X < 0 ? alpha * X : X";
  let arguments = (ins AnyRankedTensor:$input,
    DefaultValuedAttr<F32Attr, "0.01">:$alpha);
}
def Autopar_GeluOp : Autopar_UnaryOp<"gelu", [],
    Autopar_TranscendentalCost> {
  let summary = "ONNX Gelu (opset 20): exact (erf) or tanh approximation";
  let arguments = (ins AnyRankedTensor:$input,
    DefaultValuedAttr<StrAttr, "\"none\"">:$approximate);
}
def Autopar_ClipOp : Autopar_UnaryOp<"clip"> {
  let summary = "ONNX Clip with constant bounds (absent bound: unbounded)";
  let arguments = (ins AnyRankedTensor:$input, OptionalAttr<F64Attr>:$min,
    OptionalAttr<F64Attr>:$max);
}

// Trigonometric and hyperbolic functions (float).
def Autopar_SinOp : Autopar_UnaryOp<"sin", [],
    Autopar_TranscendentalCost> { let summary = "ONNX Sin"; }
def Autopar_CosOp : Autopar_UnaryOp<"cos", [],
    Autopar_TranscendentalCost> { let summary = "ONNX Cos"; }
def Autopar_TanOp : Autopar_UnaryOp<"tan", [],
    Autopar_TranscendentalCost> { let summary = "ONNX Tan"; }
def Autopar_AsinOp : Autopar_UnaryOp<"asin", [],
    Autopar_TranscendentalCost> { let summary = "ONNX Asin"; }
def Autopar_AcosOp : Autopar_UnaryOp<"acos", [],
    Autopar_TranscendentalCost> { let summary = "ONNX Acos"; }
def Autopar_AtanOp : Autopar_UnaryOp<"atan", [],
    Autopar_TranscendentalCost> { let summary = "ONNX Atan"; }
def Autopar_SinhOp : Autopar_UnaryOp<"sinh", [],
    Autopar_TranscendentalCost> { let summary = "ONNX Sinh"; }
def Autopar_CoshOp : Autopar_UnaryOp<"cosh", [],
    Autopar_TranscendentalCost> { let summary = "ONNX Cosh"; }
def Autopar_AsinhOp : Autopar_UnaryOp<"asinh", [],
    Autopar_TranscendentalCost> { let summary = "ONNX Asinh"; }
def Autopar_AcoshOp : Autopar_UnaryOp<"acosh", [],
    Autopar_TranscendentalCost> { let summary = "ONNX Acosh"; }
def Autopar_AtanhOp : Autopar_UnaryOp<"atanh", [],
    Autopar_TranscendentalCost> { let summary = "ONNX Atanh"; }

// Rounding and sign.
def Autopar_FloorOp : Autopar_UnaryOp<"floor"> { let summary = "ONNX Floor"; }
def Autopar_CeilOp : Autopar_UnaryOp<"ceil"> { let summary = "ONNX Ceil"; }
def Autopar_RoundOp : Autopar_UnaryOp<"round"> {
  let summary = "ONNX Round: to the nearest integer, halves to even";
}
def Autopar_SignOp : Autopar_UnaryOp<"sign"> {
  let summary = "ONNX Sign: -1, 0 or 1 (NaN stays NaN)";
}
def Autopar_IsNaNOp : Autopar_UnaryOp<"is_nan"> {
  let summary = "ONNX IsNaN; the result is a boolean (i1) tensor";
}
def Autopar_IsInfOp : Autopar_UnaryOp<"is_inf"> {
  let summary = "ONNX IsInf; the result is a boolean (i1) tensor";
  let arguments = (ins AnyRankedTensor:$input,
    DefaultValuedAttr<BoolAttr, "true">:$detect_negative,
    DefaultValuedAttr<BoolAttr, "true">:$detect_positive);
}

// Activations (float).
def Autopar_EluOp : Autopar_UnaryOp<"elu", [], Autopar_TranscendentalCost> {
  let summary = "ONNX Elu: X < 0 ? alpha * (exp(X) - 1) : X";
  let arguments = (ins AnyRankedTensor:$input,
    DefaultValuedAttr<F32Attr, "1.0">:$alpha);
}
def Autopar_SeluOp : Autopar_UnaryOp<"selu", [], Autopar_TranscendentalCost> {
  let summary =
    "ONNX Selu: gamma * (X <= 0 ? alpha * (exp(X) - 1) : X)";
  let arguments = (ins AnyRankedTensor:$input,
    DefaultValuedAttr<F32Attr, "1.67326319217681884765625">:$alpha,
    DefaultValuedAttr<F32Attr, "1.05070102214813232421875">:$gamma);
}
def Autopar_CeluOp : Autopar_UnaryOp<"celu", [], Autopar_TranscendentalCost> {
  let summary = "ONNX Celu: max(0, X) + min(0, alpha * (exp(X / alpha) - 1))";
  let arguments = (ins AnyRankedTensor:$input,
    DefaultValuedAttr<F32Attr, "1.0">:$alpha);
}
def Autopar_HardSigmoidOp : Autopar_UnaryOp<"hard_sigmoid"> {
  let summary = "ONNX HardSigmoid: max(0, min(1, alpha * X + beta))";
  let arguments = (ins AnyRankedTensor:$input,
    DefaultValuedAttr<F32Attr, "0.2">:$alpha,
    DefaultValuedAttr<F32Attr, "0.5">:$beta);
}
def Autopar_HardSwishOp : Autopar_UnaryOp<"hard_swish"> {
  let summary = "ONNX HardSwish: X * max(0, min(1, X / 6 + 1 / 2))";
}
def Autopar_SoftplusOp : Autopar_UnaryOp<"softplus", [],
    Autopar_TranscendentalCost> {
  let summary = "ONNX Softplus: log(exp(X) + 1)";
}
def Autopar_SoftsignOp : Autopar_UnaryOp<"softsign"> {
  let summary = "ONNX Softsign: X / (1 + |X|)";
}
def Autopar_ThresholdedReluOp : Autopar_UnaryOp<"thresholded_relu"> {
  let summary = "ONNX ThresholdedRelu: X > alpha ? X : 0";
  let arguments = (ins AnyRankedTensor:$input,
    DefaultValuedAttr<F32Attr, "1.0">:$alpha);
}
def Autopar_ShrinkOp : Autopar_UnaryOp<"shrink"> {
  let summary = "ONNX Shrink: X < -lambd ? X + bias : X > lambd ? X - bias : 0";
  let arguments = (ins AnyRankedTensor:$input,
    DefaultValuedAttr<F32Attr, "0.0">:$bias,
    DefaultValuedAttr<F32Attr, "0.5">:$lambd);
}

def Autopar_CastOp : Autopar_Op<"cast", [Pure, Autopar_ElementwiseRule,
    Autopar_CostInterface, Autopar_DataMovementCost]> {
  let summary = "ONNX Cast: the result's element type is the `to` type";
  let description = [{
    Float to integer conversion truncates toward zero, as ONNX (and C) do;
    to bool is `x != 0`.
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat =
    "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

/// Two inputs with multidirectional broadcasting, elementwise rule.
class Autopar_BinaryOp<string mnemonic, list<Trait> traits = [],
                       Trait cost = Autopar_ElementwiseCost>
    : Autopar_ComputeOp<mnemonic,
        !listconcat(traits, [Autopar_ElementwiseRule, cost])> {
  let summary = "ONNX " # mnemonic # " with multidirectional broadcasting";
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs);
  let results = (outs AnyRankedTensor:$result);
}

def Autopar_SubOp : Autopar_BinaryOp<"sub">;
def Autopar_MulOp : Autopar_BinaryOp<"mul", [Commutative]>;
def Autopar_DivOp : Autopar_BinaryOp<"div">;
def Autopar_PowOp : Autopar_BinaryOp<"pow", [], Autopar_TranscendentalCost>;
def Autopar_AndOp : Autopar_BinaryOp<"and", [Commutative]>;
def Autopar_EqualOp : Autopar_BinaryOp<"equal", [Commutative]> {
  let description = "The result is a boolean (i1) tensor.";
}
def Autopar_LessOp : Autopar_BinaryOp<"less"> {
  let description = "The result is a boolean (i1) tensor.";
}
def Autopar_GreaterOp : Autopar_BinaryOp<"greater"> {
  let description = "The result is a boolean (i1) tensor.";
}

def Autopar_GreaterOrEqualOp : Autopar_BinaryOp<"greater_or_equal"> {
  let description = "The result is a boolean (i1) tensor.";
}
def Autopar_LessOrEqualOp : Autopar_BinaryOp<"less_or_equal"> {
  let description = "The result is a boolean (i1) tensor.";
}
def Autopar_OrOp : Autopar_BinaryOp<"or", [Commutative]>;
def Autopar_XorOp : Autopar_BinaryOp<"xor", [Commutative]>;
def Autopar_MaxOp : Autopar_BinaryOp<"max", [Commutative]> {
  let description = [{
    Two operands of ONNX's variadic Max (the importer chains more); a NaN
    operand gives NaN.
  }];
}
def Autopar_MinOp : Autopar_BinaryOp<"min", [Commutative]> {
  let description = [{
    Two operands of ONNX's variadic Min (the importer chains more); a NaN
    operand gives NaN.
  }];
}
def Autopar_ModOp : Autopar_BinaryOp<"mod"> {
  let description = [{
    With `fmod` the remainder has the sign of the dividend (C fmod);
    without it (integers only) the sign of the divisor (Python %).
  }];
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs,
    DefaultValuedAttr<BoolAttr, "false">:$fmod);
}
def Autopar_BitShiftOp : Autopar_BinaryOp<"bit_shift"> {
  let summary = "ONNX BitShift: a logical shift of unsigned integers";
  let description = [{
    Shifts each element of `lhs` left (`right` false) or right by the
    element of `rhs` (both of the same integer type, broadcasting). The
    shift is logical: the bits shifted in are zeros, and a shift by the
    width of the type or more gives 0.
  }];
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs,
    DefaultValuedAttr<BoolAttr, "false">:$right);
  let hasVerifier = 1;
}
def Autopar_PReluOp : Autopar_BinaryOp<"prelu"> {
  let description = [{
    ONNX PRelu: X < 0 ? slope * X : X; `slope` broadcasts to X.
  }];
}

def Autopar_WhereOp : Autopar_ComputeOp<"where",
    [Autopar_ElementwiseRule, Autopar_ElementwiseCost]> {
  let summary = "ONNX Where: condition ? X : Y, broadcasting all three";
  let arguments = (ins AnyRankedTensor:$condition, AnyRankedTensor:$x,
    AnyRankedTensor:$y);
  let results = (outs AnyRankedTensor:$result);
}

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

def Autopar_SoftmaxOp : Autopar_ComputeOp<"softmax",
    [Autopar_OwnRule, Autopar_ReductionCost<5>]> {
  let summary = "ONNX Softmax (opset 13 semantics) along `axis`";
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
}
def Autopar_LogSoftmaxOp : Autopar_ComputeOp<"log_softmax",
    [Autopar_OwnRule, Autopar_ReductionCost<5>]> {
  let summary = "ONNX LogSoftmax (opset 13 semantics) along `axis`";
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
}
def Autopar_LayerNormOp : Autopar_ComputeOp<"layer_norm",
    [Autopar_OwnRule, Autopar_ReductionCost<8>]> {
  let summary = "ONNX LayerNormalization over the dimensions from `axis` on";
  let description = [{
    Y = (X - mean) / sqrt(var + epsilon) * scale + bias, with mean and variance
    over dimensions `axis`..rank-1 (`axis` normalized to be non-negative);
    `scale` and `bias` broadcast to those dimensions.
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$scale,
    Optional<AnyRankedTensor>:$bias, I64Attr:$axis,
    DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon);
  let results = (outs AnyRankedTensor:$result);
}
def Autopar_BatchNormOp : Autopar_ComputeOp<"batch_norm",
    [Autopar_OwnRule, Autopar_ReductionCost<4>]> {
  let summary = "ONNX BatchNormalization in inference mode";
  let description = [{
    Y = (X - mean) / sqrt(var + epsilon) * scale + bias per channel (dimension
    1); scale, bias, mean and var are vectors of the channel count.
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$scale,
    AnyRankedTensor:$bias, AnyRankedTensor:$mean, AnyRankedTensor:$var,
    DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon);
  let results = (outs AnyRankedTensor:$result);
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class Autopar_ReduceOp<string mnemonic> : Autopar_ComputeOp<mnemonic,
    [Autopar_OwnRule, Autopar_ReductionCost<1>]> {
  let summary = "ONNX " # mnemonic # " over constant `axes`";
  let description = [{
    `axes` are non-negative, sorted and unique (the importer normalizes them;
    "all axes" is spelled out). With `keepdims` the reduced dimensions stay
    with size 1.
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$axes,
    DefaultValuedAttr<BoolAttr, "true">:$keepdims);
  let results = (outs AnyRankedTensor:$result);
}
def Autopar_ReduceSumOp : Autopar_ReduceOp<"reduce_sum">;
def Autopar_ReduceMeanOp : Autopar_ReduceOp<"reduce_mean">;
def Autopar_ReduceMaxOp : Autopar_ReduceOp<"reduce_max">;
def Autopar_ReduceMinOp : Autopar_ReduceOp<"reduce_min">;
def Autopar_ReduceProdOp : Autopar_ReduceOp<"reduce_prod">;
def Autopar_ReduceL1Op : Autopar_ReduceOp<"reduce_l1">;
def Autopar_ReduceL2Op : Autopar_ReduceOp<"reduce_l2">;
def Autopar_ReduceLogSumOp : Autopar_ReduceOp<"reduce_log_sum">;
def Autopar_ReduceLogSumExpOp : Autopar_ReduceOp<"reduce_log_sum_exp">;
def Autopar_ReduceSumSquareOp : Autopar_ReduceOp<"reduce_sum_square">;

/// ONNX ArgMax / ArgMin: int64 indices of the extreme along `axis`.
class Autopar_ArgReduceOp<string mnemonic> : Autopar_ComputeOp<mnemonic,
    [Autopar_OwnRule, Autopar_ReductionCost<1>]> {
  let summary = "ONNX " # mnemonic # " along `axis` (non-negative)";
  let description = [{
    The result is int64. Ties give the first index, or the last with
    `select_last_index`; a NaN wins over every number (the first NaN, or the
    last). With `keepdims` the axis stays with size 1.
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$axis,
    DefaultValuedAttr<BoolAttr, "true">:$keepdims,
    DefaultValuedAttr<BoolAttr, "false">:$select_last_index);
  let results = (outs AnyRankedTensor:$result);
}
def Autopar_ArgMaxOp : Autopar_ArgReduceOp<"arg_max">;
def Autopar_ArgMinOp : Autopar_ArgReduceOp<"arg_min">;

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Autopar_TransposeOp : Autopar_ComputeOp<"transpose",
    [Autopar_OwnRule, Autopar_DataMovementCost]> {
  let summary = "ONNX Transpose: result dimension i is input dimension perm[i]";
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs AnyRankedTensor:$result);
}

def Autopar_ReshapeOp : Autopar_Op<"reshape", [Pure, Autopar_OwnRule,
    Autopar_CostInterface, Autopar_DataMovementCost, Autopar_View]> {
  let summary = "reshape to the static result type (ONNX Reshape, Flatten, "
                "Squeeze, Unsqueeze)";
  let description = [{
    Row-major reinterpretation of the input as the result shape; the element
    counts match. The importer resolves ONNX's shape operand (0 and -1
    entries, shape subgraphs) to the static result type.
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat =
    "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Autopar_ExpandOp : Autopar_Op<"expand", [Pure, Autopar_OwnRule,
    Autopar_CostInterface, Autopar_DataMovementCost]> {
  let summary = "ONNX Expand to the static result type";
  let description = [{
    Broadcasts the input to the result shape (which the importer resolves,
    including ONNX's rule that the result is the broadcast of both shapes).
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat =
    "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Autopar_ConcatOp : Autopar_ComputeOp<"concat",
    [Autopar_OwnRule, Autopar_DataMovementCost]> {
  let summary = "ONNX Concat along `axis` (non-negative)";
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
}

def Autopar_SplitOp : Autopar_Op<"split", [Pure, Autopar_OwnRule,
    Autopar_CostInterface, Autopar_DataMovementCost, Autopar_View]> {
  let summary = "ONNX Split along `axis`; piece sizes are the result types'";
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$axis);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat =
    "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Autopar_SliceOp : Autopar_Op<"slice", [Pure, Autopar_OwnRule,
    Autopar_CostInterface, Autopar_DataMovementCost, Autopar_View]> {
  let summary = "ONNX Slice with constant, normalized starts and steps";
  let description = [{
    Result element i along dimension d is input element
    `starts[d] + i * steps[d]`; the result type gives the sizes. One entry per
    dimension; `starts` are in range and `steps` are non-zero (negative steps
    walk backwards). The importer clamps ONNX's starts/ends/axes/steps.
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$starts,
    DenseI64ArrayAttr:$steps);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat =
    "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Autopar_GatherOp : Autopar_ComputeOp<"gather",
    [Autopar_OwnRule, Autopar_DataMovementCost, Autopar_ReadsByIndex]> {
  let summary = "ONNX Gather along `axis` (non-negative)";
  let description = [{
    Result shape is data[:axis] ++ indices ++ data[axis+1:]. Negative indices
    count from the end; an index out of range is a runtime error.
  }];
  let arguments = (ins AnyRankedTensor:$data, AnyRankedTensor:$indices,
    I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
}

def Autopar_GatherElementsOp : Autopar_ComputeOp<"gather_elements",
    [Autopar_OwnRule, Autopar_DataMovementCost, Autopar_ReadsByIndex]> {
  let summary = "ONNX GatherElements along `axis` (non-negative)";
  let description = [{
    `data` and `indices` have the same rank; the result has the shape of
    `indices` and element i is `data` at i with the `axis` coordinate
    replaced by `indices[i]`. Negative indices count from the end; an index
    out of range is a runtime error.
  }];
  let arguments = (ins AnyRankedTensor:$data, AnyRankedTensor:$indices,
    I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
}

def Autopar_PadOp : Autopar_ComputeOp<"pad",
    [Autopar_OwnRule, Autopar_DataMovementCost]> {
  let summary = "ONNX Pad in every mode with constant pads";
  let description = [{
    `pads` = [begin_1.., end_1..] per dimension; negative pads crop. Mode
    `constant` fills with `value` (a scalar operand, which may be computed
    at run time; absent: 0), `reflect` mirrors without repeating the edge,
    `edge` repeats the edge, `wrap` wraps around.
  }];
  let arguments = (ins AnyRankedTensor:$input,
    Optional<AnyRankedTensor>:$value, DenseI64ArrayAttr:$pads,
    DefaultValuedAttr<StrAttr, "\"constant\"">:$mode);
  let results = (outs AnyRankedTensor:$result);
}

//===----------------------------------------------------------------------===//
// Convolution and pooling (NCHW..., any number of spatial dimensions)
//===----------------------------------------------------------------------===//

def Autopar_ConvOp : Autopar_ComputeOp<"conv",
    [Autopar_OwnRuleWithAdditiveOperands]> {
  let summary = "ONNX Conv with explicit pads (auto_pad resolved at import)";
  let description = [{
    X: [N, C, D1...], W: [M, C/group, K1...], optional B: [M].
    `pads` = [begin_1.., end_1..] as in ONNX.

    Cost class: `DepthwiseConv` when each group reads one input channel
    (W's dimension 1 is 1 and group > 1: each output sums the window alone,
    too short a reduction for the register-tiled GEMM of other
    convolutions), `Conv` otherwise; 2 FLOPs per loop point.
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$weight,
    Optional<AnyRankedTensor>:$bias, DenseI64ArrayAttr:$strides,
    DenseI64ArrayAttr:$pads, DenseI64ArrayAttr:$dilations,
    DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs AnyRankedTensor:$result);
  let extraClassDeclaration = [{
    /// CostInterface: `DepthwiseConv` for one input channel per group,
    /// `Conv` otherwise.
    ::mlir::autopar::OpClass getCostClass();
    /// CostInterface: a multiply and an add per loop point.
    static double getFlopsPerIteration() { return 2; }
  }];
}

class Autopar_PoolOp<string mnemonic> : Autopar_ComputeOp<mnemonic,
    [Autopar_OwnRule, Autopar_ReductionCost<1>]> {
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$kernel_shape,
    DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
    DenseI64ArrayAttr:$dilations,
    DefaultValuedAttr<BoolAttr, "false">:$ceil_mode,
    DefaultValuedAttr<BoolAttr, "false">:$count_include_pad);
  let results = (outs AnyRankedTensor:$result);
}
def Autopar_MaxPoolOp : Autopar_PoolOp<"max_pool"> {
  let summary = "ONNX MaxPool (explicit pads; padding never wins the max)";
}
def Autopar_AveragePoolOp : Autopar_PoolOp<"average_pool"> {
  let summary = "ONNX AveragePool (explicit pads)";
}
def Autopar_GlobalAveragePoolOp : Autopar_ComputeOp<"global_average_pool",
    [Autopar_OwnRule, Autopar_ReductionCost<1>]> {
  let summary = "ONNX GlobalAveragePool: mean over all spatial dimensions";
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
}

//===----------------------------------------------------------------------===//
// Linear quantization (int8/uint8)
//===----------------------------------------------------------------------===//

def Autopar_QuantizeLinearOp : Autopar_ComputeOp<"quantize_linear",
    [Autopar_OwnRule, Autopar_ElementwiseCost]> {
  let summary = "ONNX QuantizeLinear: saturate(round(x / scale) + zero_point)";
  let description = [{
    `x` is f32 (or i32); `scale` is f32 and `zero_point` i8 or ui8, both
    per tensor (rank 0 or one element) or per axis (1-D of the size of
    `x`'s dimension `axis`). Rounding is half to even and the result
    saturates to the zero point's range, whose element type the result has.
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$scale,
    AnyRankedTensor:$zero_point, DefaultValuedAttr<I64Attr, "1">:$axis);
  let results = (outs AnyRankedTensor:$result);
  let hasVerifier = 1;
}

def Autopar_DequantizeLinearOp : Autopar_ComputeOp<"dequantize_linear",
    [Autopar_OwnRule, Autopar_ElementwiseCost]> {
  let summary = "ONNX DequantizeLinear: (x - zero_point) * scale";
  let description = [{
    `x` is i8, ui8 or i32 and `zero_point` has its element type; `scale` is
    f32. Both are per tensor (rank 0 or one element) or per axis (1-D of the
    size of `x`'s dimension `axis`). The difference is taken in i32, the
    result is f32.
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$scale,
    AnyRankedTensor:$zero_point, DefaultValuedAttr<I64Attr, "1">:$axis);
  let results = (outs AnyRankedTensor:$result);
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Einsum
//===----------------------------------------------------------------------===//

def Autopar_EinsumOp : Autopar_ComputeOp<"einsum",
    [Autopar_OwnRule, Autopar_MatMulCost]> {
  let summary = "ONNX Einsum with an explicit output (`ij,jk->ik`)";
  let description = [{
    Lowercase letters only, no ellipsis, an explicit `->` output (the importer
    spells out implicit outputs). A letter absent from the output is summed.
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs, StrAttr:$equation);
  let results = (outs AnyRankedTensor:$result);
}

include "autopar/Dialect/Autopar/IR/AutoparIndexingOps.td"

//===----------------------------------------------------------------------===//
// Partitioned-program operations
//===----------------------------------------------------------------------===//

def Autopar_ToPartialOp : Autopar_Op<"to_partial", [Pure,
    Autopar_CostInterface, Autopar_DataMovementCost,
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

def Autopar_SwapGridAxesOp : Autopar_Op<"swap_grid_axes", [Pure,
    Autopar_CostInterface, Autopar_DataMovementCost,
    AllTypesMatch<["input", "result"]>,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "point-to-point exchange between devices with swapped coordinates";
  let description = [{
    Every device receives the value of the device whose coordinates on grid
    axes `grid_axes[0]` and `grid_axes[1]` (of equal size) are exchanged, and
    sends its own to it; devices whose two coordinates are equal keep their
    value. A value split (or pending) over the first axis becomes split (or
    pending) over the second in one message per device, which is cheaper than
    gathering and slicing.

    ```mlir
    %y = autopar.swap_grid_axes %x on @grid grid_axes = [0, 1] : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$grid,
    DenseI64ArrayAttr:$grid_axes);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $grid `grid_axes` `=` $grid_axes attr-dict `:` type($result)
  }];
}

include "autopar/Dialect/Autopar/IR/AutoparTrainingOps.td"
include "autopar/Dialect/Autopar/IR/AutoparPipelineOps.td"
include "autopar/Dialect/Autopar/IR/AutoparRandomOps.td"

#endif // AUTOPAR_DIALECT_AUTOPAR_IR_AUTOPAROPS_TD
