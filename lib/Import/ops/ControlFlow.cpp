//===- ControlFlow.cpp - If, Loop and Scan --------------------------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Importers of the control-flow operators. Their subgraphs are imported
// inline into the one function autopar compiles: If with a condition known
// at compile time imports the branch taken; otherwise both branches and a
// `where` per output selecting at run time. Loop (a trip count and
// conditions known at compile time) and Scan are unrolled, the body
// imported once per iteration with its formal inputs bound to the carried
// values (the iteration number as a known value, so shape computations on
// it fold).
//
//===----------------------------------------------------------------------===//

#include "../Importer.h"

#include "autopar/Dialect/Autopar/IR/Autopar.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::importer;

using NodeRef = OnnxImporter::NodeRef;

/// The most iterations a Loop without a trip count is unrolled to.
static constexpr int64_t kMaxUnrolledIterations = 100000;

void OnnxImporter::registerControlFlowImporters(OpImporterRegistry &registry) {
  registry.add("If", 1, &OnnxImporter::importIf);
  registry.add("Loop", 1, &OnnxImporter::importLoop);
  registry.add("Scan", 8, &OnnxImporter::importScan);
}

/// Appends the names `graph` defines (its inputs and every node output,
/// nested subgraphs included) to `names`.
static void collectDefinedNames(const onnx::GraphProto &graph,
                                SmallVectorImpl<std::string> &names) {
  for (const onnx::ValueInfoProto &input : graph.input())
    names.push_back(input.name());
  for (const onnx::NodeProto &node : graph.node()) {
    for (const std::string &name : node.output())
      if (!name.empty())
        names.push_back(name);
    for (const onnx::AttributeProto &attr : node.attribute()) {
      if (attr.has_g())
        collectDefinedNames(attr.g(), names);
      for (const onnx::GraphProto &g : attr.graphs())
        collectDefinedNames(g, names);
    }
  }
}

/// Checks that the node has inputs from `first` on, none of them absent
/// (the variadic inputs of Loop and Scan).
LogicalResult OnnxImporter::checkPresent(const NodeRef &ref, int first) {
  if (ref.node->input_size() <= first)
    return emitError(ref) << "expected more than " << first << " inputs, got "
                          << ref.node->input_size();
  for (int i = first; i < ref.node->input_size(); ++i)
    if (!hasInput(ref, i))
      return emitError(ref) << "input " << i
                            << " has an empty name, but it is one of the "
                               "variadic inputs, which are not optional";
  return success();
}

/// The subgraph attribute `name` of `ref`'s node, or null.
static onnx::GraphProto *findGraphAttr(const NodeRef &ref, StringRef name) {
  for (onnx::AttributeProto &attr : *ref.node->mutable_attribute())
    if (attr.name() == name && attr.has_g())
      return attr.mutable_g();
  return nullptr;
}

FailureOr<SmallVector<OnnxImporter::SubgraphValue>>
OnnxImporter::importSubgraph(const NodeRef &ref, onnx::GraphProto &graph,
                             ArrayRef<SubgraphValue> inputs) {
  if ((size_t)graph.input_size() != inputs.size())
    return emitError(ref) << "subgraph '" << graph.name() << "' has "
                          << graph.input_size() << " inputs, expected "
                          << inputs.size();
  // A body imported again (the next iteration) defines the same names.
  SmallVector<std::string> defined;
  collectDefinedNames(graph, defined);
  for (const std::string &name : defined) {
    values.erase(name);
    known.erase(name);
  }
  for (auto [info, value] : llvm::zip(graph.input(), inputs)) {
    if (value.known)
      known.try_emplace(info.name(), *value.known, fileLoc);
    else
      values[info.name()] = value.value;
  }
  const OpImporterRegistry &registry = OpImporterRegistry::get();
  for (auto [index, node] : llvm::enumerate(*graph.mutable_node())) {
    NodeRef nodeRef{&node,
                    node.name().empty() ? ref.name + "/#" + std::to_string(index)
                                        : node.name(),
                    ref.opset};
    if (!node.domain().empty() && node.domain() != "ai.onnx")
      return emitError(nodeRef) << "unsupported operator";
    if (!registry.lookup(node.op_type(), ref.opset))
      return emitError(nodeRef) << "unsupported operator";
    if (failed(importNode(nodeRef)))
      return failure();
  }
  SmallVector<SubgraphValue> outputs;
  for (const onnx::ValueInfoProto &output : graph.output()) {
    SubgraphValue result;
    if (const ConstTensor *value = getKnown(output.name()))
      result.known = *value;
    else
      result.value = getValue(output.name());
    if (!result.known && !result.value)
      return emitError(ref) << "output '" << output.name() << "' of subgraph '"
                            << graph.name() << "' is not defined";
    outputs.push_back(std::move(result));
  }
  return outputs;
}

/// The IR value of a subgraph value (a known one as a constant).
Value OnnxImporter::materialize(Location loc, const SubgraphValue &value) {
  if (!value.known)
    return value.value;
  return ConstantOp::create(builder, loc,
                            getConstTensorType(&ctx, *value.known),
                            cast<ElementsAttr>(toAttr(&ctx, *value.known)));
}

/// Records subgraph value `value` as output `index` of `ref`.
LogicalResult OnnxImporter::setSubgraphOutput(const NodeRef &ref,
                                              unsigned index,
                                              const SubgraphValue &value,
                                              Location loc) {
  if (value.known)
    return setKnownOutput(ref, index, *value.known, loc);
  return setOutput(ref, index, value.value);
}

/// If: a condition known at compile time imports the branch taken only;
/// otherwise both branches are imported and each output is a `where` on
/// the condition, which needs outputs of the same type in both branches.
LogicalResult OnnxImporter::importIf(const NodeRef &ref, Location loc) {
  if (failed(checkNode(ref, 1, 1, {"then_branch", "else_branch"},
                       ref.node->output_size())) ||
      failed(checkInputType(ref, 0, kBool)))
    return failure();
  onnx::GraphProto *thenBranch = findGraphAttr(ref, "then_branch");
  onnx::GraphProto *elseBranch = findGraphAttr(ref, "else_branch");
  if (!thenBranch || !elseBranch)
    return emitError(ref) << "attributes 'then_branch' and 'else_branch' "
                             "must be graphs";
  int numOutputs = ref.node->output_size();
  if (thenBranch->output_size() != numOutputs ||
      elseBranch->output_size() != numOutputs)
    return emitError(ref) << "the branches must have " << numOutputs
                          << " outputs, got " << thenBranch->output_size()
                          << " and " << elseBranch->output_size();
  if (inputType(ref, 0).getNumElements() != 1)
    return emitError(ref) << "the condition must have one element, got "
                          << typeToString(inputType(ref, 0));
  if (const ConstTensor *cond = knownInput(ref, 0)) {
    FailureOr<SmallVector<SubgraphValue>> outputs =
        importSubgraph(ref, cond->getInt(0) ? *thenBranch : *elseBranch, {});
    if (failed(outputs))
      return failure();
    for (int i = 0; i < numOutputs; ++i)
      if (!ref.node->output(i).empty() &&
          failed(setSubgraphOutput(ref, i, (*outputs)[i], loc)))
        return failure();
    return success();
  }
  FailureOr<SmallVector<SubgraphValue>> thenOutputs =
      importSubgraph(ref, *thenBranch, {});
  if (failed(thenOutputs))
    return failure();
  FailureOr<SmallVector<SubgraphValue>> elseOutputs =
      importSubgraph(ref, *elseBranch, {});
  if (failed(elseOutputs))
    return failure();
  Value cond = input(ref, 0);
  for (int i = 0; i < numOutputs; ++i) {
    if (ref.node->output(i).empty())
      continue;
    Value a = materialize(loc, (*thenOutputs)[i]);
    Value b = materialize(loc, (*elseOutputs)[i]);
    if (a.getType() != b.getType())
      return emitError(ref)
             << "output " << i << " has type " << typeToString(a.getType())
             << " in then_branch and " << typeToString(b.getType())
             << " in else_branch; with a condition known only at run time "
                "both branches must give the same type";
    FailureOr<Value> selected = createOp<WhereOp>(ref, loc, {cond, a, b});
    if (failed(selected) || failed(setOutput(ref, i, *selected)))
      return failure();
  }
  return success();
}

/// Stacks `parts` (each of one iteration) along a new dimension `axis`.
FailureOr<Value> OnnxImporter::stack(const NodeRef &ref, Location loc,
                                     ArrayRef<Value> parts, int64_t axis) {
  SmallVector<Value> expanded;
  for (Value part : parts) {
    auto type = cast<RankedTensorType>(part.getType());
    if (type != cast<RankedTensorType>(parts.front().getType()))
      return emitError(ref) << "scan outputs of different types "
                            << typeToString(parts.front().getType()) << " and "
                            << typeToString(type) << " cannot be stacked";
    SmallVector<int64_t> shape(type.getShape());
    shape.insert(shape.begin() + axis, 1);
    expanded.push_back(createReshape(loc, part, shape));
  }
  if (expanded.size() == 1)
    return expanded.front();
  ConcatOp::Properties props;
  props.setAxis(builder.getI64IntegerAttr(axis));
  return createOp<ConcatOp>(ref, loc, expanded, props);
}

/// Loop, unrolled: the trip count (when present) and the condition (the
/// input and each iteration's body output, when present) must be known at
/// compile time. Scan outputs are stacked along a new leading dimension.
LogicalResult OnnxImporter::importLoop(const NodeRef &ref, Location loc) {
  // M and cond are optional, the loop-carried values not.
  if (failed(checkNode(ref, 0, ref.node->input_size(), {"body"},
                       ref.node->output_size())) ||
      failed(checkPresent(ref, 2)))
    return failure();
  onnx::GraphProto *body = findGraphAttr(ref, "body");
  if (!body)
    return emitError(ref) << "attribute 'body' must be a graph";
  int numCarried = ref.node->input_size() - 2;
  int numScans = body->output_size() - 1 - numCarried;
  if (body->input_size() != numCarried + 2 || numScans < 0 ||
      ref.node->output_size() > numCarried + numScans)
    return emitError(ref) << "body has " << body->input_size()
                          << " inputs and " << body->output_size()
                          << " outputs for " << numCarried
                          << " loop-carried values";
  std::optional<int64_t> tripCount;
  if (hasInput(ref, 0)) {
    FailureOr<SmallVector<int64_t>> m = requireKnownInts(ref, 0, "M");
    if (failed(m))
      return failure();
    if (m->size() != 1)
      return emitError(ref) << "input 0 ('M') must have one element";
    tripCount = m->front();
  }
  bool cond = true;
  if (hasInput(ref, 1)) {
    FailureOr<SmallVector<int64_t>> c = requireKnownInts(ref, 1, "cond");
    if (failed(c))
      return failure();
    if (c->size() != 1)
      return emitError(ref) << "input 1 ('cond') must have one element";
    cond = c->front() != 0;
  }
  if (!tripCount && !hasInput(ref, 1))
    return emitError(ref) << "a Loop without a trip count and a condition "
                             "never ends";
  SmallVector<SubgraphValue> carried;
  for (int i = 0; i < numCarried; ++i) {
    SubgraphValue v;
    if (const ConstTensor *k = knownInput(ref, 2 + i))
      v.known = *k;
    else
      v.value = input(ref, 2 + i);
    carried.push_back(std::move(v));
  }
  SmallVector<SmallVector<Value>> scans(numScans);
  int64_t limit = tripCount ? *tripCount : kMaxUnrolledIterations;
  int64_t iter = 0;
  for (; iter < limit && cond; ++iter) {
    SmallVector<SubgraphValue> inputs;
    SubgraphValue iterNum, condIn;
    iterNum.known = makeI64Vector({iter});
    iterNum.known->shape = {};
    ConstTensor condTensor;
    condTensor.dtype = DType::Bool;
    condTensor.ints = {1};
    condIn.known = condTensor;
    inputs.push_back(iterNum);
    inputs.push_back(condIn);
    llvm::append_range(inputs, carried);
    FailureOr<SmallVector<SubgraphValue>> outputs =
        importSubgraph(ref, *body, inputs);
    if (failed(outputs))
      return failure();
    const SubgraphValue &condOut = (*outputs)[0];
    if (!condOut.known)
      return emitError(ref) << "the body's condition output '"
                            << body->output(0).name()
                            << "' must be known at compile time (autopar "
                               "unrolls Loop)";
    cond = condOut.known->getInt(0) != 0;
    for (int i = 0; i < numCarried; ++i)
      carried[i] = (*outputs)[1 + i];
    for (int i = 0; i < numScans; ++i)
      scans[i].push_back(materialize(loc, (*outputs)[1 + numCarried + i]));
  }
  if (!tripCount && cond)
    return emitError(ref) << "the loop did not end within "
                          << kMaxUnrolledIterations << " iterations";
  for (int i = 0; i < numCarried && i < ref.node->output_size(); ++i)
    if (!ref.node->output(i).empty() &&
        failed(setSubgraphOutput(ref, i, carried[i], loc)))
      return failure();
  for (int i = 0; i < numScans; ++i) {
    int index = numCarried + i;
    if (index >= ref.node->output_size() || !isOutputUsed(ref, index))
      continue;
    if (scans[i].empty())
      return emitError(ref) << "scan output " << i
                            << " of a loop that runs no iteration is empty";
    FailureOr<Value> stacked = stack(ref, loc, scans[i], 0);
    if (failed(stacked) || failed(setOutput(ref, index, *stacked)))
      return failure();
  }
  return success();
}

/// Scan, unrolled over the scanned axis. Opset 8 has a leading batch
/// dimension on every input and output (each batch entry scanned on its
/// own) and an optional sequence_lens input, which must be absent or cover
/// the whole sequence; from opset 9 the scan axes and directions are
/// attributes.
LogicalResult OnnxImporter::importScan(const NodeRef &ref, Location loc) {
  bool v8 = ref.opset < 9;
  SmallVector<StringRef> allowed = {"body", "num_scan_inputs"};
  if (v8)
    allowed.push_back("directions");
  else
    allowed.append({"scan_input_axes", "scan_input_directions",
                    "scan_output_axes", "scan_output_directions"});
  // Opset 8's first input (sequence_lens) is optional, the others not.
  if (failed(checkNode(ref, 0, ref.node->input_size(), allowed,
                       ref.node->output_size())) ||
      failed(checkPresent(ref, v8 ? 1 : 0)))
    return failure();
  onnx::GraphProto *body = findGraphAttr(ref, "body");
  if (!body)
    return emitError(ref) << "attribute 'body' must be a graph";
  FailureOr<int64_t> numScanInputs = intAttr(ref, "num_scan_inputs", -1);
  if (failed(numScanInputs))
    return failure();
  int first = v8 ? 1 : 0;
  int numInputs = ref.node->input_size() - first;
  int numScanIn = *numScanInputs, numStates = numInputs - numScanIn;
  int numScanOut = body->output_size() - numStates;
  if (numScanIn < 1 || numStates < 0 || numScanOut < 0 ||
      body->input_size() != numInputs)
    return emitError(ref) << "num_scan_inputs = " << numScanIn << " and "
                          << numInputs << " inputs do not match a body of "
                          << body->input_size() << " inputs and "
                          << body->output_size() << " outputs";
  auto intsOr = [&](StringRef name, int count,
                    int64_t value) -> FailureOr<SmallVector<int64_t>> {
    FailureOr<SmallVector<int64_t>> v =
        intsAttr(ref, name, SmallVector<int64_t>(count, value));
    if (succeeded(v) && (int)v->size() != count)
      return emitError(ref) << "attribute '" << name << "' must have " << count
                            << " entries, got " << v->size();
    return v;
  };
  FailureOr<SmallVector<int64_t>> inAxes =
      intsOr("scan_input_axes", numScanIn, 0);
  FailureOr<SmallVector<int64_t>> inDirs =
      intsOr(v8 ? "directions" : "scan_input_directions", numScanIn, 0);
  FailureOr<SmallVector<int64_t>> outAxes =
      intsOr("scan_output_axes", numScanOut, 0);
  FailureOr<SmallVector<int64_t>> outDirs =
      intsOr("scan_output_directions", numScanOut, 0);
  if (failed(inAxes) || failed(inDirs) || failed(outAxes) || failed(outDirs))
    return failure();

  // Opset 8: a batch dimension in front; the scan axis is 1 of the inputs.
  int64_t batch = 1;
  if (v8) {
    batch = inputType(ref, first).getDimSize(0);
    for (int i = 0; i < numInputs; ++i)
      if (inputType(ref, first + i).getRank() < 1 ||
          inputType(ref, first + i).getDimSize(0) != batch)
        return emitError(ref) << "every input must have the batch size "
                              << batch << " in dimension 0";
  }
  // Scan inputs: axes normalized, the sequence length.
  int64_t length = -1;
  SmallVector<int64_t> axes;
  for (int j = 0; j < numScanIn; ++j) {
    RankedTensorType type = inputType(ref, first + numStates + j);
    int64_t rank = type.getRank() - (v8 ? 1 : 0);
    FailureOr<int64_t> axis = normalizeAxis(ref, (*inAxes)[j], rank);
    if (failed(axis))
      return failure();
    int64_t axisInInput = *axis + (v8 ? 1 : 0);
    axes.push_back(axisInInput);
    int64_t size = type.getDimSize(axisInInput);
    if (length >= 0 && size != length)
      return emitError(ref) << "scan inputs have sequence lengths " << length
                            << " and " << size;
    length = size;
  }
  if (v8 && hasInput(ref, 0)) {
    FailureOr<SmallVector<int64_t>> lens =
        requireKnownInts(ref, 0, "sequence_lens");
    if (failed(lens))
      return failure();
    for (int64_t l : *lens)
      if (l != length)
        return emitError(ref) << "sequence_lens shorter than the sequence ("
                              << l << " < " << length
                              << ") are not supported";
  }

  // Per batch entry (one without opset 8's batch dimension), unroll.
  SmallVector<SmallVector<Value>> stateResults(numStates);
  SmallVector<SmallVector<Value>> scanResults(numScanOut);
  auto sliceAt = [&](Value v, int64_t dim, int64_t index) -> Value {
    auto type = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> starts(type.getRank(), 0), sizes(type.getShape());
    starts[dim] = index;
    sizes[dim] = 1;
    Value s = SliceOp::create(builder, loc, type.clone(sizes), v,
                              builder.getDenseI64ArrayAttr(starts),
                              builder.getDenseI64ArrayAttr(SmallVector<int64_t>(
                                  type.getRank(), 1)));
    SmallVector<int64_t> dropped(type.getShape());
    dropped.erase(dropped.begin() + dim);
    return createReshape(loc, s, dropped);
  };
  for (int64_t b = 0; b < batch; ++b) {
    SmallVector<SubgraphValue> states;
    for (int i = 0; i < numStates; ++i) {
      SubgraphValue s;
      Value v = input(ref, first + i);
      if (v8)
        s.value = sliceAt(v, 0, b);
      else if (const ConstTensor *k = knownInput(ref, first + i))
        s.known = *k;
      else
        s.value = v;
      states.push_back(std::move(s));
    }
    SmallVector<SmallVector<Value>> outs(numScanOut);
    for (int64_t t = 0; t < length; ++t) {
      SmallVector<SubgraphValue> inputs(states);
      for (int j = 0; j < numScanIn; ++j) {
        Value v = input(ref, first + numStates + j);
        if (v8)
          v = sliceAt(v, 0, b);
        int64_t axis = axes[j] - (v8 ? 1 : 0);
        int64_t at = (*inDirs)[j] ? length - 1 - t : t;
        SubgraphValue e;
        e.value = sliceAt(v, axis, at);
        inputs.push_back(e);
      }
      FailureOr<SmallVector<SubgraphValue>> outputs =
          importSubgraph(ref, *body, inputs);
      if (failed(outputs))
        return failure();
      for (int i = 0; i < numStates; ++i)
        states[i] = (*outputs)[i];
      for (int j = 0; j < numScanOut; ++j)
        outs[j].push_back(materialize(loc, (*outputs)[numStates + j]));
    }
    for (int i = 0; i < numStates; ++i)
      stateResults[i].push_back(materialize(loc, states[i]));
    for (int j = 0; j < numScanOut; ++j) {
      if (outs[j].empty())
        return emitError(ref) << "scan output " << j
                              << " of an empty sequence is empty";
      if ((*outDirs)[j])
        std::reverse(outs[j].begin(), outs[j].end());
      auto elemType = cast<RankedTensorType>(outs[j].front().getType());
      FailureOr<int64_t> axis =
          normalizeAxis(ref, (*outAxes)[j], elemType.getRank() + 1);
      if (failed(axis))
        return failure();
      FailureOr<Value> stacked = stack(ref, loc, outs[j], *axis);
      if (failed(stacked))
        return failure();
      scanResults[j].push_back(*stacked);
    }
  }
  // Results: opset 8 stacks the batch entries again.
  auto result = [&](ArrayRef<Value> perBatch) -> FailureOr<Value> {
    if (!v8)
      return perBatch.front();
    return stack(ref, loc, perBatch, 0);
  };
  for (int i = 0; i < numStates + numScanOut; ++i) {
    if (i >= ref.node->output_size() || ref.node->output(i).empty())
      continue;
    FailureOr<Value> value = i < numStates
                                 ? result(stateResults[i])
                                 : result(scanResults[i - numStates]);
    if (failed(value) || failed(setOutput(ref, i, *value)))
      return failure();
  }
  return success();
}
