//===- Importer.h - The ONNX importer's private interface -------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The OnnxImporter class, shared by the translation units of AutoparImport:
// OnnxImporter.cpp (parsing, ONNX checks, types, the graph), OpImporters.cpp
// (what operator importers share, the registry of importers), ops/<Family>.cpp
// (the importers of one operator family) and ShapeFolding.cpp (host evaluation
// of shape computations). Private to lib/Import: it includes ONNX headers.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_LIB_IMPORT_IMPORTER_H
#define AUTOPAR_LIB_IMPORT_IMPORTER_H

#include "OnnxUtils.h"
#include "ShapeFolding.h"

#include "autopar/Dialect/Autopar/IR/Autopar.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <climits>
#include <optional>
#include <string>
#include <vector>

namespace mlir::autopar::importer {

/// Prints `type` without the quotes diagnostics put around types.
std::string typeToString(Type type);

/// The number of elements of a static shape.
inline int64_t product(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// True for the element types a node may read.
inline bool isSupportedNodeType(DType dtype) {
  return dtype == DType::F32 || dtype == DType::I64 || dtype == DType::I32 ||
         dtype == DType::Bool;
}

/// Element types operator importers accept (checkInputType).
inline constexpr DType kFloat[] = {DType::F32};
inline constexpr DType kBool[] = {DType::Bool};
inline constexpr DType kNumeric[] = {DType::F32, DType::I64, DType::I32};
inline constexpr DType kIndices[] = {DType::I64, DType::I32};
inline constexpr DType kQuantized[] = {DType::I8, DType::U8};
/// kNumeric and the 8-bit integers (arithmetic, comparisons, Min/Max/Clip).
inline constexpr DType kNumericOr8Bit[] = {DType::F32, DType::I64, DType::I32,
                                           DType::I8, DType::U8};
/// float32 and the 8-bit integers (MaxPool).
inline constexpr DType kFloatOr8Bit[] = {DType::F32, DType::I8, DType::U8};

class OnnxImporter;
class OpImporterRegistry;

/// Imports one model. Diagnostics are emitted at the location of the model
/// file and name the node, input or tensor concerned.
class OnnxImporter {
public:
  OnnxImporter(MLIRContext &ctx, StringRef bufferName,
               const ImportOptions &options)
      : ctx(ctx), bufferName(bufferName), options(options),
        fileLoc(FileLineColLoc::get(&ctx, bufferName, 0, 0)), builder(&ctx) {}

  FailureOr<ImportedModel> run(StringRef bytes);

  /// Registers every operator importer (each family's
  /// register<Family>Importers, in ops/<Family>.cpp).
  static void registerOpImporters(OpImporterRegistry &registry);

  /// Description of a node for diagnostics: "node 'NAME' (op OpType, opset
  /// N)", with `#index` for a node without a name.
  struct NodeRef {
    onnx::NodeProto *node;
    std::string name;
    int64_t opset;
    std::string describe() const;
  };

private:
  /// An error at the model; after `--batch` changed a static input size, it
  /// carries a note naming the inputs changed.
  InFlightDiagnostic emitError() {
    InFlightDiagnostic diag = mlir::emitError(fileLoc);
    if (!batchChanges.empty())
      diag.attachNote() << describeBatchChanges();
    return diag;
  }
  InFlightDiagnostic emitError(const NodeRef &ref) {
    return emitError() << ref.describe() << ": ";
  }

  //===--------------------------------------------------------------------===//
  // Model (OnnxImporter.cpp)
  //===--------------------------------------------------------------------===//

  LogicalResult parse(StringRef bytes);
  LogicalResult emitParseError(StringRef message);
  LogicalResult checkSupportedNodes();
  /// Checks every empty input name against the operator's ONNX schema: an
  /// empty name means "absent", which only an optional formal input may be.
  /// Runs before ONNX's own checker and shape inference, which let empty
  /// names on required and variadic inputs through.
  LogicalResult checkEmptyInputNames();
  LogicalResult runOnnxChecks(bool externalData);
  LogicalResult importGraph();

  /// Gives the runtime inputs named in ImportOptions::inputShapes their
  /// static shapes (in the model, so that ONNX shape inference sees them).
  LogicalResult applyInputShapes();
  /// Sets dimension 0 of the other runtime inputs to `inputShapes.batch`.
  LogicalResult applyBatch();
  /// "--batch N changed dimension 0 of input 'x' (8 in the model)", for
  /// errors after a static size was overridden.
  std::string describeBatchChanges() const;
  /// The static type of runtime input `input`; a symbolic or unknown
  /// dimension is an error that names it and the --input-shape resolving it.
  FailureOr<RankedTensorType>
  convertInputType(const onnx::ValueInfoProto &input);
  FailureOr<RankedTensorType>
  getTensorType(int32_t dataType, ArrayRef<int64_t> shape, const Twine &what);
  /// The first node reading tensor `name`, for diagnostics about graph inputs
  /// and initializers; nullopt when none does.
  std::optional<NodeRef> findConsumer(StringRef name);
  LogicalResult checkAgainstOnnxType(Type type, StringRef tensorName,
                                     const NodeRef *ref) {
    return checkAgainstOnnxType(type, tensorName, onnxTypes.lookup(tensorName),
                                ref);
  }
  LogicalResult checkAgainstOnnxType(Type type, StringRef tensorName,
                                     const onnx::TypeProto *onnxType,
                                     const NodeRef *ref);

  /// Decodes the value attribute of a Constant node (value, value_float(s),
  /// value_int(s)) into a known value or, when large, a weight.
  LogicalResult importConstant(const NodeRef &ref, Location loc);

  //===--------------------------------------------------------------------===//
  // Values
  //===--------------------------------------------------------------------===//

  /// The IR value of tensor `name`, materializing a known value as
  /// `autopar.constant` (or a weight when large and not a splat) on first
  /// use. Null when `name` is not defined.
  Value getValue(StringRef name);
  /// The compile-time value of tensor `name`, or nullptr. Small initializers
  /// are decoded on first request.
  const ConstTensor *getKnown(StringRef name);
  /// The type of tensor `name` (defined or known), or null.
  RankedTensorType getType(StringRef name);

  //===--------------------------------------------------------------------===//
  // Nodes (OpImporters.cpp)
  //===--------------------------------------------------------------------===//

  LogicalResult importNode(const NodeRef &ref);
  LogicalResult dispatch(const NodeRef &ref, Location loc);

  /// `max` of checkNode for a variadic operator (Concat, Einsum): any number
  /// of inputs from `min` on, every one of them required.
  static constexpr unsigned kVariadic = UINT_MAX;

  /// Checks the input count (`min`..`max`), that at most `maxOutputs` outputs
  /// are present (the first required unless `allOutputsOptional`, as for
  /// the recurrent operators) and that every attribute is in
  /// `allowed`. Inputs [0, min) are required and inputs [min, max) optional,
  /// except for a variadic operator (`max == kVariadic`), whose inputs are
  /// all required: a required input with an empty name is an error naming
  /// its index. Importers read an optional input only through hasInput().
  LogicalResult checkNode(const NodeRef &ref, unsigned min, unsigned max,
                          ArrayRef<StringRef> allowed, unsigned maxOutputs = 1,
                          bool allOutputsOptional = false);
  /// True when output `index` of the node is present and read by another node
  /// or the graph.
  bool isOutputUsed(const NodeRef &ref, unsigned index) const;
  /// Errors when output `index` of the node is present and read by another
  /// node or the graph; `what` names it.
  LogicalResult checkOutputUnused(const NodeRef &ref, unsigned index,
                                  StringRef what);
  /// Checks that the element types of all inputs are supported and, when
  /// `allowed` is not empty, that input 0 has one of them.
  LogicalResult checkElementTypes(const NodeRef &ref);
  LogicalResult checkInputType(const NodeRef &ref, unsigned index,
                               ArrayRef<DType> allowed);

  bool hasInput(const NodeRef &ref, unsigned index) const {
    return index < (unsigned)ref.node->input_size() &&
           !ref.node->input(index).empty();
  }
  Value input(const NodeRef &ref, unsigned index) {
    return hasInput(ref, index) ? getValue(ref.node->input(index)) : Value();
  }
  RankedTensorType inputType(const NodeRef &ref, unsigned index) {
    return hasInput(ref, index) ? getType(ref.node->input(index))
                                : RankedTensorType();
  }
  const ConstTensor *knownInput(const NodeRef &ref, unsigned index) {
    return hasInput(ref, index) ? getKnown(ref.node->input(index)) : nullptr;
  }
  /// True when every present input is known at compile time.
  bool allInputsKnown(const NodeRef &ref);
  /// The known value of input `index`, or an error naming the operand `what`
  /// that must be a compile-time constant.
  FailureOr<const ConstTensor *> requireKnown(const NodeRef &ref,
                                              unsigned index, StringRef what);
  /// A known integer vector (or scalar) operand as int64 values.
  FailureOr<SmallVector<int64_t>>
  requireKnownInts(const NodeRef &ref, unsigned index, StringRef what);

  const onnx::AttributeProto *findAttr(const NodeRef &ref, StringRef name);
  FailureOr<int64_t> intAttr(const NodeRef &ref, StringRef name,
                             int64_t defaultValue);
  FailureOr<float> floatAttr(const NodeRef &ref, StringRef name,
                             float defaultValue);
  FailureOr<std::string> stringAttr(const NodeRef &ref, StringRef name,
                                    StringRef defaultValue);
  FailureOr<SmallVector<int64_t>> intsAttr(const NodeRef &ref, StringRef name,
                                           ArrayRef<int64_t> defaultValue);
  /// Normalizes `axis` for rank `rank` (negative counts from the end).
  FailureOr<int64_t> normalizeAxis(const NodeRef &ref, int64_t axis,
                                   int64_t rank);
  /// Normalizes, sorts and checks the uniqueness of `axes` for rank `rank`.
  FailureOr<SmallVector<int64_t>>
  normalizeAxes(const NodeRef &ref, ArrayRef<int64_t> axes, int64_t rank);

  /// Records output `index` as IR value `value` (checked against ONNX).
  LogicalResult setOutput(const NodeRef &ref, unsigned index, Value value);
  /// Records output `index` as a known value, materialized at `loc` on use.
  LogicalResult setKnownOutput(const NodeRef &ref, unsigned index,
                               ConstTensor value, Location loc);

  /// Builds `OpTy` with its inferred result type; an inference failure is an
  /// error naming the node.
  template <typename OpTy>
  FailureOr<Value> createOp(const NodeRef &ref, Location loc,
                            ValueRange operands,
                            const typename OpTy::Properties &properties = {});
  /// An `autopar.constant` of `shape` (default: a scalar) and element type
  /// `element` filled with `value`.
  Value createScalarConstant(Location loc, Type element, double value,
                             ArrayRef<int64_t> shape = {});
  /// Builds autopar.reshape of `value` to `shape` (no op when it matches).
  Value createReshape(Location loc, Value value, ArrayRef<int64_t> shape);

  // Operator families, one file each under ops/; each registers its
  // importers by op type and since-version.
  static void registerContractionImporters(OpImporterRegistry &registry);
  static void registerConvPoolImporters(OpImporterRegistry &registry);
  static void registerDataMovementImporters(OpImporterRegistry &registry);
  static void registerElementwiseImporters(OpImporterRegistry &registry);
  static void registerLossImporters(OpImporterRegistry &registry);
  static void registerNormalizationImporters(OpImporterRegistry &registry);
  static void registerReductionImporters(OpImporterRegistry &registry);
  static void registerRecurrentImporters(OpImporterRegistry &registry);
  static void registerControlFlowImporters(OpImporterRegistry &registry);
  static void registerResizeImporters(OpImporterRegistry &registry);
  static void registerShapeImporters(OpImporterRegistry &registry);
  static void registerSignalImporters(OpImporterRegistry &registry);
  static void registerQuantizationImporters(OpImporterRegistry &registry);
  static void registerRandomImporters(OpImporterRegistry &registry);
  /// True for the operators that take int8/uint8 tensors (the quantized
  /// family, Cast, the views and transposes, which do no arithmetic, and the
  /// integer arithmetic, comparisons, Min/Max/Clip, Where, MaxPool and
  /// BitShift, whose lowerings take the signedness from the element type);
  /// every other operator rejects them.
  static bool acceptsQuantizedTypes(StringRef opType);

  LogicalResult importIdentity(const NodeRef &ref, Location loc);
  LogicalResult importConstantNode(const NodeRef &ref, Location loc);
  LogicalResult importMatMul(const NodeRef &ref, Location loc);
  LogicalResult importUnary(const NodeRef &ref, Location loc);
  LogicalResult importBinary(const NodeRef &ref, Location loc);
  LogicalResult importBitShift(const NodeRef &ref, Location loc);
  LogicalResult importVariadic(const NodeRef &ref, Location loc);
  LogicalResult importArgReduce(const NodeRef &ref, Location loc);
  LogicalResult importGatherElements(const NodeRef &ref, Location loc);
  LogicalResult importPad(const NodeRef &ref, Location loc);
  LogicalResult importTile(const NodeRef &ref, Location loc);
  LogicalResult importDepthToSpace(const NodeRef &ref, Location loc);
  LogicalResult importSpaceToDepth(const NodeRef &ref, Location loc);
  LogicalResult importSize(const NodeRef &ref, Location loc);
  LogicalResult importEyeLike(const NodeRef &ref, Location loc);
  LogicalResult importGlobalMaxPool(const NodeRef &ref, Location loc);
  LogicalResult importMaxUnpool(const NodeRef &ref, Location loc);
  LogicalResult importGridSample(const NodeRef &ref, Location loc);
  FailureOr<Value> importMaxPoolIndices(const NodeRef &ref, Location loc,
                                        Value x, Value y,
                                        const MaxPoolOp::Properties &props,
                                        bool columnMajor);
  LogicalResult importInstanceNorm(const NodeRef &ref, Location loc);

  // Random numbers (ops/Random.cpp).
  LogicalResult importRandom(const NodeRef &ref, Location loc);
  LogicalResult importBernoulli(const NodeRef &ref, Location loc);
  /// Dropout in training mode with `ratio` > 0: sets output 0 (the kept
  /// elements scaled by 1 / (1 - ratio)) and returns the mask (true where
  /// kept).
  FailureOr<Value> importTrainingDropout(const NodeRef &ref, Location loc,
                                         double ratio);
  /// The Philox key of the node: its `seed` attribute, or a hash of
  /// ImportOptions::seed and the node's name.
  uint64_t getRandomKey(const NodeRef &ref);
  /// An autopar.random_uniform of `shape` (float32) keyed by the node.
  Value createUniform(const NodeRef &ref, Location loc, ArrayRef<int64_t> shape,
                      int64_t stream);
  LogicalResult importHardmax(const NodeRef &ref, Location loc);
  LogicalResult importOneHot(const NodeRef &ref, Location loc);
  LogicalResult importTrilu(const NodeRef &ref, Location loc);
  LogicalResult importLRN(const NodeRef &ref, Location loc);
  LogicalResult importMeanVarianceNorm(const NodeRef &ref, Location loc);
  LogicalResult importWindow(const NodeRef &ref, Location loc);
  LogicalResult importResize(const NodeRef &ref, Location loc);
  LogicalResult importConvTranspose(const NodeRef &ref, Location loc);
  LogicalResult importCompress(const NodeRef &ref, Location loc);
  LogicalResult importReverseSequence(const NodeRef &ref, Location loc);
  LogicalResult importTopK(const NodeRef &ref, Location loc);
  LogicalResult importScatterElements(const NodeRef &ref, Location loc);
  LogicalResult importScatterND(const NodeRef &ref, Location loc);
  LogicalResult importGatherND(const NodeRef &ref, Location loc);
  LogicalResult importRecurrent(const NodeRef &ref, Location loc);
  LogicalResult importIf(const NodeRef &ref, Location loc);
  LogicalResult importLoop(const NodeRef &ref, Location loc);
  LogicalResult importScan(const NodeRef &ref, Location loc);

  /// A value of a subgraph: known at compile time, or an IR value.
  struct SubgraphValue {
    Value value;
    std::optional<ConstTensor> known;
  };
  /// Imports the nodes of `graph`, a subgraph of `ref`'s node, inline with
  /// its formal inputs bound to `inputs` (names it defined in an earlier
  /// import, the previous iteration of an unrolled body, are dropped
  /// first); returns its outputs.
  FailureOr<SmallVector<SubgraphValue>>
  importSubgraph(const NodeRef &ref, onnx::GraphProto &graph,
                 ArrayRef<SubgraphValue> inputs);
  /// The IR value of `value` (a known one as `autopar.constant`).
  Value materialize(Location loc, const SubgraphValue &value);
  /// Records `value` as output `index` of `ref`'s node.
  LogicalResult setSubgraphOutput(const NodeRef &ref, unsigned index,
                                  const SubgraphValue &value, Location loc);
  /// Checks that inputs `first`.. exist and are all present.
  LogicalResult checkPresent(const NodeRef &ref, int first);
  /// Stacks values of one type along a new dimension `axis`.
  FailureOr<Value> stack(const NodeRef &ref, Location loc,
                         ArrayRef<Value> parts, int64_t axis);
  /// An `autopar.constant` holding the int64 `values` of `shape`.
  Value createI64Constant(Location loc, ArrayRef<int64_t> values,
                          ArrayRef<int64_t> shape);
  LogicalResult importNegativeLogLikelihoodLoss(const NodeRef &ref,
                                                Location loc);
  LogicalResult importSoftmaxCrossEntropyLoss(const NodeRef &ref, Location loc);
  /// NegativeLogLikelihoodLoss of log-probabilities `logProb` ([N, C, d...])
  /// and `target` ([N, d...]), with the optional class `weight` and the
  /// node's `reduction` and `ignore_index` attributes.
  FailureOr<Value> buildNllLoss(const NodeRef &ref, Location loc, Value logProb,
                                Value target, Value weight);
  LogicalResult importClip(const NodeRef &ref, Location loc);
  LogicalResult importCast(const NodeRef &ref, Location loc);
  LogicalResult importWhere(const NodeRef &ref, Location loc);
  LogicalResult importSoftmax(const NodeRef &ref, Location loc);
  LogicalResult importLayerNorm(const NodeRef &ref, Location loc);
  /// Outputs Mean (1) and InvStdDev (2) of LayerNormalization, where used,
  /// decomposed into reduce_mean, sub, mul, add, sqrt and reciprocal.
  LogicalResult importLayerNormStatistics(const NodeRef &ref, Location loc,
                                          Value x, int64_t axis, float epsilon);
  LogicalResult importBatchNorm(const NodeRef &ref, Location loc);
  LogicalResult importGemm(const NodeRef &ref, Location loc);
  LogicalResult importConv(const NodeRef &ref, Location loc);
  /// ONNX Conv of `x` and `w` (and `bias` when not null) with the node's
  /// convolution attributes (auto_pad resolved); shared by Conv, ConvInteger
  /// and QLinearConv.
  FailureOr<Value> buildConv(const NodeRef &ref, Location loc, Value x, Value w,
                             Value bias);
  LogicalResult importQuantizeLinear(const NodeRef &ref, Location loc);
  LogicalResult importDequantizeLinear(const NodeRef &ref, Location loc);
  LogicalResult importDynamicQuantizeLinear(const NodeRef &ref, Location loc);
  LogicalResult importMatMulInteger(const NodeRef &ref, Location loc);
  LogicalResult importConvInteger(const NodeRef &ref, Location loc);
  LogicalResult importQLinearMatMul(const NodeRef &ref, Location loc);
  LogicalResult importQLinearConv(const NodeRef &ref, Location loc);
  /// `value` (i8/ui8/i32) widened to i32 minus `zeroPoint` (absent: `value`
  /// widened), the zero point reshaped to `zeroPointShape` first (per-row or
  /// per-channel zero points broadcast along their dimension).
  FailureOr<Value> buildShiftedI32(const NodeRef &ref, Location loc,
                                   Value value, Value zeroPoint,
                                   ArrayRef<int64_t> zeroPointShape);
  /// QuantizeLinear of the f32 `real` with scale 1 and `zeroPoint`.
  FailureOr<Value> buildRequantize(const NodeRef &ref, Location loc, Value real,
                                   Value zeroPoint);
  LogicalResult importPool(const NodeRef &ref, Location loc);
  LogicalResult importReduce(const NodeRef &ref, Location loc);
  LogicalResult importTranspose(const NodeRef &ref, Location loc);
  LogicalResult importReshape(const NodeRef &ref, Location loc);
  LogicalResult importFlatten(const NodeRef &ref, Location loc);
  LogicalResult importSqueeze(const NodeRef &ref, Location loc);
  LogicalResult importUnsqueeze(const NodeRef &ref, Location loc);
  LogicalResult importConcat(const NodeRef &ref, Location loc);
  LogicalResult importSplit(const NodeRef &ref, Location loc);
  LogicalResult importSlice(const NodeRef &ref, Location loc);
  LogicalResult importGather(const NodeRef &ref, Location loc);
  LogicalResult importExpand(const NodeRef &ref, Location loc);
  LogicalResult importDropout(const NodeRef &ref, Location loc);
  LogicalResult importConstantOfShape(const NodeRef &ref, Location loc);
  LogicalResult importShape(const NodeRef &ref, Location loc);
  LogicalResult importRange(const NodeRef &ref, Location loc);
  LogicalResult importEinsum(const NodeRef &ref, Location loc);
  /// Shared tail of Reshape, Flatten, Squeeze and Unsqueeze: the input
  /// (known or not) viewed as `shape`.
  LogicalResult finishReshape(const NodeRef &ref, Location loc,
                              ArrayRef<int64_t> shape);

  MLIRContext &ctx;
  StringRef bufferName;
  const ImportOptions &options;
  Location fileLoc;
  OpBuilder builder;

  std::shared_ptr<onnx::ModelProto> model;
  std::unique_ptr<OnnxWeightStore> weights;
  int64_t opset = -1;
  bool checkedByOnnx = false;
  /// Types ONNX declares or infers, by tensor name.
  llvm::StringMap<const onnx::TypeProto *> onnxTypes;
  /// Imported values, by ONNX tensor name.
  llvm::StringMap<Value> values;
  /// Values known at compile time and where they were computed.
  llvm::StringMap<std::pair<ConstTensor, Location>> known;
  /// Names of the initializers.
  llvm::StringSet<> initializerNames;
  /// Tensors read by some node or by the graph outputs.
  llvm::StringSet<> usedNames;
  /// Runtime inputs whose static dimension 0 `--batch` changed, with the
  /// size in the model.
  SmallVector<std::pair<std::string, int64_t>> batchChanges;
  ImportedModel result;
};

// Defined here so that every family file (ops/*.cpp) instantiates it.
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

/// An operator importer: checks the node and builds its ops.
using ImportFn = LogicalResult (OnnxImporter::*)(const OnnxImporter::NodeRef &,
                                                 Location);

/// The importers of the ONNX operators autopar supports (default domain), by
/// op type and by the opset from which each applies. The supported-operator
/// check asks this registry, so an operator is supported exactly when an
/// importer for it is registered.
class OpImporterRegistry {
public:
  /// Registers `import` for `opType` from opset `sinceVersion` on.
  void add(StringRef opType, int64_t sinceVersion, ImportFn import);
  /// The importer of `opType` at `opset`: the one with the greatest
  /// since-version not above `opset`; null when there is none.
  ImportFn lookup(StringRef opType, int64_t opset) const;
  /// The oldest opset `opType` imports from; nullopt when unsupported.
  std::optional<int64_t> getFirstOpset(StringRef opType) const;
  /// Every supported op type, sorted.
  std::vector<std::string> getOpTypes() const;

  /// The registry of all operator families, built on first use.
  static const OpImporterRegistry &get();

private:
  llvm::StringMap<SmallVector<std::pair<int64_t, ImportFn>, 1>> entries;
};

} // namespace mlir::autopar::importer

#endif // AUTOPAR_LIB_IMPORT_IMPORTER_H
