//===- OpImporters.cpp - ONNX operators to autopar ops --------------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// What every operator importer shares (node and attribute checks, known
// operands, op creation) and the registry of importers: one file per
// operator family under ops/ registers its importers by op type and
// since-version. Each importer checks the node's inputs,
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

//===----------------------------------------------------------------------===//
// Node checks, attributes and known operands
//===----------------------------------------------------------------------===//

LogicalResult OnnxImporter::checkNode(const NodeRef &ref, unsigned min,
                                      unsigned max, ArrayRef<StringRef> allowed,
                                      unsigned maxOutputs,
                                      bool allOutputsOptional) {
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
  if (!allOutputsOptional &&
      (node.output_size() < 1 || node.output(0).empty()))
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

LogicalResult OnnxImporter::checkElementTypes(const NodeRef &ref) {
  for (int i = 0; i < ref.node->input_size(); ++i) {
    RankedTensorType type = inputType(ref, i);
    if (!type)
      continue;
    FailureOr<DType> dtype = getDTypeFromElementType(type.getElementType());
    if (succeeded(dtype) && llvm::is_contained(kQuantized, *dtype) &&
        acceptsQuantizedTypes(ref.node->op_type()))
      continue;
    if (failed(dtype) || !isSupportedNodeType(*dtype))
      return emitError(ref)
             << "unsupported element type "
             << (succeeded(dtype) ? dtypeName(*dtype)
                                  : typeToString(type.getElementType()))
             << " of input " << i << " ('" << ref.node->input(i)
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
    return emitError(ref) << "attribute '" << name
                          << "' must be a list of ints";
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
      return emitError(ref)
             << "axis " << axis << " is out of range for rank " << rank;
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

Value OnnxImporter::createScalarConstant(Location loc, Type element,
                                         double value,
                                         ArrayRef<int64_t> shape) {
  auto type = RankedTensorType::get(shape, element);
  Attribute scalar =
      isa<FloatType>(element)
          ? Attribute(FloatAttr::get(element, value))
          : Attribute(IntegerAttr::get(element, static_cast<int64_t>(value)));
  return ConstantOp::create(
      builder, loc, type,
      cast<ElementsAttr>(DenseElementsAttr::get(type, scalar)));
}

Value OnnxImporter::createI64Constant(Location loc, ArrayRef<int64_t> values,
                                      ArrayRef<int64_t> shape) {
  auto type = RankedTensorType::get(shape, builder.getI64Type());
  return ConstantOp::create(
      builder, loc, type,
      cast<ElementsAttr>(DenseElementsAttr::get(type, values)));
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
  ImportFn import =
      OpImporterRegistry::get().lookup(ref.node->op_type(), ref.opset);
  assert(import && "unsupported operators are rejected before import");
  return (this->*import)(ref, loc);
}

//===----------------------------------------------------------------------===//
// The registry of operator importers
//===----------------------------------------------------------------------===//

void OpImporterRegistry::add(StringRef opType, int64_t sinceVersion,
                             ImportFn import) {
  SmallVector<std::pair<int64_t, ImportFn>, 1> &versions = entries[opType];
  assert(
      llvm::none_of(versions,
                    [&](const auto &v) { return v.first == sinceVersion; }) &&
      "operator importer registered twice for one opset");
  versions.emplace_back(sinceVersion, import);
  llvm::sort(versions,
             [](const auto &a, const auto &b) { return a.first < b.first; });
}

ImportFn OpImporterRegistry::lookup(StringRef opType, int64_t opset) const {
  auto it = entries.find(opType);
  if (it == entries.end())
    return nullptr;
  ImportFn import = nullptr;
  for (const auto &[since, fn] : it->second)
    if (since <= opset)
      import = fn;
  return import;
}

std::optional<int64_t>
OpImporterRegistry::getFirstOpset(StringRef opType) const {
  auto it = entries.find(opType);
  if (it == entries.end())
    return std::nullopt;
  return it->second.front().first;
}

std::vector<std::string> OpImporterRegistry::getOpTypes() const {
  std::vector<std::string> names;
  for (const auto &entry : entries)
    names.push_back(entry.getKey().str());
  llvm::sort(names);
  return names;
}

const OpImporterRegistry &OpImporterRegistry::get() {
  static const OpImporterRegistry registry = [] {
    OpImporterRegistry r;
    OnnxImporter::registerOpImporters(r);
    return r;
  }();
  return registry;
}

void OnnxImporter::registerOpImporters(OpImporterRegistry &registry) {
  registerContractionImporters(registry);
  registerControlFlowImporters(registry);
  registerConvPoolImporters(registry);
  registerDataMovementImporters(registry);
  registerElementwiseImporters(registry);
  registerLossImporters(registry);
  registerNormalizationImporters(registry);
  registerReductionImporters(registry);
  registerRecurrentImporters(registry);
  registerResizeImporters(registry);
  registerShapeImporters(registry);
  registerSignalImporters(registry);
  registerQuantizationImporters(registry);
  registerRandomImporters(registry);
}
