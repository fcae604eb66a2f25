//===- Elementwise.cpp - unary, binary and ternary maps ------------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Importers of the elementwise ONNX operators (Abs ... Where, Clip, Cast)
// and their registration by opset.
//
//===----------------------------------------------------------------------===//

#include "../Importer.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::importer;

using NodeRef = OnnxImporter::NodeRef;

void OnnxImporter::registerElementwiseImporters(OpImporterRegistry &registry) {
  registry.add("Abs", 1, &OnnxImporter::importUnary);
  registry.add("Neg", 1, &OnnxImporter::importUnary);
  registry.add("Sqrt", 1, &OnnxImporter::importUnary);
  registry.add("Reciprocal", 1, &OnnxImporter::importUnary);
  registry.add("Exp", 1, &OnnxImporter::importUnary);
  registry.add("Log", 1, &OnnxImporter::importUnary);
  registry.add("Relu", 1, &OnnxImporter::importUnary);
  registry.add("Sigmoid", 1, &OnnxImporter::importUnary);
  registry.add("Tanh", 1, &OnnxImporter::importUnary);
  registry.add("Erf", 1, &OnnxImporter::importUnary);
  registry.add("Not", 1, &OnnxImporter::importUnary);
  registry.add("LeakyRelu", 1, &OnnxImporter::importUnary);
  registry.add("Gelu", 20, &OnnxImporter::importUnary);
  registry.add("Add", 1, &OnnxImporter::importBinary);
  registry.add("Sub", 1, &OnnxImporter::importBinary);
  registry.add("Mul", 1, &OnnxImporter::importBinary);
  registry.add("Div", 1, &OnnxImporter::importBinary);
  registry.add("Pow", 1, &OnnxImporter::importBinary);
  registry.add("And", 1, &OnnxImporter::importBinary);
  registry.add("Equal", 1, &OnnxImporter::importBinary);
  registry.add("Less", 1, &OnnxImporter::importBinary);
  registry.add("Greater", 1, &OnnxImporter::importBinary);
  registry.add("Sin", 7, &OnnxImporter::importUnary);
  registry.add("Cos", 7, &OnnxImporter::importUnary);
  registry.add("Tan", 7, &OnnxImporter::importUnary);
  registry.add("Asin", 7, &OnnxImporter::importUnary);
  registry.add("Acos", 7, &OnnxImporter::importUnary);
  registry.add("Atan", 7, &OnnxImporter::importUnary);
  registry.add("Sinh", 9, &OnnxImporter::importUnary);
  registry.add("Cosh", 9, &OnnxImporter::importUnary);
  registry.add("Asinh", 9, &OnnxImporter::importUnary);
  registry.add("Acosh", 9, &OnnxImporter::importUnary);
  registry.add("Atanh", 9, &OnnxImporter::importUnary);
  registry.add("Floor", 6, &OnnxImporter::importUnary);
  registry.add("Ceil", 6, &OnnxImporter::importUnary);
  registry.add("Round", 11, &OnnxImporter::importUnary);
  registry.add("Sign", 9, &OnnxImporter::importUnary);
  registry.add("IsNaN", 9, &OnnxImporter::importUnary);
  registry.add("IsInf", 10, &OnnxImporter::importUnary);
  registry.add("Elu", 6, &OnnxImporter::importUnary);
  registry.add("Selu", 6, &OnnxImporter::importUnary);
  registry.add("Celu", 12, &OnnxImporter::importUnary);
  registry.add("HardSigmoid", 6, &OnnxImporter::importUnary);
  registry.add("HardSwish", 14, &OnnxImporter::importUnary);
  registry.add("Softplus", 1, &OnnxImporter::importUnary);
  registry.add("Softsign", 1, &OnnxImporter::importUnary);
  registry.add("ThresholdedRelu", 10, &OnnxImporter::importUnary);
  registry.add("Shrink", 9, &OnnxImporter::importUnary);
  registry.add("GreaterOrEqual", 12, &OnnxImporter::importBinary);
  registry.add("LessOrEqual", 12, &OnnxImporter::importBinary);
  registry.add("Or", 7, &OnnxImporter::importBinary);
  registry.add("Xor", 7, &OnnxImporter::importBinary);
  registry.add("Mod", 10, &OnnxImporter::importBinary);
  // Max/Min/Sum/Mean-6 (PyTorch's opset-6 exports) are the later forms
  // without multidirectional broadcasting: a subset of what the handler
  // accepts. PRelu-6 applies a 1-D slope per channel (importBinary).
  registry.add("PRelu", 6, &OnnxImporter::importBinary);
  registry.add("BitShift", 11, &OnnxImporter::importBitShift);
  registry.add("Max", 6, &OnnxImporter::importVariadic);
  registry.add("Min", 6, &OnnxImporter::importVariadic);
  registry.add("Sum", 6, &OnnxImporter::importVariadic);
  registry.add("Mean", 6, &OnnxImporter::importVariadic);
  registry.add("Clip", 1, &OnnxImporter::importClip);
  registry.add("Cast", 1, &OnnxImporter::importCast);
  registry.add("Where", 1, &OnnxImporter::importWhere);
}

LogicalResult OnnxImporter::importUnary(const NodeRef &ref, Location loc) {
  StringRef op = ref.node->op_type();
  SmallVector<StringRef> allowed;
  if (llvm::is_contained({"LeakyRelu", "Elu", "Celu", "ThresholdedRelu"}, op))
    allowed = {"alpha"};
  else if (op == "Gelu")
    allowed = {"approximate"};
  else if (op == "Selu")
    allowed = {"alpha", "gamma"};
  else if (op == "HardSigmoid")
    allowed = {"alpha", "beta"};
  else if (op == "Shrink")
    allowed = {"bias", "lambd"};
  else if (op == "IsInf")
    allowed = {"detect_negative", "detect_positive"};
  if (failed(checkNode(ref, 1, 1, allowed)))
    return failure();
  bool isFloatOp =
      !llvm::is_contained({"Abs", "Neg", "Relu", "Not", "Sign"}, op);
  if (failed(checkInputType(ref, 0,
                            op == "Not" ? ArrayRef<DType>(kBool)
                            : isFloatOp ? ArrayRef<DType>(kFloat)
                                        : ArrayRef<DType>(kNumeric))))
    return failure();
  if (llvm::is_contained({"Abs", "Neg", "Not"}, op))
    if (const ConstTensor *value = knownInput(ref, 0)) {
      std::string error;
      FailureOr<ConstTensor> folded = foldUnary(op, *value, error);
      if (failed(folded))
        return emitError(ref) << error;
      return setKnownOutput(ref, 0, std::move(*folded), loc);
    }

  Value x = input(ref, 0);
  FailureOr<Value> result = failure();
  if (op == "LeakyRelu") {
    FailureOr<float> alpha = floatAttr(ref, "alpha", 0.01f);
    if (failed(alpha))
      return failure();
    LeakyReluOp::Properties props;
    props.setAlpha(builder.getF32FloatAttr(*alpha));
    result = createOp<LeakyReluOp>(ref, loc, x, props);
  } else if (op == "Gelu") {
    FailureOr<std::string> approximate = stringAttr(ref, "approximate", "none");
    if (failed(approximate))
      return failure();
    if (*approximate != "none" && *approximate != "tanh")
      return emitError(ref) << "attribute 'approximate' must be 'none' or "
                               "'tanh', got '"
                            << *approximate << "'";
    GeluOp::Properties props;
    props.setApproximate(builder.getStringAttr(*approximate));
    result = createOp<GeluOp>(ref, loc, x, props);
  } else if (llvm::is_contained(
                 {"Elu", "Celu", "ThresholdedRelu", "Selu", "HardSigmoid"},
                 op)) {
    FailureOr<float> alpha = floatAttr(ref, "alpha",
                                       op == "Selu" ? 1.67326319217681884765625f
                                       : op == "HardSigmoid" ? 0.2f
                                                             : 1.0f);
    if (failed(alpha))
      return failure();
    FloatAttr alphaAttr = builder.getF32FloatAttr(*alpha);
    if (op == "Elu") {
      EluOp::Properties props;
      props.setAlpha(alphaAttr);
      result = createOp<EluOp>(ref, loc, x, props);
    } else if (op == "Celu") {
      CeluOp::Properties props;
      props.setAlpha(alphaAttr);
      result = createOp<CeluOp>(ref, loc, x, props);
    } else if (op == "ThresholdedRelu") {
      ThresholdedReluOp::Properties props;
      props.setAlpha(alphaAttr);
      result = createOp<ThresholdedReluOp>(ref, loc, x, props);
    } else if (op == "Selu") {
      FailureOr<float> gamma =
          floatAttr(ref, "gamma", 1.05070102214813232421875f);
      if (failed(gamma))
        return failure();
      SeluOp::Properties props;
      props.setAlpha(alphaAttr);
      props.setGamma(builder.getF32FloatAttr(*gamma));
      result = createOp<SeluOp>(ref, loc, x, props);
    } else {
      FailureOr<float> beta = floatAttr(ref, "beta", 0.5f);
      if (failed(beta))
        return failure();
      HardSigmoidOp::Properties props;
      props.setAlpha(alphaAttr);
      props.setBeta(builder.getF32FloatAttr(*beta));
      result = createOp<HardSigmoidOp>(ref, loc, x, props);
    }
  } else if (op == "Shrink") {
    FailureOr<float> bias = floatAttr(ref, "bias", 0.0f);
    FailureOr<float> lambd = floatAttr(ref, "lambd", 0.5f);
    if (failed(bias) || failed(lambd))
      return failure();
    ShrinkOp::Properties props;
    props.setBias(builder.getF32FloatAttr(*bias));
    props.setLambd(builder.getF32FloatAttr(*lambd));
    result = createOp<ShrinkOp>(ref, loc, x, props);
  } else if (op == "IsInf") {
    FailureOr<int64_t> negative = intAttr(ref, "detect_negative", 1);
    FailureOr<int64_t> positive = intAttr(ref, "detect_positive", 1);
    if (failed(negative) || failed(positive))
      return failure();
    IsInfOp::Properties props;
    props.setDetectNegative(builder.getBoolAttr(*negative != 0));
    props.setDetectPositive(builder.getBoolAttr(*positive != 0));
    result = createOp<IsInfOp>(ref, loc, x, props);
  } else {
    using Builder = FailureOr<Value> (OnnxImporter::*)(
        const NodeRef &, Location, ValueRange, const EmptyProperties &);
    Builder create =
        llvm::StringSwitch<Builder>(op)
            .Case("Sin", &OnnxImporter::createOp<SinOp>)
            .Case("Cos", &OnnxImporter::createOp<CosOp>)
            .Case("Tan", &OnnxImporter::createOp<TanOp>)
            .Case("Asin", &OnnxImporter::createOp<AsinOp>)
            .Case("Acos", &OnnxImporter::createOp<AcosOp>)
            .Case("Atan", &OnnxImporter::createOp<AtanOp>)
            .Case("Sinh", &OnnxImporter::createOp<SinhOp>)
            .Case("Cosh", &OnnxImporter::createOp<CoshOp>)
            .Case("Asinh", &OnnxImporter::createOp<AsinhOp>)
            .Case("Acosh", &OnnxImporter::createOp<AcoshOp>)
            .Case("Atanh", &OnnxImporter::createOp<AtanhOp>)
            .Case("Floor", &OnnxImporter::createOp<FloorOp>)
            .Case("Ceil", &OnnxImporter::createOp<CeilOp>)
            .Case("Round", &OnnxImporter::createOp<RoundOp>)
            .Case("Sign", &OnnxImporter::createOp<SignOp>)
            .Case("IsNaN", &OnnxImporter::createOp<IsNaNOp>)
            .Case("HardSwish", &OnnxImporter::createOp<HardSwishOp>)
            .Case("Softplus", &OnnxImporter::createOp<SoftplusOp>)
            .Case("Softsign", &OnnxImporter::createOp<SoftsignOp>)
            .Case("Abs", &OnnxImporter::createOp<AbsOp>)
            .Case("Neg", &OnnxImporter::createOp<NegOp>)
            .Case("Sqrt", &OnnxImporter::createOp<SqrtOp>)
            .Case("Reciprocal", &OnnxImporter::createOp<ReciprocalOp>)
            .Case("Exp", &OnnxImporter::createOp<ExpOp>)
            .Case("Log", &OnnxImporter::createOp<LogOp>)
            .Case("Relu", &OnnxImporter::createOp<ReluOp>)
            .Case("Sigmoid", &OnnxImporter::createOp<SigmoidOp>)
            .Case("Tanh", &OnnxImporter::createOp<TanhOp>)
            .Case("Erf", &OnnxImporter::createOp<ErfOp>)
            .Case("Not", &OnnxImporter::createOp<NotOp>)
            .Case("GlobalAveragePool",
                  &OnnxImporter::createOp<GlobalAveragePoolOp>);
    result = (this->*create)(ref, loc, x, EmptyProperties());
  }
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

LogicalResult OnnxImporter::importBinary(const NodeRef &ref, Location loc) {
  StringRef op = ref.node->op_type();
  if (failed(checkNode(ref, 2, 2,
                       op == "Mod" ? ArrayRef<StringRef>{"fmod"}
                                   : ArrayRef<StringRef>{"broadcast"})))
    return failure();
  if (llvm::is_contained({"And", "Or", "Xor"}, op)) {
    if (failed(checkInputType(ref, 0, kBool)) ||
        failed(checkInputType(ref, 1, kBool)))
      return failure();
  } else if (failed(checkInputType(ref, 0,
                                   llvm::is_contained({"Pow", "PRelu"}, op)
                                       ? ArrayRef<DType>(kNumeric)
                                       : ArrayRef<DType>(kNumericOr8Bit)))) {
    return failure();
  }
  // Mod on floats is C's fmod: ONNX requires fmod = 1 there.
  FailureOr<int64_t> fmod = intAttr(ref, "fmod", 0);
  if (failed(fmod))
    return failure();
  if (op == "Mod" && !*fmod &&
      isa<FloatType>(inputType(ref, 0).getElementType()))
    return emitError(ref) << "attribute 'fmod' must be 1 for float operands";
  bool foldable = llvm::is_contained({"Add", "Sub", "Mul", "Div", "Mod", "Pow",
                                      "And", "Equal", "Less", "Greater"},
                                     op);
  const ConstTensor *lhs = knownInput(ref, 0), *rhs = knownInput(ref, 1);
  // 8-bit integers wrap around: computed by the lowering, not folded.
  if (foldable && lhs && rhs && (lhs->dtype == rhs->dtype || op == "Pow") &&
      !llvm::is_contained(kQuantized, lhs->dtype)) {
    std::string error;
    FailureOr<ConstTensor> folded =
        foldBinary(op, *lhs, *rhs, error, *fmod != 0);
    if (failed(folded))
      return emitError(ref) << error;
    if (folded->getNumElements() <= kMaxFoldElements)
      return setKnownOutput(ref, 0, std::move(*folded), loc);
  }
  Value a = input(ref, 0), b = input(ref, 1);
  // PRelu before opset 7 (no broadcasting): a slope of one value per channel
  // is a 1-D [C] tensor applied along axis 1, as in PyTorch's opset-6 exports.
  if (op == "PRelu" && ref.opset < 7) {
    auto xType = cast<RankedTensorType>(a.getType());
    auto slopeType = cast<RankedTensorType>(b.getType());
    if (xType.getRank() >= 3 && slopeType.getRank() == 1 &&
        slopeType.getDimSize(0) > 1 &&
        slopeType.getDimSize(0) == xType.getDimSize(1)) {
      SmallVector<int64_t> shape(xType.getRank() - 1, 1);
      shape[0] = slopeType.getDimSize(0);
      b = createReshape(loc, b, shape);
    }
  }
  using Builder = FailureOr<Value> (OnnxImporter::*)(
      const NodeRef &, Location, ValueRange, const EmptyProperties &);
  Builder create =
      llvm::StringSwitch<Builder>(op)
          .Case("Add", &OnnxImporter::createOp<AddOp>)
          .Case("Sub", &OnnxImporter::createOp<SubOp>)
          .Case("Mul", &OnnxImporter::createOp<MulOp>)
          .Case("Div", &OnnxImporter::createOp<DivOp>)
          .Case("Pow", &OnnxImporter::createOp<PowOp>)
          .Case("And", &OnnxImporter::createOp<AndOp>)
          .Case("Equal", &OnnxImporter::createOp<EqualOp>)
          .Case("Less", &OnnxImporter::createOp<LessOp>)
          .Case("Greater", &OnnxImporter::createOp<GreaterOp>)
          .Case("GreaterOrEqual", &OnnxImporter::createOp<GreaterOrEqualOp>)
          .Case("LessOrEqual", &OnnxImporter::createOp<LessOrEqualOp>)
          .Case("Or", &OnnxImporter::createOp<OrOp>)
          .Case("Xor", &OnnxImporter::createOp<XorOp>)
          .Case("PRelu", &OnnxImporter::createOp<PReluOp>)
          .Default(nullptr);
  FailureOr<Value> result = failure();
  if (op == "Mod") {
    ModOp::Properties props;
    props.setFmod(builder.getBoolAttr(*fmod != 0));
    result = createOp<ModOp>(ref, loc, {a, b}, props);
  } else {
    result = (this->*create)(ref, loc, {a, b}, {});
  }
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

/// BitShift (opset 11): a logical shift LEFT or RIGHT of uint8 tensors
/// (ONNX also has uint16/32/64, element types autopar does not carry).
LogicalResult OnnxImporter::importBitShift(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 2, 2, {"direction"})) ||
      failed(checkInputType(ref, 0, {DType::U8})) ||
      failed(checkInputType(ref, 1, {DType::U8})))
    return failure();
  if (!findAttr(ref, "direction"))
    return emitError(ref) << "attribute 'direction' is required";
  FailureOr<std::string> direction = stringAttr(ref, "direction", "");
  if (failed(direction))
    return failure();
  if (*direction != "LEFT" && *direction != "RIGHT")
    return emitError(ref) << "attribute 'direction' must be 'LEFT' or "
                             "'RIGHT', got '"
                          << *direction << "'";
  BitShiftOp::Properties props;
  props.setRight(builder.getBoolAttr(*direction == "RIGHT"));
  FailureOr<Value> result =
      createOp<BitShiftOp>(ref, loc, {input(ref, 0), input(ref, 1)}, props);
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

/// Max, Min, Sum, Mean of one or more inputs with multidirectional
/// broadcasting: a chain of binary max / min / add (Mean: the sum times
/// 1 / n).
LogicalResult OnnxImporter::importVariadic(const NodeRef &ref, Location loc) {
  StringRef op = ref.node->op_type();
  if (failed(checkNode(ref, 1, kVariadic, {})) ||
      failed(checkInputType(ref, 0,
                            op == "Mean"  ? ArrayRef<DType>(kFloat)
                            : op == "Sum" ? ArrayRef<DType>(kNumeric)
                                          : ArrayRef<DType>(kNumericOr8Bit))))
    return failure();
  Value acc = input(ref, 0);
  for (int i = 1, e = ref.node->input_size(); i < e; ++i) {
    Value next = input(ref, i);
    FailureOr<Value> combined =
        op == "Max"   ? createOp<MaxOp>(ref, loc, {acc, next})
        : op == "Min" ? createOp<MinOp>(ref, loc, {acc, next})
                      : createOp<AddOp>(ref, loc, {acc, next});
    if (failed(combined))
      return failure();
    acc = *combined;
  }
  if (op == "Mean" && ref.node->input_size() > 1) {
    Value scale = createScalarConstant(
        loc, cast<RankedTensorType>(acc.getType()).getElementType(),
        1.0 / static_cast<double>(ref.node->input_size()));
    FailureOr<Value> mean = createOp<MulOp>(ref, loc, {acc, scale});
    if (failed(mean))
      return failure();
    acc = *mean;
  }
  return setOutput(ref, 0, acc);
}

LogicalResult OnnxImporter::importClip(const NodeRef &ref, Location loc) {
  bool asInputs = ref.opset >= 11;
  if (failed(asInputs ? checkNode(ref, 1, 3, {})
                      : checkNode(ref, 1, 1, {"min", "max"})) ||
      failed(checkInputType(ref, 0, kNumericOr8Bit)))
    return failure();
  ClipOp::Properties props;
  Value runtimeBounds[2];
  if (asInputs) {
    for (unsigned i = 1; i <= 2; ++i) {
      if (!hasInput(ref, i))
        continue;
      const ConstTensor *bound = knownInput(ref, i);
      if (!bound) {
        // A bound computed at run time: max(x, min) / min(x, max) with the
        // scalar broadcast (the result's shape does not depend on it).
        RankedTensorType boundType = inputType(ref, i);
        if (boundType.getNumElements() != 1)
          return emitError(ref)
                 << "input " << i << " ('" << (i == 1 ? "min" : "max")
                 << "') must be a scalar, got shape "
                 << formatShape(boundType.getShape());
        runtimeBounds[i - 1] = input(ref, i);
        continue;
      }
      if (bound->getNumElements() != 1)
        return emitError(ref)
               << "input " << i << " ('" << (i == 1 ? "min" : "max")
               << "') must be a scalar, got shape "
               << formatShape(bound->shape);
      FloatAttr attr = builder.getF64FloatAttr(bound->getDouble(0));
      if (i == 1)
        props.setMin(attr);
      else
        props.setMax(attr);
    }
  } else {
    if (findAttr(ref, "min")) {
      FailureOr<float> min = floatAttr(ref, "min", 0);
      if (failed(min))
        return failure();
      props.setMin(builder.getF64FloatAttr(*min));
    }
    if (findAttr(ref, "max")) {
      FailureOr<float> max = floatAttr(ref, "max", 0);
      if (failed(max))
        return failure();
      props.setMax(builder.getF64FloatAttr(*max));
    }
  }
  FailureOr<Value> result = input(ref, 0);
  if (props.getMin() || props.getMax() ||
      (!runtimeBounds[0] && !runtimeBounds[1]))
    result = createOp<ClipOp>(ref, loc, input(ref, 0), props);
  if (succeeded(result) && runtimeBounds[0])
    result = createOp<MaxOp>(ref, loc, {*result, runtimeBounds[0]});
  if (succeeded(result) && runtimeBounds[1])
    result = createOp<MinOp>(ref, loc, {*result, runtimeBounds[1]});
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

LogicalResult OnnxImporter::importCast(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 1, 1, {"to", "saturate"})))
    return failure();
  FailureOr<int64_t> to = intAttr(ref, "to", -1);
  if (failed(to))
    return failure();
  if (!findAttr(ref, "to"))
    return emitError(ref) << "attribute 'to' is required";
  std::optional<DType> dtype = getDTypeFromOnnx(*to);
  if (!dtype ||
      (!isSupportedNodeType(*dtype) && !llvm::is_contained(kQuantized, *dtype)))
    return emitError(ref) << "unsupported element type "
                          << getOnnxDataTypeName(*to)
                          << " of attribute 'to'; supported: float32, int64, "
                             "int32, bool, int8, uint8";
  if (const ConstTensor *value = knownInput(ref, 0))
    return setKnownOutput(ref, 0, foldCast(*value, *dtype), loc);
  Value x = input(ref, 0);
  auto type = cast<RankedTensorType>(x.getType());
  Value result = CastOp::create(
      builder, loc, type.clone(getDTypeElementType(&ctx, *dtype)), x);
  return setOutput(ref, 0, result);
}

LogicalResult OnnxImporter::importWhere(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 3, 3, {})) || failed(checkInputType(ref, 0, kBool)))
    return failure();
  const ConstTensor *cond = knownInput(ref, 0), *x = knownInput(ref, 1),
                    *y = knownInput(ref, 2);
  if (cond && x && y && x->dtype == y->dtype) {
    std::string error;
    FailureOr<ConstTensor> folded = foldWhere(*cond, *x, *y, error);
    if (failed(folded))
      return emitError(ref) << error;
    if (folded->getNumElements() <= kMaxFoldElements)
      return setKnownOutput(ref, 0, std::move(*folded), loc);
  }
  FailureOr<Value> result = createOp<WhereOp>(
      ref, loc, {input(ref, 0), input(ref, 1), input(ref, 2)});
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}
