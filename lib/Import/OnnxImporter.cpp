//===- OnnxImporter.cpp - ONNX model to autopar dialect -------------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements the import of an ONNX model (binary ModelProto or ONNX
// text syntax) into `func.func @main` of autopar ops:
//
//   1. parse the model, check that every node is supported and give graph
//      inputs the static shapes of ImportOptions::inputShapes (by name, then
//      its batch for dimension 0 of the others);
//   2. run ONNX's checker and shape inference where they apply (default-domain
//      opset <= 17; external data present);
//   3. build the function: runtime inputs become arguments, initializers and
//      large constants `autopar.weight` ops (their data goes to the weight
//      store), known values are folded on the host (ShapeFolding.h) and each
//      other node becomes autopar ops (OpImporters.cpp) whose result types
//      are inferred and cross-checked against the types ONNX declares or
//      infers;
//   4. run the MLIR verifier.
//
// ONNX reports errors with C++ exceptions; they are caught here and turned
// into diagnostics, so no exception leaves this library.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"

#include "onnx/checker.h"
#include "onnx/defs/parser.h"
#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"

#include <climits>
#include <functional>

#define DEBUG_TYPE "autopar-import"

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::importer;

/// Newest default-domain opset that ONNX 1.12's checker and shape inference
/// know.
static constexpr int64_t kMaxCheckedOpset = 17;

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

/// True when `bytes` look like ONNX text syntax: no control characters other
/// than whitespace in the first few KiB. Serialized protobufs start with small
/// tag and length bytes.
static bool looksLikeText(StringRef bytes) {
  for (unsigned char c : bytes.take_front(4096))
    if ((c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\f' &&
         c != '\v') ||
        c == 0x7f)
      return false;
  return true;
}

/// Returns the version of the default ONNX domain imported by `model`, or -1.
static int64_t getDefaultOpset(const onnx::ModelProto &model) {
  for (const onnx::OperatorSetIdProto &opset : model.opset_import())
    if (opset.domain().empty() || opset.domain() == "ai.onnx")
      return opset.version();
  return -1;
}

/// Returns the opset version imported for `domain`, or -1.
static int64_t getOpset(const onnx::ModelProto &model, StringRef domain) {
  if (domain.empty() || domain == "ai.onnx")
    return getDefaultOpset(model);
  for (const onnx::OperatorSetIdProto &opset : model.opset_import())
    if (opset.domain() == domain)
      return opset.version();
  return -1;
}

static bool isDefaultDomain(StringRef domain) {
  return domain.empty() || domain == "ai.onnx";
}


std::string OnnxImporter::NodeRef::describe() const {
  std::string domain;
  if (!isDefaultDomain(node->domain()))
    domain = ", domain " + node->domain();
  return "node '" + name + "' (op " + node->op_type() + domain + ", opset " +
         std::to_string(opset) + ")";
}

LogicalResult OnnxImporter::emitParseError(StringRef message) {
  // ONNX 1.12 reports "[ParseError at position (line: L column: C)]",
  // "Error context: <line>" and the reason on separate lines.
  Location loc = fileLoc;
  std::string reason;
  static const llvm::Regex position("\\(line: ([0-9]+) column: ([0-9]+)\\)");
  SmallVector<StringRef> lines;
  message.split(lines, '\n', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  for (StringRef line : lines) {
    SmallVector<StringRef, 3> matches;
    unsigned lineNo = 0, column = 0;
    if (line.starts_with("[ParseError") && position.match(line, &matches) &&
        !matches[1].getAsInteger(10, lineNo) &&
        !matches[2].getAsInteger(10, column)) {
      loc = FileLineColLoc::get(&ctx, bufferName, lineNo, column);
      continue;
    }
    if (line.trim().starts_with("Error context:"))
      continue;
    if (!reason.empty())
      reason += "; ";
    reason += line.trim().str();
  }
  if (reason.empty())
    reason = toOneLine(message);
  StringRef trimmed = StringRef(reason).rtrim(". ");
  std::string text = trimmed.str();
  if (!text.empty())
    text[0] = llvm::toLower(text[0]);
  InFlightDiagnostic diag = mlir::emitError(loc)
                            << "cannot parse ONNX text model: " << text;
  if (auto fileLineCol = dyn_cast<FileLineColLoc>(loc);
      fileLineCol && fileLineCol.getLine() != 0)
    diag << " (line " << fileLineCol.getLine() << ", column "
         << fileLineCol.getColumn() << ")";
  return diag;
}

LogicalResult OnnxImporter::parse(StringRef bytes) {
  if (bytes.empty())
    return emitError() << "model file '" << bufferName << "' is empty";
  bool text = llvm::sys::path::extension(bufferName) == ".onnxtxt" ||
              looksLikeText(bytes);
  if (text) {
    // The parser needs a null-terminated string.
    std::string source = bytes.str();
    onnx::Common::Status status =
        onnx::OnnxParser::Parse(*model, source.c_str());
    if (!status.IsOK())
      return emitParseError(status.ErrorMessage());
  } else {
    if (bytes.size() > static_cast<size_t>(INT_MAX))
      return emitError() << "model file '" << bufferName << "' has "
                         << bytes.size()
                         << " bytes; models over 2 GiB must use external data";
    if (!model->ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
      return emitError() << "'" << bufferName
                         << "' is not a valid ONNX model (malformed or "
                            "truncated protobuf, "
                         << bytes.size() << " bytes)";
  }
  if (!model->has_graph())
    return emitError() << "'" << bufferName
                       << "' is not a valid ONNX model (no graph)";
  opset = getDefaultOpset(*model);
  return success();
}

/// The ranks the model declares: graph inputs and outputs, value_info,
/// initializers and the tensors of Constant nodes (what ONNX's own shape
/// inference sees before it infers anything).
static llvm::StringMap<int>
collectDeclaredRanks(const onnx::GraphProto &graph) {
  llvm::StringMap<int> declaredRanks;
  for (const auto *infos :
       {&graph.input(), &graph.output(), &graph.value_info()})
    for (const onnx::ValueInfoProto &info : *infos)
      if (info.type().has_tensor_type() &&
          info.type().tensor_type().has_shape())
        declaredRanks[info.name()] =
            info.type().tensor_type().shape().dim_size();
  for (const onnx::TensorProto &init : graph.initializer())
    declaredRanks[init.name()] = init.dims_size();
  for (const onnx::NodeProto &node : graph.node())
    if (node.op_type() == "Constant" && node.output_size() == 1)
      for (const onnx::AttributeProto &attr : node.attribute())
        if (attr.name() == "value" && attr.has_t())
          declaredRanks[node.output(0)] = attr.t().dims_size();
  return declaredRanks;
}

/// Einsum `text` with lower-case letters only and an explicit output
/// (spaces removed; an ellipsis stays for the op importer to reject). The
/// letters are ordered upper case before lower case, as ONNX and numpy order
/// an implicit output; an equation with an upper-case letter has its letters
/// renamed 'a', 'b', ... in that order.
static FailureOr<std::string>
canonicalizeEinsumEquation(StringRef text,
                           function_ref<InFlightDiagnostic()> emitError) {
  auto isLetter = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  };
  std::string equation;
  for (char c : text) {
    if (c == ' ')
      continue;
    if (!isLetter(c) && c != ',' && c != '-' && c != '>' && c != '.')
      return emitError() << "unsupported einsum equation '" << text
                         << "': only letters, ',', '->' and spaces are "
                            "supported";
    equation.push_back(c);
  }
  std::string letters;
  for (char c : equation)
    if (isLetter(c) && letters.find(c) == std::string::npos)
      letters.push_back(c);
  llvm::sort(letters);
  if (letters.size() > 26)
    return emitError() << "einsum equation '" << text << "' uses "
                       << letters.size()
                       << " distinct letters; at most 26 are supported";
  if (!StringRef(equation).contains("->") &&
      !StringRef(equation).contains("...")) {
    // Implicit output: the letters appearing exactly once, in that order.
    std::string output;
    for (char c : letters)
      if (llvm::count(equation, c) == 1)
        output.push_back(c);
    equation += "->" + output;
  }
  // Lower-case equations keep their letters.
  if (llvm::any_of(letters, [](char c) { return c >= 'A' && c <= 'Z'; }))
    for (char &c : equation)
      if (isLetter(c))
        c = static_cast<char>('a' + letters.find(c));
  return equation;
}

LogicalResult OnnxImporter::checkSupportedNodes() {
  // Nodes of other domains first: a model of training operators (domain
  // ai.onnx.preview.training) may import no default-domain opset at all.
  auto nodes = llvm::enumerate(*model->mutable_graph()->mutable_node());
  auto makeRef = [&](size_t index, onnx::NodeProto &node) {
    return NodeRef{&node,
                   node.name().empty() ? "#" + std::to_string(index)
                                       : node.name(),
                   getOpset(*model, node.domain())};
  };
  for (auto [index, node] : nodes)
    if (!isDefaultDomain(node.domain()))
      return emitError(makeRef(index, node)) << "unsupported operator";
  if (opset < 0)
    return emitError() << "model '" << bufferName
                       << "' imports no opset of the default ONNX domain";
  const OpImporterRegistry &registry = OpImporterRegistry::get();
  for (auto [index, node] : nodes) {
    if (registry.lookup(node.op_type(), opset))
      continue;
    std::optional<int64_t> first = registry.getFirstOpset(node.op_type());
    if (!first)
      return emitError(makeRef(index, node)) << "unsupported operator";
    return emitError(makeRef(index, node))
           << "unsupported operator at opset " << opset << ": autopar imports "
           << node.op_type() << " from opset " << *first;
  }
  // Attribute values that crash ONNX 1.12's own shape inference (found by the
  // importer fuzzer) are rejected before it runs.
  static const llvm::StringSet<> windowed = {"Conv", "MaxPool", "AveragePool"};
  // Ranks the model declares (graph inputs and outputs, value_info,
  // initializers, Constant tensors): ONNX 1.12's shape inference of the
  // convolutions reads out of bounds when X and W differ in rank (Conv past
  // its dilations, ConvTranspose past W's shape or its kernel; found by the
  // importer fuzzer). The operands' positions per operator:
  static const llvm::StringMap<std::pair<int, int>> convOperands = {
      {"Conv", {0, 1}},
      {"ConvInteger", {0, 1}},
      {"ConvTranspose", {0, 1}},
      {"QLinearConv", {0, 3}}};
  llvm::StringMap<int> declaredRanks = collectDeclaredRanks(model->graph());
  for (auto [index, node] : nodes) {
    if (node.op_type() == "Einsum") {
      // ONNX 1.12's einsum shape inference writes out of bounds on letters
      // other than 'a'-'z' (found by the importer fuzzer), and the dialect
      // spells equations in lower case: rename the letters before it runs.
      NodeRef ref = makeRef(index, node);
      for (onnx::AttributeProto &attr : *node.mutable_attribute()) {
        if (attr.name() != "equation")
          continue;
        FailureOr<std::string> equation = canonicalizeEinsumEquation(
            attr.s(), [&] { return emitError(ref); });
        if (failed(equation))
          return failure();
        attr.set_s(*equation);
      }
      continue;
    }
    auto operands = convOperands.find(node.op_type());
    if (operands != convOperands.end() &&
        node.input_size() > operands->second.second) {
      const std::string &xName = node.input(operands->second.first);
      const std::string &wName = node.input(operands->second.second);
      auto x = declaredRanks.find(xName);
      auto w = declaredRanks.find(wName);
      if (x != declaredRanks.end() && w != declaredRanks.end() &&
          x->second != w->second)
        return emitError(makeRef(index, node))
               << "input 'X' ('" << xName << "') has rank " << x->second
               << " but weight 'W' ('" << wName << "') has rank " << w->second
               << "; they must be equal";
    }
    if (!windowed.contains(node.op_type()))
      continue;
    for (const onnx::AttributeProto &attr : node.attribute()) {
      StringRef name = attr.name();
      if (name != "strides" && name != "dilations" && name != "kernel_shape")
        continue;
      for (int64_t v : attr.ints())
        if (v <= 0)
          return emitError(makeRef(index, node))
                 << name << " must be positive, got " << v;
    }
  }
  return success();
}

LogicalResult OnnxImporter::checkEmptyInputNames() {
  // ONNX 1.12 knows the schemas up to kMaxCheckedOpset; a newer opset may
  // have turned an input optional, so only checkNode judges those nodes.
  if (opset > kMaxCheckedOpset)
    return success();
  for (auto [index, node] :
       llvm::enumerate(*model->mutable_graph()->mutable_node())) {
    const onnx::OpSchema *schema = onnx::OpSchemaRegistry::Schema(
        node.op_type(), static_cast<int>(opset), node.domain());
    if (!schema || schema->inputs().empty())
      continue;
    const auto &formals = schema->inputs();
    for (int i = 0; i < node.input_size(); ++i) {
      if (!node.input(i).empty())
        continue;
      // Inputs past the formal list belong to a trailing variadic input;
      // extra inputs of other operators are counted by checkNode. Nodes of
      // other domains were rejected before (checkSupportedNodes), so the
      // default opset applies.
      const onnx::OpSchema::FormalParameter *formal =
          i < (int)formals.size() ? &formals[i]
          : formals.back().GetOption() == onnx::OpSchema::Variadic
              ? &formals.back()
              : nullptr;
      if (!formal || formal->GetOption() == onnx::OpSchema::Optional)
        continue;
      NodeRef ref{&node,
                  node.name().empty() ? "#" + std::to_string(index)
                                      : node.name(),
                  opset};
      bool variadic = formal->GetOption() == onnx::OpSchema::Variadic;
      return emitError(ref)
             << "input " << i << " has an empty name, but " << node.op_type()
             << "'s input '" << formal->GetName() << "' is "
             << (variadic ? "variadic" : "required") << ", not optional";
    }
  }
  return success();
}

LogicalResult OnnxImporter::runOnnxChecks(bool externalData) {
  if (opset > kMaxCheckedOpset) {
    LLVM_DEBUG(llvm::dbgs() << "opset " << opset
                            << ": skipping ONNX checker and shape inference\n");
    return success();
  }
  try {
    if (!externalData) {
      onnx::checker::check_model(*model);
    } else if (llvm::sys::fs::is_regular_file(bufferName)) {
      // The path form resolves external data relative to the model file.
      onnx::checker::check_model(bufferName.str());
    }
  } catch (const std::exception &e) {
    return emitError() << "ONNX checker rejected '" << bufferName
                       << "': " << toOneLine(e.what());
  }
  // ONNX 1.12's LayerNormalization inference dereferences an out-of-range
  // axis when Mean/InvStdDev are requested (found by the importer fuzzer):
  // such models are left to autopar's own verifiers.
  // Its ConvTranspose inference reads W's second dimension without checking
  // W's rank: unless the model declares W (an initializer, in practice), the
  // rank check of checkSupportedNodes could not run, and so neither does
  // ONNX's inference.
  llvm::StringMap<int> declaredRanks = collectDeclaredRanks(model->graph());
  for (const onnx::NodeProto &node : model->graph().node()) {
    if (node.op_type() == "LayerNormalization" && node.output_size() > 1) {
      LLVM_DEBUG(llvm::dbgs() << "LayerNormalization statistics: skipping "
                                 "ONNX shape inference\n");
      return success();
    }
    if (node.op_type() == "ConvTranspose" && node.input_size() >= 2 &&
        !declaredRanks.contains(node.input(1))) {
      LLVM_DEBUG(llvm::dbgs() << "ConvTranspose with an undeclared weight: "
                                 "skipping ONNX shape inference\n");
      return success();
    }
  }
  try {
    onnx::ShapeInferenceOptions inferenceOptions(/*check_type_val=*/true,
                                                 /*strict_mode_val=*/1,
                                                 /*data_prop_val=*/false);
    onnx::shape_inference::InferShapes(
        *model, onnx::OpSchemaRegistry::Instance(), inferenceOptions);
  } catch (const std::exception &e) {
    // The first thing to suspect after --batch changed a static size.
    InFlightDiagnostic diag = mlir::emitError(fileLoc);
    diag << "ONNX shape inference failed on '" << bufferName << "'";
    if (!batchChanges.empty())
      diag << " after " << describeBatchChanges();
    return diag << ": " << toOneLine(e.what());
  }
  checkedByOnnx = true;
  return success();
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

FailureOr<RankedTensorType> OnnxImporter::getTensorType(int32_t dataType,
                                                        ArrayRef<int64_t> shape,
                                                        const Twine &what) {
  std::optional<DType> dtype = getDTypeFromOnnx(dataType);
  if (!dtype) {
    InFlightDiagnostic diag = emitError();
    // `what` is "input 'NAME'" or "initializer 'NAME'".
    std::string text = what.str();
    StringRef name = StringRef(text).split('\'').second.rsplit('\'').first;
    if (std::optional<NodeRef> consumer = findConsumer(name))
      diag << consumer->describe() << ": ";
    return diag << what << " has unsupported element type "
                << getOnnxDataTypeName(dataType);
  }
  if (!getNumElements(shape))
    return emitError() << what << " has invalid dimensions";
  return RankedTensorType::get(shape, getDTypeElementType(&ctx, *dtype));
}

FailureOr<RankedTensorType>
OnnxImporter::convertInputType(const onnx::ValueInfoProto &input) {
  std::string what = "input '" + input.name() + "'";
  const onnx::TypeProto &type = input.type();
  if (!type.has_tensor_type())
    return emitError() << what
                       << " is not a tensor; only tensor values are supported";
  const onnx::TypeProto::Tensor &tensor = type.tensor_type();
  if (!tensor.has_shape())
    return emitError() << what
                       << " has no shape; static shapes are required (give "
                          "one with --input-shape "
                       << input.name() << "=D0xD1x...)";
  // The --input-shape value that would resolve the input, symbolic and
  // unknown sizes as placeholders.
  std::string hint = "--input-shape " + input.name() + "=";
  for (auto [index, dim] : llvm::enumerate(tensor.shape().dim())) {
    hint += index ? "x" : "";
    hint += dim.has_dim_value() ? std::to_string(dim.dim_value())
            : dim.has_dim_param() ? "<" + dim.dim_param() + ">"
                                  : "<d" + std::to_string(index) + ">";
  }
  // Only dimension 0 open: --batch resolves it too.
  if (tensor.shape().dim_size() > 0 &&
      llvm::all_of(llvm::drop_begin(tensor.shape().dim()),
                   [](const auto &dim) { return dim.has_dim_value(); })) {
    const onnx::TensorShapeProto::Dimension &first = tensor.shape().dim(0);
    if (!first.has_dim_value())
      hint += " or --batch " + (first.has_dim_param()
                                    ? "<" + first.dim_param() + ">"
                                    : std::string("<d0>"));
  }
  SmallVector<int64_t> shape;
  for (auto [index, dim] : llvm::enumerate(tensor.shape().dim())) {
    if (dim.has_dim_param())
      return emitError() << what << " dimension " << index << " is symbolic ('"
                         << dim.dim_param()
                         << "'); static shapes are required: resolve it with "
                         << hint;
    if (!dim.has_dim_value())
      return emitError() << what << " dimension " << index
                         << " is unknown; static shapes are required: "
                            "resolve it with "
                         << hint;
    shape.push_back(dim.dim_value());
  }
  return getTensorType(tensor.elem_type(), shape, what);
}

LogicalResult OnnxImporter::applyInputShapes() {
  onnx::GraphProto &graph = *model->mutable_graph();
  llvm::StringSet<> initializers;
  for (const onnx::TensorProto &init : graph.initializer())
    initializers.insert(init.name());
  for (const auto &[name, shape] : options.inputShapes) {
    std::string given =
        "--input-shape " + formatInputShapes(InputShapes{{name, shape}});
    onnx::ValueInfoProto *input = nullptr;
    for (onnx::ValueInfoProto &candidate : *graph.mutable_input())
      if (candidate.name() == name && !initializers.contains(name))
        input = &candidate;
    if (!input) {
      InFlightDiagnostic diag = emitError();
      diag << given << ": the model has no runtime input '" << name << "'";
      if (initializers.contains(name))
        diag << " ('" << name << "' is an initializer)";
      SmallVector<StringRef> names;
      for (const onnx::ValueInfoProto &candidate : graph.input())
        if (!initializers.contains(candidate.name()))
          names.push_back(candidate.name());
      if (names.empty()) {
        diag << "; it has no runtime inputs";
      } else {
        diag << "; its inputs are ";
        llvm::interleave(
            names, diag, [&](StringRef n) { diag << "'" << n << "'"; }, ", ");
      }
      return diag;
    }
    std::string what = "input '" + name + "'";
    for (auto [index, size] : llvm::enumerate(shape))
      if (size <= 0)
        return emitError() << given << ": dimension " << index << " of "
                           << what << " must be positive, got " << size;
    if (!input->type().has_tensor_type())
      return emitError() << given << ": " << what
                         << " is not a tensor; only tensor values are "
                            "supported";
    onnx::TypeProto::Tensor &tensor =
        *input->mutable_type()->mutable_tensor_type();
    if (tensor.has_shape()) {
      const onnx::TensorShapeProto &declared = tensor.shape();
      if (declared.dim_size() != static_cast<int>(shape.size()))
        return emitError() << given << ": " << what << " has rank "
                           << declared.dim_size() << ", but the shape has "
                           << shape.size() << " dimension"
                           << (shape.size() == 1 ? "" : "s");
      for (auto [index, dim] : llvm::enumerate(declared.dim()))
        if (dim.has_dim_value() && dim.dim_value() != shape[index])
          return emitError() << given << ": dimension " << index << " of "
                             << what << " is " << dim.dim_value()
                             << " in the model, not " << shape[index];
    }
    onnx::TensorShapeProto &resolved = *tensor.mutable_shape();
    resolved.clear_dim();
    for (int64_t size : shape)
      resolved.add_dim()->set_dim_value(size);
  }
  return success();
}

LogicalResult OnnxImporter::applyBatch() {
  if (!options.inputShapes.batch)
    return success();
  int64_t batch = *options.inputShapes.batch;
  if (batch <= 0)
    return emitError() << "--batch must be positive, got " << batch;
  onnx::GraphProto &graph = *model->mutable_graph();
  llvm::StringSet<> initializers;
  for (const onnx::TensorProto &init : graph.initializer())
    initializers.insert(init.name());
  for (onnx::ValueInfoProto &input : *graph.mutable_input()) {
    // --input-shape is more specific; inputs of unknown rank and scalars
    // have no batch dimension.
    if (initializers.contains(input.name()) ||
        options.inputShapes.count(input.name()) ||
        !input.type().has_tensor_type() ||
        !input.type().tensor_type().has_shape() ||
        input.type().tensor_type().shape().dim_size() == 0)
      continue;
    onnx::TensorShapeProto &shape =
        *input.mutable_type()->mutable_tensor_type()->mutable_shape();
    onnx::TensorShapeProto::Dimension &dim = *shape.mutable_dim(0);
    if (dim.has_dim_value() && dim.dim_value() != batch)
      batchChanges.emplace_back(input.name(), dim.dim_value());
    dim.set_dim_value(batch);
  }
  if (batchChanges.empty())
    return success();
  // The declared shapes of outputs and intermediate values were made for the
  // model's batch: keep their ranks, let shape inference and the ops infer
  // the sizes.
  auto forgetSizes = [](onnx::ValueInfoProto &info) {
    if (!info.type().has_tensor_type() ||
        !info.type().tensor_type().has_shape())
      return;
    for (onnx::TensorShapeProto::Dimension &dim :
         *info.mutable_type()->mutable_tensor_type()->mutable_shape()
              ->mutable_dim())
      dim.Clear();
  };
  for (onnx::ValueInfoProto &info : *graph.mutable_output())
    forgetSizes(info);
  for (onnx::ValueInfoProto &info : *graph.mutable_value_info())
    forgetSizes(info);
  LLVM_DEBUG(llvm::dbgs() << describeBatchChanges() << "\n");
  return success();
}

std::string OnnxImporter::describeBatchChanges() const {
  std::string text = "--batch " + std::to_string(*options.inputShapes.batch) +
                     " changed dimension 0 of ";
  for (auto [index, change] : llvm::enumerate(batchChanges))
    text += (index ? ", input '" : "input '") + change.first + "' (" +
            std::to_string(change.second) + " in the model)";
  return text;
}

std::string importer::typeToString(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  type.print(os);
  return s;
}

/// Prints an ONNX tensor type like an MLIR type, `?` for unknown dimensions.
static std::string describeOnnxType(MLIRContext &ctx,
                                    const onnx::TypeProto::Tensor &tensor) {
  std::string s = "tensor<";
  if (tensor.has_shape())
    for (const onnx::TensorShapeProto::Dimension &dim : tensor.shape().dim())
      s += (dim.has_dim_value() ? std::to_string(dim.dim_value()) : "?") + "x";
  else
    s += "*x";
  if (std::optional<DType> dtype = getDTypeFromOnnx(tensor.elem_type()))
    s += typeToString(getDTypeElementType(&ctx, *dtype));
  else
    s += getOnnxDataTypeName(tensor.elem_type());
  return s + ">";
}

std::optional<OnnxImporter::NodeRef>
OnnxImporter::findConsumer(StringRef name) {
  for (auto [index, node] : llvm::enumerate(*model->mutable_graph()->mutable_node()))
    if (llvm::is_contained(node.input(), name))
      return NodeRef{&node,
                     node.name().empty() ? "#" + std::to_string(index)
                                         : node.name(),
                     getOpset(*model, node.domain())};
  return std::nullopt;
}

LogicalResult
OnnxImporter::checkAgainstOnnxType(Type valueType, StringRef tensorName,
                                   const onnx::TypeProto *onnxType,
                                   const NodeRef *ref) {
  if (!onnxType || !onnxType->has_tensor_type())
    return success();
  const onnx::TypeProto::Tensor &tensor = onnxType->tensor_type();
  auto type = cast<RankedTensorType>(valueType);
  bool matches = true;
  if (tensor.elem_type() != onnx::TensorProto::UNDEFINED) {
    std::optional<DType> dtype = getDTypeFromOnnx(tensor.elem_type());
    matches =
        dtype && getDTypeElementType(&ctx, *dtype) == type.getElementType();
  }
  if (tensor.has_shape()) {
    if (tensor.shape().dim_size() != type.getRank()) {
      matches = false;
    } else {
      for (auto [dim, size] : llvm::zip(tensor.shape().dim(), type.getShape()))
        if (dim.has_dim_value() && dim.dim_value() != size)
          matches = false;
    }
  }
  if (matches)
    return success();
  InFlightDiagnostic diag = emitError();
  if (ref)
    diag << ref->describe() << ": ";
  diag << "tensor '" << tensorName << "' has type " << typeToString(type)
       << ", but ONNX " << (checkedByOnnx ? "declares or infers " : "declares ")
       << describeOnnxType(ctx, tensor);
  return diag;
}

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

/// Sets `bytes` to the little-endian bytes of `values`.
template <typename T>
static void setBytes(ArrayRef<T> values, std::vector<char> &bytes) {
  const char *begin = reinterpret_cast<const char *>(values.data());
  bytes.assign(begin, begin + values.size() * sizeof(T));
}

LogicalResult OnnxImporter::importConstant(const NodeRef &ref, Location loc) {
  onnx::NodeProto &node = *ref.node;
  const std::string &outputName = node.output(0);
  if (node.attribute_size() != 1)
    return emitError(ref) << "expected exactly one value attribute, got "
                          << node.attribute_size();
  onnx::AttributeProto &attr = *node.mutable_attribute(0);
  StringRef kind = attr.name();

  // Value attributes become a tensor (kept in the model) or decoded bytes.
  onnx::TensorProto *tensor = nullptr;
  DType dtype = DType::F32;
  SmallVector<int64_t> shape;
  std::vector<char> bytes;
  if (kind == "value") {
    if (!attr.has_t())
      return emitError(ref) << "attribute 'value' is not a tensor";
    tensor = attr.mutable_t();
    std::optional<DType> type = getDTypeFromOnnx(tensor->data_type());
    if (!type)
      return emitError(ref) << "constant has unsupported element type "
                            << getOnnxDataTypeName(tensor->data_type());
    dtype = *type;
    shape.assign(tensor->dims().begin(), tensor->dims().end());
  } else if (kind == "value_float") {
    float value = attr.f();
    setBytes(ArrayRef<float>(value), bytes);
  } else if (kind == "value_floats") {
    setBytes(ArrayRef<float>(attr.floats().data(), attr.floats_size()), bytes);
    shape.push_back(attr.floats_size());
  } else if (kind == "value_int") {
    int64_t value = attr.i();
    setBytes(ArrayRef<int64_t>(value), bytes);
    dtype = DType::I64;
  } else if (kind == "value_ints") {
    setBytes(ArrayRef<int64_t>(attr.ints().data(), attr.ints_size()), bytes);
    shape.push_back(attr.ints_size());
    dtype = DType::I64;
  } else {
    return emitError(ref) << "constant attribute '" << kind
                          << "' is unsupported";
  }
  std::optional<int64_t> numElements = getNumElements(shape);
  if (!numElements)
    return emitError(ref) << "constant has invalid dimensions";
  auto type = RankedTensorType::get(shape, getDTypeElementType(&ctx, dtype));

  std::string error;
  bool external =
      tensor && tensor->data_location() == onnx::TensorProto::EXTERNAL;
  bool isFloat = dtype == DType::F32 || dtype == DType::F64;
  if (external || *numElements > kMaxFoldElements ||
      (isFloat && *numElements > kMaxInlineConstantElements)) {
    // Large constants stay out of the IR, like initializers; large float
    // constants are model data, not shape computations.
    LogicalResult added =
        tensor ? weights->addTensor(outputName, dtype, shape, *tensor, error)
               : weights->addBytes(outputName, dtype, shape, std::move(bytes),
                                   error);
    if (failed(added))
      return emitError(ref) << error;
    return setOutput(ref, 0, WeightOp::create(builder, loc, type, outputName));
  }

  if (tensor) {
    if (tensor->has_raw_data()) {
      const std::string &raw = tensor->raw_data();
      if (static_cast<int64_t>(raw.size()) !=
          *numElements * getDTypeSize(dtype))
        return emitError(ref) << "constant has " << raw.size()
                              << " bytes of raw_data, expected "
                              << *numElements * getDTypeSize(dtype);
      bytes.assign(raw.begin(), raw.end());
    } else if (failed(decodeTypedData(*tensor, dtype, *numElements, bytes,
                                      error))) {
      return emitError(ref) << error;
    }
  }
  // A known value: materialized where a runtime op reads it (as
  // autopar.constant, or a weight when large), never when only shapes do.
  return setKnownOutput(ref, 0, makeConstTensor(dtype, shape, bytes), loc);
}

//===----------------------------------------------------------------------===//
// Graph
//===----------------------------------------------------------------------===//

LogicalResult OnnxImporter::importGraph() {
  onnx::GraphProto &graph = *model->mutable_graph();
  for (const onnx::ValueInfoProto &info : graph.value_info())
    if (info.has_type())
      onnxTypes[info.name()] = &info.type();
  for (const onnx::ValueInfoProto &info : graph.output())
    if (info.has_type())
      onnxTypes[info.name()] = &info.type();

  for (const onnx::TensorProto &init : graph.initializer())
    initializerNames.insert(init.name());
  // Names read by nodes and graph outputs, in subgraphs (If, Loop, Scan)
  // too: a subgraph may read a tensor of the enclosing graph.
  std::function<void(const onnx::GraphProto &)> collectUses =
      [&](const onnx::GraphProto &g) {
        for (const onnx::NodeProto &node : g.node()) {
          for (const std::string &name : node.input())
            usedNames.insert(name);
          for (const onnx::AttributeProto &attr : node.attribute()) {
            if (attr.has_g())
              collectUses(attr.g());
            for (const onnx::GraphProto &sub : attr.graphs())
              collectUses(sub);
          }
        }
        for (const onnx::ValueInfoProto &output : g.output())
          usedNames.insert(output.name());
      };
  collectUses(graph);

  // Runtime inputs: graph inputs that are not initializers.
  SmallVector<Type> inputTypes;
  SmallVector<Location> inputLocs;
  for (const onnx::ValueInfoProto &input : graph.input()) {
    if (initializerNames.contains(input.name()))
      continue;
    if (llvm::is_contained(result.inputNames, input.name()))
      return emitError() << "graph input '" << input.name()
                         << "' is listed twice";
    FailureOr<RankedTensorType> type = convertInputType(input);
    if (failed(type))
      return failure();
    inputTypes.push_back(*type);
    inputLocs.push_back(getOnnxTensorLoc(&ctx, input.name()));
    result.inputNames.push_back(input.name());
  }

  builder.setInsertionPointToEnd(result.module->getBody());
  auto func = func::FuncOp::create(builder, fileLoc, "main",
                                   builder.getFunctionType(inputTypes, {}));
  Block *entry =
      builder.createBlock(&func.getBody(), {}, inputTypes, inputLocs);
  for (auto [name, arg] : llvm::zip(result.inputNames, entry->getArguments()))
    values[name] = arg;

  // Initializers: data stays in the weight store.
  for (onnx::TensorProto &init : *graph.mutable_initializer()) {
    SmallVector<int64_t> shape(init.dims().begin(), init.dims().end());
    FailureOr<RankedTensorType> type = getTensorType(
        init.data_type(), shape, "initializer '" + init.name() + "'");
    if (failed(type))
      return failure();
    std::string error;
    if (failed(weights->addTensor(init.name(),
                                  *getDTypeFromOnnx(init.data_type()), shape,
                                  init, error)))
      return emitError() << error;
    Value weight = WeightOp::create(
        builder, getOnnxTensorLoc(&ctx, init.name()), *type, init.name());
    values[init.name()] = weight;
  }
  // An initializer that is also a graph input declares its type there.
  for (const onnx::ValueInfoProto &input : graph.input())
    if (initializerNames.contains(input.name()) &&
        failed(checkAgainstOnnxType(values.lookup(input.name()).getType(),
                                    input.name(),
                                    &input.type(), nullptr)))
      return failure();

  for (auto [index, node] : llvm::enumerate(*graph.mutable_node())) {
    NodeRef ref{&node,
                node.name().empty() ? "#" + std::to_string(index) : node.name(),
                getOpset(*model, node.domain())};
    if (failed(importNode(ref)))
      return failure();
  }

  SmallVector<Value> outputs;
  for (const onnx::ValueInfoProto &output : graph.output()) {
    Value value = getValue(output.name());
    if (!value)
      return emitError() << "graph output '" << output.name()
                         << "' is not produced by any node, input or "
                            "initializer";
    if (failed(checkAgainstOnnxType(value.getType(), output.name(), nullptr)))
      return failure();
    outputs.push_back(value);
    result.outputNames.push_back(output.name());
  }
  // Large constants may also live in external files.
  std::string error;
  if (options.requireWeightData && failed(weights->checkExternalData(error)))
    return emitError() << error;
  func::ReturnOp::create(builder, fileLoc, outputs);
  func.setFunctionType(
      builder.getFunctionType(inputTypes, ValueRange(outputs).getTypes()));

  // Initializers that nodes read only as compile-time values (shapes, axes,
  // bounds, ratios) leave no dead weight behind.
  for (Operation &op : llvm::make_early_inc_range(*entry))
    if (auto weight = dyn_cast<WeightOp>(op);
        weight && weight->use_empty() && usedNames.contains(weight.getName()))
      weight->erase();
  return success();
}

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

/// Largest initializer (in elements) decoded on the host when a node reads
/// it as a compile-time value; larger ones are model weights.
static constexpr int64_t kMaxHostInitializerElements = 4096;

const ConstTensor *OnnxImporter::getKnown(StringRef name) {
  auto it = known.find(name);
  if (it != known.end())
    return &it->second.first;
  if (!initializerNames.contains(name))
    return nullptr;
  const WeightStore::Weight *weight = weights->lookup(name);
  if (!weight)
    return nullptr;
  if (options.keepFloatInitializers && !weight->shape.empty() &&
      (weight->dtype == DType::F32 || weight->dtype == DType::F64))
    return nullptr;
  std::optional<int64_t> count = getNumElements(weight->shape);
  if (!count || *count > kMaxHostInitializerElements)
    return nullptr;
  std::string error;
  FailureOr<ArrayRef<char>> data = weights->getData(name, error);
  if (failed(data))
    return nullptr;
  ConstTensor value = makeConstTensor(weight->dtype, weight->shape, *data);
  return &known
              .try_emplace(name, std::move(value),
                           getOnnxTensorLoc(&ctx, name))
              .first->second.first;
}

RankedTensorType OnnxImporter::getType(StringRef name) {
  if (Value value = values.lookup(name))
    return cast<RankedTensorType>(value.getType());
  auto it = known.find(name);
  if (it != known.end())
    return getConstTensorType(&ctx, it->second.first);
  return {};
}

Value OnnxImporter::getValue(StringRef name) {
  if (Value value = values.lookup(name))
    return value;
  auto it = known.find(name);
  if (it == known.end())
    return {};
  const auto &[tensor, loc] = it->second;
  Value value;
  if (tensor.isSplat() || tensor.getNumElements() <= kMaxInlineConstantElements) {
    value = ConstantOp::create(builder, loc, getConstTensorType(&ctx, tensor),
                               cast<ElementsAttr>(toAttr(&ctx, tensor)));
  } else {
    // Large computed values become weights named after their tensor, like
    // large ONNX Constants.
    std::string error;
    LogicalResult added = weights->addBytes(name, tensor.dtype, tensor.shape,
                                            toBytes(tensor), error);
    (void)added;
    assert(succeeded(added) && "a computed tensor has a valid shape");
    value = WeightOp::create(builder, loc, getConstTensorType(&ctx, tensor),
                             name);
  }
  values[name] = value;
  return value;
}

FailureOr<ImportedModel> OnnxImporter::run(StringRef bytes) {
  ctx.loadDialect<AutoparDialect, func::FuncDialect>();
  result.sha256 = computeSha256(bytes);
  model = std::make_shared<onnx::ModelProto>();
  SmallString<256> baseDir(bufferName);
  llvm::sys::path::remove_filename(baseDir);
  weights = std::make_unique<OnnxWeightStore>(model, std::string(baseDir));
  result.module = ModuleOp::create(fileLoc);

  try {
    if (failed(parse(bytes)) || failed(checkSupportedNodes()) ||
        failed(checkEmptyInputNames()) || failed(applyInputShapes()) ||
        failed(applyBatch()))
      return failure();
    // Probe the initializers' external data: ONNX 1.12's checker fails when
    // it is missing, which planning-only imports allow.
    OnnxWeightStore probe(model, std::string(baseDir));
    std::string error;
    for (onnx::TensorProto &init :
         *model->mutable_graph()->mutable_initializer()) {
      SmallVector<int64_t> shape(init.dims().begin(), init.dims().end());
      std::optional<DType> dtype = getDTypeFromOnnx(init.data_type());
      if (init.data_location() == onnx::TensorProto::EXTERNAL && dtype &&
          getNumElements(shape) &&
          failed(probe.addTensor(init.name(), *dtype, shape, init, error)))
        return emitError() << error;
    }
    bool external = probe.hasExternalData();
    bool externalMissing = external && failed(probe.checkExternalData(error));
    if (externalMissing && options.requireWeightData) {
      InFlightDiagnostic diag = emitError();
      diag << error;
      diag.attachNote() << "compiling needs the weights' data; 'autopar "
                           "import' and 'autopar plan' do not";
      return diag;
    }
    if (!externalMissing && failed(runOnnxChecks(external)))
      return failure();
    if (failed(importGraph()))
      return failure();
  } catch (const std::exception &e) {
    return emitError() << "cannot import '" << bufferName
                       << "': " << toOneLine(e.what());
  } catch (...) {
    return emitError() << "cannot import '" << bufferName
                       << "': unknown exception";
  }
  if (failed(verify(*result.module)))
    return failure();
  result.weights = std::move(weights);
  return std::move(result);
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

FailureOr<ImportedModel>
mlir::autopar::importOnnxBuffer(StringRef bytes, StringRef bufferName,
                                MLIRContext &ctx,
                                const ImportOptions &options) {
  OnnxImporter importer(ctx, bufferName, options);
  return importer.run(bytes);
}

FailureOr<ImportedModel>
mlir::autopar::importOnnxFile(StringRef path, MLIRContext &ctx,
                              const ImportOptions &options) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!buffer)
    return mlir::emitError(FileLineColLoc::get(&ctx, path, 0, 0))
           << "cannot open model file '" << path
           << "': " << buffer.getError().message();
  return importOnnxBuffer((*buffer)->getBuffer(), path, ctx, options);
}

LogicalResult mlir::autopar::parseInputShape(StringRef text,
                                             InputShapes &shapes,
                                             std::string &error) {
  auto [name, dims] = text.split('=');
  name = name.trim();
  dims = dims.trim();
  if (!text.contains('=') || name.empty() || dims.empty()) {
    error = "invalid --input-shape '" + text.str() +
            "': expected NAME=D0xD1x... (e.g. x=8x128)";
    return failure();
  }
  SmallVector<int64_t> shape;
  SmallVector<StringRef> parts;
  dims.split(parts, 'x');
  for (StringRef part : parts) {
    int64_t size = 0;
    if (part.trim().getAsInteger(10, size)) {
      error = "invalid --input-shape '" + text.str() + "': '" + part.str() +
              "' is not an integer size (expected NAME=D0xD1x..., e.g. "
              "x=8x128)";
      return failure();
    }
    shape.push_back(size);
  }
  if (!shapes.emplace(name.str(), std::move(shape)).second) {
    error = "--input-shape gives input '" + name.str() + "' twice";
    return failure();
  }
  return success();
}

std::string mlir::autopar::formatInputShapes(const InputShapes &shapes) {
  std::string text;
  for (const auto &[name, shape] : shapes) {
    if (!text.empty())
      text += ",";
    text += name + "=";
    for (auto [index, size] : llvm::enumerate(shape))
      text += (index ? "x" : "") + std::to_string(size);
  }
  return text;
}
