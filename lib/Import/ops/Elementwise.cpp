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
  registry.add("Clip", 1, &OnnxImporter::importClip);
  registry.add("Cast", 1, &OnnxImporter::importCast);
  registry.add("Where", 1, &OnnxImporter::importWhere);
}

LogicalResult OnnxImporter::importUnary(const NodeRef &ref, Location loc) {
  StringRef op = ref.node->op_type();
  SmallVector<StringRef> allowed;
  if (op == "LeakyRelu")
    allowed = {"alpha"};
  else if (op == "Gelu")
    allowed = {"approximate"};
  if (failed(checkNode(ref, 1, 1, allowed)))
    return failure();
  bool isFloatOp = !llvm::is_contained({"Abs", "Neg", "Relu", "Not"}, op);
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
  } else {
    using Builder = FailureOr<Value> (OnnxImporter::*)(
        const NodeRef &, Location, ValueRange, const EmptyProperties &);
    Builder create =
        llvm::StringSwitch<Builder>(op)
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
  if (failed(checkNode(ref, 2, 2, {"broadcast"})))
    return failure();
  if (op == "And") {
    if (failed(checkInputType(ref, 0, kBool)) ||
        failed(checkInputType(ref, 1, kBool)))
      return failure();
  } else if (failed(checkInputType(ref, 0, kNumeric))) {
    return failure();
  }
  const ConstTensor *lhs = knownInput(ref, 0), *rhs = knownInput(ref, 1);
  if (lhs && rhs && (lhs->dtype == rhs->dtype || op == "Pow")) {
    std::string error;
    FailureOr<ConstTensor> folded = foldBinary(op, *lhs, *rhs, error);
    if (failed(folded))
      return emitError(ref) << error;
    if (folded->getNumElements() <= kMaxFoldElements)
      return setKnownOutput(ref, 0, std::move(*folded), loc);
  }
  Value a = input(ref, 0), b = input(ref, 1);
  using Builder = FailureOr<Value> (OnnxImporter::*)(
      const NodeRef &, Location, ValueRange, const EmptyProperties &);
  Builder create = llvm::StringSwitch<Builder>(op)
                       .Case("Add", &OnnxImporter::createOp<AddOp>)
                       .Case("Sub", &OnnxImporter::createOp<SubOp>)
                       .Case("Mul", &OnnxImporter::createOp<MulOp>)
                       .Case("Div", &OnnxImporter::createOp<DivOp>)
                       .Case("Pow", &OnnxImporter::createOp<PowOp>)
                       .Case("And", &OnnxImporter::createOp<AndOp>)
                       .Case("Equal", &OnnxImporter::createOp<EqualOp>)
                       .Case("Less", &OnnxImporter::createOp<LessOp>)
                       .Case("Greater", &OnnxImporter::createOp<GreaterOp>);
  FailureOr<Value> result = (this->*create)(ref, loc, {a, b}, {});
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

LogicalResult OnnxImporter::importClip(const NodeRef &ref, Location loc) {
  bool asInputs = ref.opset >= 11;
  if (failed(asInputs ? checkNode(ref, 1, 3, {})
                      : checkNode(ref, 1, 1, {"min", "max"})) ||
      failed(checkInputType(ref, 0, kNumeric)))
    return failure();
  ClipOp::Properties props;
  if (asInputs) {
    for (unsigned i = 1; i <= 2; ++i) {
      if (!hasInput(ref, i))
        continue;
      FailureOr<const ConstTensor *> bound =
          requireKnown(ref, i, i == 1 ? "min" : "max");
      if (failed(bound))
        return failure();
      if ((*bound)->getNumElements() != 1)
        return emitError(ref)
               << "input " << i << " ('" << (i == 1 ? "min" : "max")
               << "') must be a scalar, got shape "
               << formatShape((*bound)->shape);
      FloatAttr attr = builder.getF64FloatAttr((*bound)->getDouble(0));
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
  FailureOr<Value> result = createOp<ClipOp>(ref, loc, input(ref, 0), props);
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
  if (!dtype || !isSupportedNodeType(*dtype))
    return emitError(ref) << "unsupported element type "
                          << getOnnxDataTypeName(*to)
                          << " of attribute 'to'; supported: float32, int64, "
                             "int32, bool";
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
