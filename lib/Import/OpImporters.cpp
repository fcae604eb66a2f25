//===- OpImporters.cpp - ONNX operators to autopar ops --------------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// One importer per ONNX operator family. Each checks the node's inputs,
// outputs and attributes for its opset, resolves what ONNX leaves to run time
// but autopar needs at compile time (shapes, axes, pads, split sizes, bounds)
// and builds the autopar op, whose result type is inferred and cross-checked
// against the type ONNX declares or infers. When every input of a
// shape-computing operator is known, the operator is evaluated on the host
// instead (ShapeFolding.h) and its result stays a known value, materialized
// as `autopar.constant` only where a runtime op reads it.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::importer;

using NodeRef = OnnxImporter::NodeRef;

static std::string dtypeName(DType dtype) {
  return getOnnxDataTypeName(getOnnxDataType(dtype)) + " (" +
         getDTypeName(dtype).str() + ")";
}

static int64_t product(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

//===----------------------------------------------------------------------===//
// Node checks, attributes and known operands
//===----------------------------------------------------------------------===//

LogicalResult OnnxImporter::checkNode(const NodeRef &ref, unsigned min,
                                      unsigned max,
                                      ArrayRef<StringRef> allowed,
                                      unsigned maxOutputs) {
  const onnx::NodeProto &node = *ref.node;
  bool variadic = max == kVariadic;
  unsigned count = node.input_size();
  // Trailing absent optional inputs do not count.
  while (!variadic && count > min && node.input(count - 1).empty())
    --count;
  if (count < min || count > max)
    return emitError(ref) << "expected " << min
                          << (variadic     ? " or more"
                              : min == max ? ""
                                           : " to " + std::to_string(max))
                          << " inputs, got " << count;
  for (unsigned i = 0, e = variadic ? count : min; i < e; ++i)
    if (node.input(i).empty())
      return emitError(ref) << "input " << i << " has an empty name, but it "
                            << (variadic ? "is one of the variadic inputs, "
                                           "which are not optional"
                                         : "is required");
  if (node.output_size() < 1 || node.output(0).empty())
    return emitError(ref) << "output 0 is missing";
  for (int i = maxOutputs; i < node.output_size(); ++i)
    if (!node.output(i).empty())
      return emitError(ref) << "expected at most " << maxOutputs
                            << " outputs, got " << node.output_size();
  for (const onnx::AttributeProto &attr : node.attribute())
    if (!llvm::is_contained(allowed, attr.name()))
      return emitError(ref) << "unsupported attribute '" << attr.name() << "'";
  return success();
}

bool OnnxImporter::isOutputUsed(const NodeRef &ref, unsigned index) const {
  const onnx::NodeProto &node = *ref.node;
  return (int)index < node.output_size() && !node.output(index).empty() &&
         usedNames.contains(node.output(index));
}

LogicalResult OnnxImporter::checkOutputUnused(const NodeRef &ref,
                                              unsigned index, StringRef what) {
  const onnx::NodeProto &node = *ref.node;
  if (isOutputUsed(ref, index))
    return emitError(ref) << "output " << index << " (" << what << ", '"
                          << node.output(index)
                          << "') is used; only output 0 is supported";
  return success();
}

/// Element types that tensors read by nodes may have.
static bool isSupportedNodeType(DType dtype) {
  return dtype == DType::F32 || dtype == DType::I64 || dtype == DType::I32 ||
         dtype == DType::Bool;
}

LogicalResult OnnxImporter::checkElementTypes(const NodeRef &ref) {
  for (int i = 0; i < ref.node->input_size(); ++i) {
    RankedTensorType type = inputType(ref, i);
    if (!type)
      continue;
    FailureOr<DType> dtype = getDTypeFromElementType(type.getElementType());
    if (failed(dtype) || !isSupportedNodeType(*dtype))
      return emitError(ref) << "unsupported element type "
                            << (succeeded(dtype)
                                    ? dtypeName(*dtype)
                                    : typeToString(type.getElementType()))
                            << " of input " << i << " ('"
                            << ref.node->input(i)
                            << "'); supported: float32, int64, int32, bool";
  }
  return success();
}

LogicalResult OnnxImporter::checkInputType(const NodeRef &ref, unsigned index,
                                           ArrayRef<DType> allowed) {
  RankedTensorType type = inputType(ref, index);
  if (!type)
    return success();
  FailureOr<DType> dtype = getDTypeFromElementType(type.getElementType());
  if (succeeded(dtype) && llvm::is_contained(allowed, *dtype))
    return success();
  InFlightDiagnostic diag = emitError(ref);
  diag << "unsupported element type "
       << (succeeded(dtype) ? dtypeName(*dtype)
                            : typeToString(type.getElementType()))
       << " of input " << index << " ('" << ref.node->input(index)
       << "'); expected ";
  llvm::interleave(
      allowed, diag, [&](DType d) { diag << getDTypeName(d); }, " or ");
  return diag;
}

bool OnnxImporter::allInputsKnown(const NodeRef &ref) {
  for (int i = 0; i < ref.node->input_size(); ++i)
    if (hasInput(ref, i) && !getKnown(ref.node->input(i)))
      return false;
  return true;
}

FailureOr<const ConstTensor *>
OnnxImporter::requireKnown(const NodeRef &ref, unsigned index, StringRef what) {
  if (const ConstTensor *value = knownInput(ref, index))
    return value;
  return emitError(ref) << "input " << index << " ('" << what << "', tensor '"
                        << ref.node->input(index)
                        << "') must be a compile-time constant (an "
                           "initializer, a Constant or a shape computation "
                           "on static shapes)";
}

FailureOr<SmallVector<int64_t>>
OnnxImporter::requireKnownInts(const NodeRef &ref, unsigned index,
                               StringRef what) {
  FailureOr<const ConstTensor *> value = requireKnown(ref, index, what);
  if (failed(value))
    return failure();
  if ((*value)->isFloat() || (*value)->shape.size() > 1)
    return emitError(ref) << "input " << index << " ('" << what
                          << "') must be an integer scalar or vector, got "
                          << typeToString(getConstTensorType(&ctx, **value));
  return SmallVector<int64_t>((*value)->ints);
}

const onnx::AttributeProto *OnnxImporter::findAttr(const NodeRef &ref,
                                                   StringRef name) {
  for (const onnx::AttributeProto &attr : ref.node->attribute())
    if (attr.name() == name)
      return &attr;
  return nullptr;
}

FailureOr<int64_t> OnnxImporter::intAttr(const NodeRef &ref, StringRef name,
                                         int64_t defaultValue) {
  const onnx::AttributeProto *attr = findAttr(ref, name);
  if (!attr)
    return defaultValue;
  if (attr->type() != onnx::AttributeProto::INT)
    return emitError(ref) << "attribute '" << name << "' must be an int";
  return attr->i();
}

FailureOr<float> OnnxImporter::floatAttr(const NodeRef &ref, StringRef name,
                                         float defaultValue) {
  const onnx::AttributeProto *attr = findAttr(ref, name);
  if (!attr)
    return defaultValue;
  if (attr->type() != onnx::AttributeProto::FLOAT)
    return emitError(ref) << "attribute '" << name << "' must be a float";
  return attr->f();
}

FailureOr<std::string> OnnxImporter::stringAttr(const NodeRef &ref,
                                                StringRef name,
                                                StringRef defaultValue) {
  const onnx::AttributeProto *attr = findAttr(ref, name);
  if (!attr)
    return defaultValue.str();
  if (attr->type() != onnx::AttributeProto::STRING)
    return emitError(ref) << "attribute '" << name << "' must be a string";
  return attr->s();
}

FailureOr<SmallVector<int64_t>>
OnnxImporter::intsAttr(const NodeRef &ref, StringRef name,
                       ArrayRef<int64_t> defaultValue) {
  const onnx::AttributeProto *attr = findAttr(ref, name);
  if (!attr)
    return SmallVector<int64_t>(defaultValue);
  if (attr->type() != onnx::AttributeProto::INTS)
    return emitError(ref) << "attribute '" << name << "' must be a list of ints";
  return SmallVector<int64_t>(attr->ints().begin(), attr->ints().end());
}

FailureOr<int64_t> OnnxImporter::normalizeAxis(const NodeRef &ref,
                                               int64_t axis, int64_t rank) {
  // Every operator with an axis attribute (Softmax, LayerNormalization,
  // Concat, Split, Gather) needs rank >= 1: [-rank, rank) is empty otherwise.
  if (axis < -rank || axis >= rank)
    return emitError(ref) << "axis " << axis << " is out of range for rank "
                          << rank;
  return axis < 0 ? axis + rank : axis;
}

FailureOr<SmallVector<int64_t>>
OnnxImporter::normalizeAxes(const NodeRef &ref, ArrayRef<int64_t> axes,
                            int64_t rank) {
  SmallVector<int64_t> result;
  for (int64_t axis : axes) {
    if (axis < -rank || axis >= rank)
      return emitError(ref) << "axis " << axis << " is out of range for rank "
                            << rank;
    int64_t normalized = axis < 0 ? axis + rank : axis;
    if (llvm::is_contained(result, normalized))
      return emitError(ref) << "axis " << axis << " is repeated";
    result.push_back(normalized);
  }
  llvm::sort(result);
  return result;
}

LogicalResult OnnxImporter::setOutput(const NodeRef &ref, unsigned index,
                                      Value value) {
  const std::string &name = ref.node->output(index);
  values[name] = value;
  return checkAgainstOnnxType(value.getType(), name, &ref);
}

LogicalResult OnnxImporter::setKnownOutput(const NodeRef &ref, unsigned index,
                                           ConstTensor value, Location loc) {
  const std::string &name = ref.node->output(index);
  Type type = getConstTensorType(&ctx, value);
  known.try_emplace(name, std::move(value), loc);
  return checkAgainstOnnxType(type, name, &ref);
}

template <typename OpTy>
FailureOr<Value>
OnnxImporter::createOp(const NodeRef &ref, Location loc, ValueRange operands,
                       const typename OpTy::Properties &properties) {
  assert(llvm::all_of(operands, [](Value v) { return bool(v); }) &&
         "absent inputs are rejected by checkNode or read via hasInput");
  // Infer first: the inferring builders abort on failure. Capture the op's
  // message and report it with the node.
  SmallVector<Type> types;
  std::string message;
  LogicalResult inferred = failure();
  {
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
      if (message.empty())
        message = diag.str();
      return success();
    });
    auto props = properties;
    inferred =
        OpTy::inferReturnTypes(&ctx, loc, operands, DictionaryAttr(),
                               OpaqueProperties(&props), RegionRange(), types);
  }
  if (failed(inferred)) {
    InFlightDiagnostic diag = emitError(ref);
    diag << (message.empty() ? "invalid operands" : message) << " (operands:";
    for (Value operand : operands)
      diag << " " << typeToString(operand.getType());
    return diag << ")";
  }
  auto op = OpTy::create(builder, loc, types, operands, properties);
  return op->getResult(0);
}

Value OnnxImporter::createReshape(Location loc, Value value,
                                  ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getShape() == shape)
    return value;
  return ReshapeOp::create(builder, loc, type.clone(shape), value);
}

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

LogicalResult OnnxImporter::importNode(const NodeRef &ref) {
  const onnx::NodeProto &node = *ref.node;
  for (const std::string &name : node.input())
    if (!name.empty() && !values.count(name) && !known.count(name))
      return emitError(ref) << "input '" << name
                            << "' is not defined by an earlier node, a graph "
                               "input or an initializer";
  for (const std::string &name : node.output())
    if (!name.empty() && (values.count(name) || known.count(name)))
      return emitError(ref) << "tensor '" << name << "' is defined twice";
  if (failed(checkElementTypes(ref)))
    return failure();
  std::vector<std::string> outputNames(node.output().begin(),
                                       node.output().end());
  Location loc = getOnnxNodeLoc(&ctx, ref.name, outputNames);
  return dispatch(ref, loc);
}

LogicalResult OnnxImporter::dispatch(const NodeRef &ref, Location loc) {
  StringRef op = ref.node->op_type();
  if (op == "Identity") {
    if (failed(checkNode(ref, 1, 1, {})))
      return failure();
    if (const ConstTensor *value = knownInput(ref, 0))
      return setKnownOutput(ref, 0, *value, loc);
    return setOutput(ref, 0, input(ref, 0));
  }
  if (op == "Constant") {
    if (failed(checkNode(ref, 0, 0, {"value", "value_float", "value_floats",
                                     "value_int", "value_ints", "sparse_value",
                                     "value_string", "value_strings"})))
      return failure();
    return importConstant(ref, loc);
  }
  if (op == "MatMul") {
    if (failed(checkNode(ref, 2, 2, {})))
      return failure();
    FailureOr<Value> result =
        createOp<MatMulOp>(ref, loc, {input(ref, 0), input(ref, 1)});
    return failed(result) ? failure() : setOutput(ref, 0, *result);
  }
  if (op == "Gemm")
    return importGemm(ref, loc);
  if (llvm::is_contained({"Abs", "Neg", "Sqrt", "Reciprocal", "Exp", "Log",
                          "Relu", "Sigmoid", "Tanh", "Erf", "Not", "LeakyRelu",
                          "Gelu", "GlobalAveragePool"},
                         op))
    return importUnary(ref, loc);
  if (llvm::is_contained({"Add", "Sub", "Mul", "Div", "Pow", "And", "Equal",
                          "Less", "Greater"},
                         op))
    return importBinary(ref, loc);
  if (op == "Clip")
    return importClip(ref, loc);
  if (op == "Cast")
    return importCast(ref, loc);
  if (op == "Where")
    return importWhere(ref, loc);
  if (op == "Softmax" || op == "LogSoftmax")
    return importSoftmax(ref, loc);
  if (op == "LayerNormalization")
    return importLayerNorm(ref, loc);
  if (op == "BatchNormalization")
    return importBatchNorm(ref, loc);
  if (op == "Conv")
    return importConv(ref, loc);
  if (op == "MaxPool" || op == "AveragePool")
    return importPool(ref, loc);
  if (op == "ReduceSum" || op == "ReduceMean" || op == "ReduceMax")
    return importReduce(ref, loc);
  if (op == "Transpose")
    return importTranspose(ref, loc);
  if (op == "Reshape")
    return importReshape(ref, loc);
  if (op == "Flatten")
    return importFlatten(ref, loc);
  if (op == "Squeeze")
    return importSqueeze(ref, loc);
  if (op == "Unsqueeze")
    return importUnsqueeze(ref, loc);
  if (op == "Concat")
    return importConcat(ref, loc);
  if (op == "Split")
    return importSplit(ref, loc);
  if (op == "Slice")
    return importSlice(ref, loc);
  if (op == "Gather")
    return importGather(ref, loc);
  if (op == "Expand")
    return importExpand(ref, loc);
  if (op == "Dropout")
    return importDropout(ref, loc);
  if (op == "ConstantOfShape")
    return importConstantOfShape(ref, loc);
  if (op == "Shape")
    return importShape(ref, loc);
  if (op == "Range")
    return importRange(ref, loc);
  if (op == "Einsum")
    return importEinsum(ref, loc);
  llvm_unreachable("unsupported operators are rejected before import");
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

static const DType kFloat[] = {DType::F32};
static const DType kBool[] = {DType::Bool};
static const DType kNumeric[] = {DType::F32, DType::I64, DType::I32};
static const DType kIndices[] = {DType::I64, DType::I32};

LogicalResult OnnxImporter::importUnary(const NodeRef &ref, Location loc) {
  StringRef op = ref.node->op_type();
  if (op == "Gelu" && ref.opset < 20)
    return emitError(ref) << "Gelu is defined from opset 20";
  SmallVector<StringRef> allowed;
  if (op == "LeakyRelu")
    allowed = {"alpha"};
  else if (op == "Gelu")
    allowed = {"approximate"};
  if (failed(checkNode(ref, 1, 1, allowed)))
    return failure();
  bool isFloatOp = !llvm::is_contained({"Abs", "Neg", "Relu", "Not"}, op);
  if (failed(checkInputType(ref, 0,
                            op == "Not"     ? ArrayRef<DType>(kBool)
                            : isFloatOp     ? ArrayRef<DType>(kFloat)
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
        const NodeRef &, Location, ValueRange,
        const EmptyProperties &);
    Builder create = llvm::StringSwitch<Builder>(op)
                         .Case("Abs", &OnnxImporter::createOp<AbsOp>)
                         .Case("Neg", &OnnxImporter::createOp<NegOp>)
                         .Case("Sqrt", &OnnxImporter::createOp<SqrtOp>)
                         .Case("Reciprocal",
                               &OnnxImporter::createOp<ReciprocalOp>)
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
        return emitError(ref) << "input " << i << " ('"
                              << (i == 1 ? "min" : "max")
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

//===----------------------------------------------------------------------===//
// Normalizations and matrix products
//===----------------------------------------------------------------------===//

LogicalResult OnnxImporter::importSoftmax(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 1, 1, {"axis"})) ||
      failed(checkInputType(ref, 0, kFloat)))
    return failure();
  bool legacy = ref.opset < 13;
  FailureOr<int64_t> axisAttr = intAttr(ref, "axis", legacy ? 1 : -1);
  if (failed(axisAttr))
    return failure();
  Value x = input(ref, 0);
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  FailureOr<int64_t> axis = normalizeAxis(ref, *axisAttr, rank);
  if (failed(axis))
    return failure();
  bool log = ref.node->op_type() == "LogSoftmax";
  auto build = [&](Value operand, int64_t a) -> FailureOr<Value> {
    if (log) {
      LogSoftmaxOp::Properties props;
      props.setAxis(builder.getI64IntegerAttr(a));
      return createOp<LogSoftmaxOp>(ref, loc, operand, props);
    }
    SoftmaxOp::Properties props;
    props.setAxis(builder.getI64IntegerAttr(a));
    return createOp<SoftmaxOp>(ref, loc, operand, props);
  };
  if (!legacy || *axis == rank - 1) {
    FailureOr<Value> result = build(x, *axis);
    return failed(result) ? failure() : setOutput(ref, 0, *result);
  }
  // Before opset 13 the input is coerced to 2-D at `axis` and normalized
  // over the second dimension.
  ArrayRef<int64_t> shape = type.getShape();
  SmallVector<int64_t> flat = {product(shape.take_front(*axis)),
                               product(shape.drop_front(*axis))};
  FailureOr<Value> result = build(createReshape(loc, x, flat), 1);
  if (failed(result))
    return failure();
  return setOutput(ref, 0, createReshape(loc, *result, shape));
}

LogicalResult OnnxImporter::importLayerNorm(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 2, 3, {"axis", "epsilon", "stash_type"}, 3)) ||
      failed(checkInputType(ref, 0, kFloat)))
    return failure();
  FailureOr<int64_t> axisAttr = intAttr(ref, "axis", -1);
  FailureOr<float> epsilon = floatAttr(ref, "epsilon", 1e-5f);
  FailureOr<int64_t> stash = intAttr(ref, "stash_type", 1);
  if (failed(axisAttr) || failed(epsilon) || failed(stash))
    return failure();
  Value x = input(ref, 0);
  FailureOr<int64_t> axis =
      normalizeAxis(ref, *axisAttr, cast<RankedTensorType>(x.getType()).getRank());
  if (failed(axis))
    return failure();
  LayerNormOp::Properties props;
  props.setAxis(builder.getI64IntegerAttr(*axis));
  props.setEpsilon(builder.getF32FloatAttr(*epsilon));
  SmallVector<Value> operands = {x, input(ref, 1)};
  if (hasInput(ref, 2))
    operands.push_back(input(ref, 2));
  FailureOr<Value> result = createOp<LayerNormOp>(ref, loc, operands, props);
  if (failed(result) || failed(setOutput(ref, 0, *result)))
    return failure();
  if (isOutputUsed(ref, 1) || isOutputUsed(ref, 2))
    return importLayerNormStatistics(ref, loc, x, *axis, *epsilon);
  return success();
}

LogicalResult OnnxImporter::importLayerNormStatistics(const NodeRef &ref,
                                                      Location loc, Value x,
                                                      int64_t axis,
                                                      float epsilon) {
  // Mean = mean(X), InvStdDev = 1 / sqrt(mean((X - Mean)^2) + epsilon), both
  // reduced over axes axis..rank-1 with the reduced dimensions kept.
  auto type = cast<RankedTensorType>(x.getType());
  ReduceMeanOp::Properties reduce;
  reduce.setAxes(builder.getDenseI64ArrayAttr(
      llvm::to_vector(llvm::seq<int64_t>(axis, type.getRank()))));
  reduce.setKeepdims(builder.getBoolAttr(true));
  FailureOr<Value> mean = createOp<ReduceMeanOp>(ref, loc, x, reduce);
  if (failed(mean))
    return failure();
  FailureOr<Value> deviation = createOp<SubOp>(ref, loc, {x, *mean});
  if (failed(deviation))
    return failure();
  FailureOr<Value> squared =
      createOp<MulOp>(ref, loc, {*deviation, *deviation});
  if (failed(squared))
    return failure();
  FailureOr<Value> variance =
      createOp<ReduceMeanOp>(ref, loc, *squared, reduce);
  if (failed(variance))
    return failure();
  auto scalarType = RankedTensorType::get({}, type.getElementType());
  Value eps = ConstantOp::create(
      builder, loc, scalarType,
      cast<ElementsAttr>(
          DenseElementsAttr::get(scalarType, ArrayRef<float>(epsilon))));
  FailureOr<Value> shifted = createOp<AddOp>(ref, loc, {*variance, eps});
  if (failed(shifted))
    return failure();
  FailureOr<Value> stdDev = createOp<SqrtOp>(ref, loc, *shifted);
  if (failed(stdDev))
    return failure();
  FailureOr<Value> invStdDev = createOp<ReciprocalOp>(ref, loc, *stdDev);
  if (failed(invStdDev))
    return failure();
  if (isOutputUsed(ref, 1) && failed(setOutput(ref, 1, *mean)))
    return failure();
  if (isOutputUsed(ref, 2) && failed(setOutput(ref, 2, *invStdDev)))
    return failure();
  return success();
}

LogicalResult OnnxImporter::importBatchNorm(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 5, 5,
                       {"epsilon", "momentum", "training_mode", "spatial",
                        "is_test"})) ||
      failed(checkInputType(ref, 0, kFloat)))
    return failure();
  FailureOr<int64_t> training = intAttr(ref, "training_mode", 0);
  FailureOr<float> epsilon = floatAttr(ref, "epsilon", 1e-5f);
  FailureOr<int64_t> spatial = intAttr(ref, "spatial", 1);
  if (failed(training) || failed(epsilon) || failed(spatial))
    return failure();
  if (*training != 0)
    return emitError(ref) << "training_mode = " << *training
                          << " is unsupported; only inference (0) is";
  if (*spatial != 1)
    return emitError(ref) << "spatial = " << *spatial
                          << " is unsupported; only 1 is";
  BatchNormOp::Properties props;
  props.setEpsilon(builder.getF32FloatAttr(*epsilon));
  FailureOr<Value> result = createOp<BatchNormOp>(
      ref, loc,
      {input(ref, 0), input(ref, 1), input(ref, 2), input(ref, 3),
       input(ref, 4)},
      props);
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

LogicalResult OnnxImporter::importGemm(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 2, 3,
                       {"alpha", "beta", "transA", "transB", "broadcast"})))
    return failure();
  FailureOr<float> alpha = floatAttr(ref, "alpha", 1.0f);
  FailureOr<float> beta = floatAttr(ref, "beta", 1.0f);
  FailureOr<int64_t> transA = intAttr(ref, "transA", 0);
  FailureOr<int64_t> transB = intAttr(ref, "transB", 0);
  if (failed(alpha) || failed(beta) || failed(transA) || failed(transB))
    return failure();
  GemmOp::Properties props;
  props.setAlpha(builder.getF32FloatAttr(*alpha));
  props.setBeta(builder.getF32FloatAttr(*beta));
  props.setTransA(builder.getBoolAttr(*transA != 0));
  props.setTransB(builder.getBoolAttr(*transB != 0));
  SmallVector<Value> operands = {input(ref, 0), input(ref, 1)};
  if (hasInput(ref, 2))
    operands.push_back(input(ref, 2));
  FailureOr<Value> result = createOp<GemmOp>(ref, loc, operands, props);
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

/// Explicit pads of a sliding window over `inputShape` (spatial sizes) for
/// ONNX `autoPad`; `pads` holds the NOTSET pads (begin..., end...).
static FailureOr<SmallVector<int64_t>>
resolvePads(StringRef autoPad, ArrayRef<int64_t> inputShape,
            ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
            ArrayRef<int64_t> dilations, ArrayRef<int64_t> pads) {
  size_t n = inputShape.size();
  if (autoPad == "NOTSET")
    return SmallVector<int64_t>(pads);
  SmallVector<int64_t> result(2 * n, 0);
  if (autoPad == "VALID")
    return result;
  if (autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER")
    return failure();
  for (size_t i = 0; i < n; ++i) {
    int64_t out = (inputShape[i] + strides[i] - 1) / strides[i];
    int64_t span = (kernel[i] - 1) * dilations[i] + 1;
    int64_t total =
        std::max<int64_t>(0, (out - 1) * strides[i] + span - inputShape[i]);
    int64_t small = total / 2, large = total - small;
    result[i] = autoPad == "SAME_UPPER" ? small : large;
    result[n + i] = autoPad == "SAME_UPPER" ? large : small;
  }
  return result;
}

LogicalResult OnnxImporter::importConv(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 2, 3,
                       {"auto_pad", "dilations", "group", "kernel_shape",
                        "pads", "strides"})) ||
      failed(checkInputType(ref, 0, kFloat)))
    return failure();
  Value x = input(ref, 0), w = input(ref, 1);
  auto xType = cast<RankedTensorType>(x.getType());
  auto wType = cast<RankedTensorType>(w.getType());
  if (xType.getRank() < 3 || wType.getRank() != xType.getRank())
    return emitError(ref) << "expected input and weight of the same rank >= 3, "
                             "got "
                          << typeToString(xType) << " and "
                          << typeToString(wType);
  size_t n = xType.getRank() - 2;
  SmallVector<int64_t> ones(n, 1), zeros(2 * n, 0);
  ArrayRef<int64_t> kernel = wType.getShape().drop_front(2);
  FailureOr<SmallVector<int64_t>> kernelAttr =
      intsAttr(ref, "kernel_shape", kernel);
  FailureOr<SmallVector<int64_t>> strides = intsAttr(ref, "strides", ones);
  FailureOr<SmallVector<int64_t>> dilations = intsAttr(ref, "dilations", ones);
  FailureOr<SmallVector<int64_t>> pads = intsAttr(ref, "pads", zeros);
  FailureOr<int64_t> group = intAttr(ref, "group", 1);
  FailureOr<std::string> autoPad = stringAttr(ref, "auto_pad", "NOTSET");
  if (failed(kernelAttr) || failed(strides) || failed(dilations) ||
      failed(pads) || failed(group) || failed(autoPad))
    return failure();
  if (ArrayRef<int64_t>(*kernelAttr) != kernel)
    return emitError(ref) << "kernel_shape " << formatShape(*kernelAttr)
                          << " does not match the weight's "
                          << formatShape(kernel);
  if (strides->size() != n || dilations->size() != n || pads->size() != 2 * n)
    return emitError(ref) << "expected " << n << " strides and dilations and "
                          << 2 * n << " pads, got " << strides->size() << ", "
                          << dilations->size() << " and " << pads->size();
  FailureOr<SmallVector<int64_t>> explicitPads =
      resolvePads(*autoPad, xType.getShape().drop_front(2), kernel, *strides,
                  *dilations, *pads);
  if (failed(explicitPads))
    return emitError(ref) << "unsupported auto_pad '" << *autoPad << "'";
  ConvOp::Properties props;
  props.setStrides(builder.getDenseI64ArrayAttr(*strides));
  props.setPads(builder.getDenseI64ArrayAttr(*explicitPads));
  props.setDilations(builder.getDenseI64ArrayAttr(*dilations));
  props.setGroup(builder.getI64IntegerAttr(*group));
  SmallVector<Value> operands = {x, w};
  if (hasInput(ref, 2))
    operands.push_back(input(ref, 2));
  FailureOr<Value> result = createOp<ConvOp>(ref, loc, operands, props);
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

LogicalResult OnnxImporter::importPool(const NodeRef &ref, Location loc) {
  bool isMax = ref.node->op_type() == "MaxPool";
  SmallVector<StringRef> allowed = {"auto_pad", "ceil_mode", "dilations",
                                    "kernel_shape", "pads", "strides"};
  allowed.push_back(isMax ? "storage_order" : "count_include_pad");
  if (failed(checkNode(ref, 1, 1, allowed, isMax ? 2 : 1)))
    return failure();
  if (isMax && ref.node->output_size() > 1 && !ref.node->output(1).empty())
    return emitError(ref) << "the Indices output ('" << ref.node->output(1)
                          << "') is unsupported";
  if (failed(checkInputType(ref, 0, kFloat)))
    return failure();
  Value x = input(ref, 0);
  auto xType = cast<RankedTensorType>(x.getType());
  if (xType.getRank() < 3)
    return emitError(ref) << "expected an input of rank >= 3, got "
                          << typeToString(xType);
  size_t n = xType.getRank() - 2;
  SmallVector<int64_t> ones(n, 1), zeros(2 * n, 0);
  if (!findAttr(ref, "kernel_shape"))
    return emitError(ref) << "attribute 'kernel_shape' is required";
  FailureOr<SmallVector<int64_t>> kernel = intsAttr(ref, "kernel_shape", {});
  FailureOr<SmallVector<int64_t>> strides = intsAttr(ref, "strides", ones);
  FailureOr<SmallVector<int64_t>> dilations = intsAttr(ref, "dilations", ones);
  FailureOr<SmallVector<int64_t>> pads = intsAttr(ref, "pads", zeros);
  FailureOr<int64_t> ceilMode = intAttr(ref, "ceil_mode", 0);
  FailureOr<int64_t> countIncludePad = intAttr(ref, "count_include_pad", 0);
  FailureOr<std::string> autoPad = stringAttr(ref, "auto_pad", "NOTSET");
  if (failed(kernel) || failed(strides) || failed(dilations) || failed(pads) ||
      failed(ceilMode) || failed(countIncludePad) || failed(autoPad))
    return failure();
  if (kernel->size() != n || strides->size() != n || dilations->size() != n ||
      pads->size() != 2 * n)
    return emitError(ref) << "expected " << n
                          << " kernel sizes, strides and dilations and "
                          << 2 * n << " pads, got " << kernel->size() << ", "
                          << strides->size() << ", " << dilations->size()
                          << " and " << pads->size();
  FailureOr<SmallVector<int64_t>> explicitPads =
      resolvePads(*autoPad, xType.getShape().drop_front(2), *kernel, *strides,
                  *dilations, *pads);
  if (failed(explicitPads))
    return emitError(ref) << "unsupported auto_pad '" << *autoPad << "'";
  auto fill = [&](auto &props) {
    props.setKernelShape(builder.getDenseI64ArrayAttr(*kernel));
    props.setStrides(builder.getDenseI64ArrayAttr(*strides));
    props.setPads(builder.getDenseI64ArrayAttr(*explicitPads));
    props.setDilations(builder.getDenseI64ArrayAttr(*dilations));
    props.setCeilMode(builder.getBoolAttr(*ceilMode != 0));
    props.setCountIncludePad(builder.getBoolAttr(*countIncludePad != 0));
  };
  FailureOr<Value> result = failure();
  if (isMax) {
    MaxPoolOp::Properties props;
    fill(props);
    result = createOp<MaxPoolOp>(ref, loc, x, props);
  } else {
    AveragePoolOp::Properties props;
    fill(props);
    result = createOp<AveragePoolOp>(ref, loc, x, props);
  }
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

LogicalResult OnnxImporter::importReduce(const NodeRef &ref, Location loc) {
  StringRef op = ref.node->op_type();
  // ReduceSum takes its axes as an input from opset 13, the others from 18.
  bool axesInput = ref.opset >= (op == "ReduceSum" ? 13 : 18);
  LogicalResult checked =
      axesInput ? checkNode(ref, 1, 2, {"keepdims", "noop_with_empty_axes"})
                : checkNode(ref, 1, 1, {"axes", "keepdims"});
  if (failed(checked) || failed(checkInputType(ref, 0, kNumeric)))
    return failure();
  FailureOr<int64_t> keepdims = intAttr(ref, "keepdims", 1);
  FailureOr<int64_t> noop = intAttr(ref, "noop_with_empty_axes", 0);
  if (failed(keepdims) || failed(noop))
    return failure();
  SmallVector<int64_t> axes;
  if (axesInput) {
    if (hasInput(ref, 1)) {
      FailureOr<SmallVector<int64_t>> values =
          requireKnownInts(ref, 1, "axes");
      if (failed(values))
        return failure();
      axes = *values;
    }
  } else {
    FailureOr<SmallVector<int64_t>> values = intsAttr(ref, "axes", {});
    if (failed(values))
      return failure();
    axes = *values;
  }
  Value x = input(ref, 0);
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  if (axes.empty()) {
    if (*noop)
      return setOutput(ref, 0, x);
    axes = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  }
  FailureOr<SmallVector<int64_t>> normalized = normalizeAxes(ref, axes, rank);
  if (failed(normalized))
    return failure();
  auto fill = [&](auto &props) {
    props.setAxes(builder.getDenseI64ArrayAttr(*normalized));
    props.setKeepdims(builder.getBoolAttr(*keepdims != 0));
  };
  FailureOr<Value> result = failure();
  if (op == "ReduceSum") {
    ReduceSumOp::Properties props;
    fill(props);
    result = createOp<ReduceSumOp>(ref, loc, x, props);
  } else if (op == "ReduceMean") {
    ReduceMeanOp::Properties props;
    fill(props);
    result = createOp<ReduceMeanOp>(ref, loc, x, props);
  } else {
    ReduceMaxOp::Properties props;
    fill(props);
    result = createOp<ReduceMaxOp>(ref, loc, x, props);
  }
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult OnnxImporter::importTranspose(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 1, 1, {"perm"})))
    return failure();
  RankedTensorType type = inputType(ref, 0);
  int64_t rank = type.getRank();
  SmallVector<int64_t> reversed =
      llvm::to_vector(llvm::reverse(llvm::seq<int64_t>(0, rank)));
  FailureOr<SmallVector<int64_t>> perm = intsAttr(ref, "perm", reversed);
  if (failed(perm))
    return failure();
  SmallVector<bool> seen(rank, false);
  if ((int64_t)perm->size() != rank ||
      llvm::any_of(*perm, [&](int64_t p) {
        return p < 0 || p >= rank || std::exchange(seen[p], true);
      }))
    return emitError(ref) << "perm " << formatShape(*perm)
                          << " is not a permutation of rank " << rank;
  if (const ConstTensor *value = knownInput(ref, 0))
    return setKnownOutput(ref, 0, foldTranspose(*value, *perm), loc);
  TransposeOp::Properties props;
  props.setPerm(builder.getDenseI64ArrayAttr(*perm));
  FailureOr<Value> result = createOp<TransposeOp>(ref, loc, input(ref, 0), props);
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

LogicalResult OnnxImporter::finishReshape(const NodeRef &ref, Location loc,
                                          ArrayRef<int64_t> shape) {
  if (const ConstTensor *value = knownInput(ref, 0)) {
    ConstTensor reshaped = *value;
    reshaped.shape.assign(shape.begin(), shape.end());
    return setKnownOutput(ref, 0, std::move(reshaped), loc);
  }
  Value x = input(ref, 0);
  auto type = cast<RankedTensorType>(x.getType());
  Value result = ReshapeOp::create(builder, loc, type.clone(shape), x);
  return setOutput(ref, 0, result);
}

LogicalResult OnnxImporter::importReshape(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 2, 2, {"allowzero"})))
    return failure();
  FailureOr<int64_t> allowZero = intAttr(ref, "allowzero", 0);
  FailureOr<SmallVector<int64_t>> requested =
      succeeded(allowZero) ? requireKnownInts(ref, 1, "shape")
                           : FailureOr<SmallVector<int64_t>>(failure());
  if (failed(requested))
    return failure();
  ArrayRef<int64_t> inShape = inputType(ref, 0).getShape();
  SmallVector<int64_t> shape;
  int64_t inferred = -1, known = 1;
  for (auto [i, d] : llvm::enumerate(*requested)) {
    if (d == 0 && !*allowZero) {
      if (i >= inShape.size())
        return emitError(ref) << "shape " << formatShape(*requested)
                              << " copies dimension " << i
                              << " of an input of rank " << inShape.size();
      d = inShape[i];
    } else if (d == -1) {
      if (inferred >= 0)
        return emitError(ref) << "shape " << formatShape(*requested)
                              << " has more than one -1";
      inferred = i;
      shape.push_back(1);
      continue;
    } else if (d < 0) {
      return emitError(ref) << "shape " << formatShape(*requested)
                            << " has a negative dimension";
    }
    shape.push_back(d);
    known *= d;
  }
  int64_t total = product(inShape);
  if (inferred >= 0) {
    if (known == 0 || total % known != 0)
      return emitError(ref) << "cannot reshape " << formatShape(inShape)
                            << " to " << formatShape(*requested);
    shape[inferred] = total / known;
  }
  if (product(shape) != total)
    return emitError(ref) << "cannot reshape " << formatShape(inShape)
                          << " (" << total << " elements) to "
                          << formatShape(*requested);
  return finishReshape(ref, loc, shape);
}

LogicalResult OnnxImporter::importFlatten(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 1, 1, {"axis"})))
    return failure();
  FailureOr<int64_t> axisAttr = intAttr(ref, "axis", 1);
  if (failed(axisAttr))
    return failure();
  ArrayRef<int64_t> inShape = inputType(ref, 0).getShape();
  int64_t rank = inShape.size();
  if (*axisAttr < -rank || *axisAttr > rank)
    return emitError(ref) << "axis " << *axisAttr
                          << " is out of range for rank " << rank;
  int64_t axis = *axisAttr < 0 ? *axisAttr + rank : *axisAttr;
  SmallVector<int64_t> shape = {product(inShape.take_front(axis)),
                                product(inShape.drop_front(axis))};
  return finishReshape(ref, loc, shape);
}

LogicalResult OnnxImporter::importSqueeze(const NodeRef &ref, Location loc) {
  bool axesInput = ref.opset >= 13;
  if (failed(axesInput ? checkNode(ref, 1, 2, {})
                       : checkNode(ref, 1, 1, {"axes"})))
    return failure();
  FailureOr<SmallVector<int64_t>> axes =
      axesInput ? (hasInput(ref, 1) ? requireKnownInts(ref, 1, "axes")
                                    : SmallVector<int64_t>())
                : intsAttr(ref, "axes", {});
  if (failed(axes))
    return failure();
  ArrayRef<int64_t> inShape = inputType(ref, 0).getShape();
  int64_t rank = inShape.size();
  SmallVector<int64_t> squeezed;
  if (axes->empty()) {
    for (int64_t d = 0; d < rank; ++d)
      if (inShape[d] == 1)
        squeezed.push_back(d);
  } else {
    FailureOr<SmallVector<int64_t>> normalized =
        normalizeAxes(ref, *axes, rank);
    if (failed(normalized))
      return failure();
    squeezed = *normalized;
    for (int64_t d : squeezed)
      if (inShape[d] != 1)
        return emitError(ref) << "cannot squeeze dimension " << d
                              << " of size " << inShape[d] << " in "
                              << formatShape(inShape);
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d)
    if (!llvm::is_contained(squeezed, d))
      shape.push_back(inShape[d]);
  return finishReshape(ref, loc, shape);
}

LogicalResult OnnxImporter::importUnsqueeze(const NodeRef &ref, Location loc) {
  bool axesInput = ref.opset >= 13;
  if (failed(axesInput ? checkNode(ref, 2, 2, {})
                       : checkNode(ref, 1, 1, {"axes"})))
    return failure();
  FailureOr<SmallVector<int64_t>> axes = axesInput
                                             ? requireKnownInts(ref, 1, "axes")
                                             : intsAttr(ref, "axes", {});
  if (failed(axes))
    return failure();
  ArrayRef<int64_t> inShape = inputType(ref, 0).getShape();
  int64_t rank = inShape.size() + axes->size();
  FailureOr<SmallVector<int64_t>> normalized = normalizeAxes(ref, *axes, rank);
  if (failed(normalized))
    return failure();
  SmallVector<int64_t> shape;
  auto next = inShape.begin();
  for (int64_t d = 0; d < rank; ++d)
    shape.push_back(llvm::is_contained(*normalized, d) ? 1 : *next++);
  return finishReshape(ref, loc, shape);
}

LogicalResult OnnxImporter::importConcat(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 1, kVariadic, {"axis"})))
    return failure();
  if (!findAttr(ref, "axis"))
    return emitError(ref) << "attribute 'axis' is required";
  FailureOr<int64_t> axisAttr = intAttr(ref, "axis", 0);
  if (failed(axisAttr))
    return failure();
  FailureOr<int64_t> axis =
      normalizeAxis(ref, *axisAttr, inputType(ref, 0).getRank());
  if (failed(axis))
    return failure();
  int n = ref.node->input_size();
  if (allInputsKnown(ref)) {
    SmallVector<const ConstTensor *> inputs;
    for (int i = 0; i < n; ++i)
      inputs.push_back(knownInput(ref, i));
    bool compatible = llvm::all_of(inputs, [&](const ConstTensor *t) {
      if (t->dtype != inputs[0]->dtype || t->shape.size() != inputs[0]->shape.size())
        return false;
      for (size_t d = 0; d < t->shape.size(); ++d)
        if ((int64_t)d != *axis && t->shape[d] != inputs[0]->shape[d])
          return false;
      return true;
    });
    if (compatible)
      return setKnownOutput(ref, 0, foldConcat(inputs, *axis), loc);
  }
  SmallVector<Value> operands;
  for (int i = 0; i < n; ++i)
    operands.push_back(input(ref, i));
  ConcatOp::Properties props;
  props.setAxis(builder.getI64IntegerAttr(*axis));
  FailureOr<Value> result = createOp<ConcatOp>(ref, loc, operands, props);
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

LogicalResult OnnxImporter::importSplit(const NodeRef &ref, Location loc) {
  bool sizesInput = ref.opset >= 13;
  SmallVector<StringRef> allowed = {"axis"};
  if (!sizesInput)
    allowed.push_back("split");
  if (ref.opset >= 18)
    allowed.push_back("num_outputs");
  if (failed(checkNode(ref, 1, sizesInput ? 2 : 1, allowed, INT_MAX)))
    return failure();
  int numOutputs = ref.node->output_size();
  for (int i = 0; i < numOutputs; ++i)
    if (ref.node->output(i).empty())
      return emitError(ref) << "output " << i << " is missing";
  Value x = input(ref, 0);
  auto type = cast<RankedTensorType>(x.getType());
  FailureOr<int64_t> axisAttr = intAttr(ref, "axis", 0);
  if (failed(axisAttr))
    return failure();
  FailureOr<int64_t> axis = normalizeAxis(ref, *axisAttr, type.getRank());
  if (failed(axis))
    return failure();
  int64_t size = type.getDimSize(*axis);
  SmallVector<int64_t> sizes;
  if (sizesInput && hasInput(ref, 1)) {
    FailureOr<SmallVector<int64_t>> values = requireKnownInts(ref, 1, "split");
    if (failed(values))
      return failure();
    sizes = *values;
  } else if (!sizesInput && findAttr(ref, "split")) {
    FailureOr<SmallVector<int64_t>> values = intsAttr(ref, "split", {});
    if (failed(values))
      return failure();
    sizes = *values;
  } else if (findAttr(ref, "num_outputs")) {
    FailureOr<int64_t> count = intAttr(ref, "num_outputs", 0);
    if (failed(count))
      return failure();
    if (*count != numOutputs || *count <= 0)
      return emitError(ref) << "num_outputs = " << *count << " but the node has "
                            << numOutputs << " outputs";
    // Pieces of ceil(size / n), the last one smaller.
    int64_t piece = (size + *count - 1) / *count;
    for (int64_t i = 0, left = size; i < *count; ++i, left -= piece)
      sizes.push_back(std::max<int64_t>(0, std::min(piece, left)));
  } else {
    if (ref.opset >= 18)
      return emitError(ref) << "either input 'split' or attribute "
                               "'num_outputs' is required at opset 18";
    if (size % numOutputs != 0)
      return emitError(ref) << "cannot split dimension " << *axis << " of size "
                            << size << " into " << numOutputs
                            << " equal pieces";
    sizes.assign(numOutputs, size / numOutputs);
  }
  if ((int)sizes.size() != numOutputs)
    return emitError(ref) << "split has " << sizes.size()
                          << " sizes for " << numOutputs << " outputs";
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0)
      return emitError(ref) << "split sizes " << formatShape(sizes)
                            << " contain a negative size";
    total += s;
  }
  if (total != size)
    return emitError(ref) << "split sizes " << formatShape(sizes)
                          << " add up to " << total << ", dimension " << *axis
                          << " has size " << size;
  SmallVector<Type> types;
  for (int64_t s : sizes) {
    SmallVector<int64_t> shape(type.getShape());
    shape[*axis] = s;
    types.push_back(type.clone(shape));
  }
  auto split = SplitOp::create(builder, loc, types, x, *axis);
  for (int i = 0; i < numOutputs; ++i)
    if (failed(setOutput(ref, i, split.getResult(i))))
      return failure();
  return success();
}

LogicalResult OnnxImporter::importSlice(const NodeRef &ref, Location loc) {
  bool asInputs = ref.opset >= 10;
  if (failed(asInputs ? checkNode(ref, 3, 5, {})
                      : checkNode(ref, 1, 1, {"starts", "ends", "axes"})))
    return failure();
  ArrayRef<int64_t> inShape = inputType(ref, 0).getShape();
  int64_t rank = inShape.size();
  FailureOr<SmallVector<int64_t>> starts = failure(), ends = failure(),
                                  axes = failure(), steps = failure();
  if (asInputs) {
    starts = requireKnownInts(ref, 1, "starts");
    ends = requireKnownInts(ref, 2, "ends");
    if (failed(starts) || failed(ends))
      return failure();
    axes = hasInput(ref, 3) ? requireKnownInts(ref, 3, "axes")
                            : llvm::to_vector(llvm::seq<int64_t>(
                                  0, (int64_t)starts->size()));
    steps = hasInput(ref, 4) ? requireKnownInts(ref, 4, "steps")
                             : SmallVector<int64_t>(starts->size(), 1);
  } else {
    starts = intsAttr(ref, "starts", {});
    ends = intsAttr(ref, "ends", {});
    if (failed(starts) || failed(ends))
      return failure();
    axes = intsAttr(ref, "axes",
                    llvm::to_vector(llvm::seq<int64_t>(0, starts->size())));
    steps = SmallVector<int64_t>(starts->size(), 1);
  }
  if (failed(axes) || failed(steps))
    return failure();
  size_t n = starts->size();
  if (ends->size() != n || axes->size() != n || steps->size() != n)
    return emitError(ref) << "starts, ends, axes and steps have different "
                             "lengths: "
                          << n << ", " << ends->size() << ", " << axes->size()
                          << ", " << steps->size();
  SmallVector<int64_t> normStarts(rank, 0), normSteps(rank, 1),
      shape(inShape);
  SmallVector<bool> seen(rank, false);
  for (size_t i = 0; i < n; ++i) {
    int64_t axis = (*axes)[i];
    if (axis < -rank || axis >= rank)
      return emitError(ref) << "axis " << axis << " is out of range for rank "
                            << rank;
    if (axis < 0)
      axis += rank;
    if (std::exchange(seen[axis], true))
      return emitError(ref) << "axis " << (*axes)[i] << " is repeated";
    int64_t dim = inShape[axis], step = (*steps)[i];
    if (step == 0)
      return emitError(ref) << "step of axis " << (*axes)[i] << " is 0";
    int64_t start = (*starts)[i], end = (*ends)[i];
    if (start < 0)
      start = start < -dim ? -1 : start + dim;
    if (end < 0)
      end = end < -dim ? -1 : end + dim;
    int64_t size;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      size = end > start ? (end - start + step - 1) / step : 0;
    } else {
      start = std::clamp<int64_t>(start, -1, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      size = start > end ? (start - end - step - 1) / -step : 0;
    }
    normStarts[axis] = size == 0 ? 0 : start;
    normSteps[axis] = step;
    shape[axis] = size;
  }
  if (const ConstTensor *value = knownInput(ref, 0))
    return setKnownOutput(ref, 0,
                          foldSlice(*value, normStarts, normSteps, shape), loc);
  Value x = input(ref, 0);
  auto type = cast<RankedTensorType>(x.getType());
  Value result = SliceOp::create(builder, loc, type.clone(shape), x,
                                 builder.getDenseI64ArrayAttr(normStarts),
                                 builder.getDenseI64ArrayAttr(normSteps));
  return setOutput(ref, 0, result);
}

LogicalResult OnnxImporter::importGather(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 2, 2, {"axis"})) ||
      failed(checkInputType(ref, 1, kIndices)))
    return failure();
  FailureOr<int64_t> axisAttr = intAttr(ref, "axis", 0);
  if (failed(axisAttr))
    return failure();
  FailureOr<int64_t> axis =
      normalizeAxis(ref, *axisAttr, inputType(ref, 0).getRank());
  if (failed(axis))
    return failure();
  const ConstTensor *data = knownInput(ref, 0), *indices = knownInput(ref, 1);
  if (data && indices) {
    std::string error;
    FailureOr<ConstTensor> folded = foldGather(*data, *indices, *axis, error);
    if (failed(folded))
      return emitError(ref) << error;
    return setKnownOutput(ref, 0, std::move(*folded), loc);
  }
  if (indices) {
    // Constant indices are checked at compile time.
    int64_t size = inputType(ref, 0).getDimSize(*axis);
    for (int64_t index : indices->ints)
      if (index < -size || index >= size)
        return emitError(ref) << "index " << index
                              << " is out of range for dimension " << *axis
                              << " of size " << size;
  }
  GatherOp::Properties props;
  props.setAxis(builder.getI64IntegerAttr(*axis));
  FailureOr<Value> result =
      createOp<GatherOp>(ref, loc, {input(ref, 0), input(ref, 1)}, props);
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}

LogicalResult OnnxImporter::importExpand(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 2, 2, {})))
    return failure();
  FailureOr<SmallVector<int64_t>> requested =
      requireKnownInts(ref, 1, "shape");
  if (failed(requested))
    return failure();
  ArrayRef<int64_t> inShape = inputType(ref, 0).getShape();
  FailureOr<SmallVector<int64_t>> shape = broadcastStatic(inShape, *requested);
  if (failed(shape))
    return emitError(ref) << "input shape " << formatShape(inShape)
                          << " does not broadcast with "
                          << formatShape(*requested);
  const ConstTensor *value = knownInput(ref, 0);
  if (value && product(*shape) <= kMaxFoldElements)
    return setKnownOutput(ref, 0, foldExpand(*value, *shape), loc);
  Value x = input(ref, 0);
  if (ArrayRef<int64_t>(*shape) == inShape)
    return setOutput(ref, 0, x);
  auto type = cast<RankedTensorType>(x.getType());
  Value result = ExpandOp::create(builder, loc, type.clone(*shape), x);
  return setOutput(ref, 0, result);
}

LogicalResult OnnxImporter::importDropout(const NodeRef &ref, Location loc) {
  bool asInputs = ref.opset >= 12;
  if (failed(asInputs ? checkNode(ref, 1, 3, {"seed"}, 2)
                      : checkNode(ref, 1, 1, {"ratio", "is_test"}, 2)))
    return failure();
  if (asInputs && hasInput(ref, 2)) {
    FailureOr<const ConstTensor *> training =
        requireKnown(ref, 2, "training_mode");
    if (failed(training))
      return failure();
    if ((*training)->getNumElements() != 1 || (*training)->getInt(0) != 0)
      return emitError(ref) << "training_mode must be false; only inference "
                               "is supported";
  }
  LogicalResult output =
      knownInput(ref, 0) ? setKnownOutput(ref, 0, *knownInput(ref, 0), loc)
                         : setOutput(ref, 0, input(ref, 0));
  if (failed(output) || !isOutputUsed(ref, 1))
    return output;
  // In inference the mask keeps every element: an all-true splat of X's
  // shape (bool from opset 10, X's element type before).
  RankedTensorType type = inputType(ref, 0);
  Type elementType = ref.opset >= 10 ? builder.getI1Type()
                                     : type.getElementType();
  auto maskType = type.clone(elementType);
  Attribute one = builder.getOneAttr(elementType);
  Value mask = ConstantOp::create(
      builder, loc, maskType,
      cast<ElementsAttr>(
          DenseElementsAttr::get(maskType, ArrayRef<Attribute>(one))));
  return setOutput(ref, 1, mask);
}

//===----------------------------------------------------------------------===//
// Shape computations
//===----------------------------------------------------------------------===//

LogicalResult OnnxImporter::importConstantOfShape(const NodeRef &ref,
                                                  Location loc) {
  if (failed(checkNode(ref, 1, 1, {"value"})))
    return failure();
  FailureOr<SmallVector<int64_t>> shape = requireKnownInts(ref, 0, "input");
  if (failed(shape))
    return failure();
  for (int64_t d : *shape)
    if (d < 0)
      return emitError(ref) << "shape " << formatShape(*shape)
                            << " has a negative dimension";
  ConstTensor value;
  value.dtype = DType::F32;
  value.floats = {0.0};
  if (const onnx::AttributeProto *attr = findAttr(ref, "value")) {
    if (attr->type() != onnx::AttributeProto::TENSOR)
      return emitError(ref) << "attribute 'value' must be a tensor";
    const onnx::TensorProto &tensor = attr->t();
    std::optional<DType> dtype = getDTypeFromOnnx(tensor.data_type());
    if (!dtype || !isSupportedNodeType(*dtype))
      return emitError(ref) << "unsupported element type "
                            << getOnnxDataTypeName(tensor.data_type())
                            << " of attribute 'value'; supported: float32, "
                               "int64, int32, bool";
    SmallVector<int64_t> dims(tensor.dims().begin(), tensor.dims().end());
    if (getNumElements(dims) != 1)
      return emitError(ref) << "attribute 'value' must have one element";
    std::vector<char> bytes;
    std::string error;
    if (tensor.has_raw_data()) {
      bytes.assign(tensor.raw_data().begin(), tensor.raw_data().end());
      if ((int64_t)bytes.size() != getDTypeSize(*dtype))
        return emitError(ref) << "attribute 'value' has " << bytes.size()
                              << " bytes of raw_data";
    } else if (failed(decodeTypedData(tensor, *dtype, 1, bytes, error))) {
      return emitError(ref) << error;
    }
    value = makeConstTensor(*dtype, {}, bytes);
  }
  if (product(*shape) > kMaxFoldElements) {
    // Too large to hold on the host: a splat constant.
    ConstTensor one = value;
    auto type = RankedTensorType::get(*shape, getDTypeElementType(&ctx, value.dtype));
    DenseElementsAttr attr = toAttr(&ctx, one);
    Value splat = ConstantOp::create(
        builder, loc, type,
        cast<ElementsAttr>(DenseElementsAttr::get(
            type, attr.getSplatValue<Attribute>())));
    return setOutput(ref, 0, splat);
  }
  return setKnownOutput(ref, 0, makeSplat(value, *shape), loc);
}

LogicalResult OnnxImporter::importShape(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 1, 1, {"start", "end"})))
    return failure();
  ArrayRef<int64_t> shape = inputType(ref, 0).getShape();
  int64_t rank = shape.size();
  FailureOr<int64_t> startAttr = intAttr(ref, "start", 0);
  FailureOr<int64_t> endAttr = intAttr(ref, "end", rank);
  if (failed(startAttr) || failed(endAttr))
    return failure();
  auto clampIndex = [&](int64_t i) {
    return std::clamp<int64_t>(i < 0 ? i + rank : i, 0, rank);
  };
  int64_t start = clampIndex(*startAttr), end = clampIndex(*endAttr);
  SmallVector<int64_t> dims;
  for (int64_t d = start; d < end; ++d)
    dims.push_back(shape[d]);
  return setKnownOutput(ref, 0, makeI64Vector(dims), loc);
}

LogicalResult OnnxImporter::importRange(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 3, 3, {})) ||
      failed(checkInputType(ref, 0, kNumeric)))
    return failure();
  const char *names[] = {"start", "limit", "delta"};
  const ConstTensor *operands[3];
  for (unsigned i = 0; i < 3; ++i) {
    FailureOr<const ConstTensor *> value = requireKnown(ref, i, names[i]);
    if (failed(value))
      return failure();
    if ((*value)->getNumElements() != 1)
      return emitError(ref) << "input " << i << " ('" << names[i]
                            << "') must be a scalar, got shape "
                            << formatShape((*value)->shape);
    operands[i] = *value;
  }
  ConstTensor result;
  result.dtype = operands[0]->dtype;
  if (result.isFloat()) {
    double start = operands[0]->floats[0], limit = operands[1]->getDouble(0),
           delta = operands[2]->getDouble(0);
    if (delta == 0)
      return emitError(ref) << "delta is 0";
    int64_t count =
        std::max<int64_t>(0, (int64_t)std::ceil((limit - start) / delta));
    if (count > kMaxFoldElements)
      return emitError(ref) << "range of " << count << " elements is too large";
    for (int64_t i = 0; i < count; ++i)
      result.floats.push_back(result.dtype == DType::F32
                                  ? (double)(float)(start + i * delta)
                                  : start + i * delta);
    result.shape = {count};
  } else {
    int64_t start = operands[0]->ints[0], limit = operands[1]->getInt(0),
            delta = operands[2]->getInt(0);
    if (delta == 0)
      return emitError(ref) << "delta is 0";
    int64_t span = limit - start;
    int64_t count = std::max<int64_t>(
        0, span / delta + (span % delta != 0 && (span > 0) == (delta > 0)));
    if (count > kMaxFoldElements)
      return emitError(ref) << "range of " << count << " elements is too large";
    for (int64_t i = 0; i < count; ++i)
      result.ints.push_back(start + i * delta);
    result.shape = {count};
  }
  return setKnownOutput(ref, 0, std::move(result), loc);
}

//===----------------------------------------------------------------------===//
// Einsum
//===----------------------------------------------------------------------===//

LogicalResult OnnxImporter::importEinsum(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 1, kVariadic, {"equation"})) ||
      failed(checkInputType(ref, 0, kNumeric)))
    return failure();
  FailureOr<std::string> equationAttr = stringAttr(ref, "equation", "");
  if (failed(equationAttr))
    return failure();
  std::string equation;
  for (char c : *equationAttr)
    if (c != ' ')
      equation.push_back(c);
  if (StringRef(equation).contains("..."))
    return emitError(ref) << "einsum equation '" << *equationAttr
                          << "' uses an ellipsis ('...'), which is unsupported";
  for (char c : equation)
    if (!(c >= 'a' && c <= 'z') && c != ',' && c != '-' && c != '>')
      return emitError(ref) << "einsum equation '" << *equationAttr
                            << "' has '" << c
                            << "'; only lowercase letters are supported";
  if (!StringRef(equation).contains("->")) {
    // Implicit output: the letters appearing exactly once, alphabetically.
    std::string output;
    for (char c = 'a'; c <= 'z'; ++c)
      if (llvm::count(equation, c) == 1)
        output.push_back(c);
    equation += "->" + output;
  }
  SmallVector<Value> operands;
  for (int i = 0; i < ref.node->input_size(); ++i)
    operands.push_back(input(ref, i));
  EinsumOp::Properties props;
  props.setEquation(builder.getStringAttr(equation));
  FailureOr<Value> result = createOp<EinsumOp>(ref, loc, operands, props);
  return failed(result) ? failure() : setOutput(ref, 0, *result);
}
