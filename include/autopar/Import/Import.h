//===- Import.h - ONNX to autopar dialect importer --------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The frontend layer: the only library that sees protobuf and ONNX. It turns
// an ONNX model (binary `.onnx`, or ONNX text syntax `.onnxtxt`) into a module
// of autopar ops, keeps the weights (initializers) out of the IR in a
// WeightStore, and reads/writes ONNX TensorProto files for the driver.
//
// Import contract:
// - `func.func @main` has one argument per runtime input (graph inputs that
//   are not initializers) and one result per graph output, in graph order.
//   Argument locations are `getOnnxTensorLoc(input name)`; every op made from
//   a node is located at `getOnnxNodeLoc(node name, output names)`, where a
//   node without a name is called `#<index>` (also in diagnostics).
// - Initializers become `autopar.weight "<name>"`. Weight data is never in
//   the IR.
// - Values known at compile time (Constants, small initializers, the Shape of
//   a static tensor and the shape computations on them: Gather, Concat,
//   Unsqueeze, Slice, Cast, integer arithmetic, Equal/Where, ConstantOfShape,
//   Range, ...) are evaluated at import. They are materialized only where a
//   runtime op or a graph output reads them: as `autopar.constant` when they
//   have at most kMaxInlineConstantElements elements or are splats, else as
//   weights named after their tensor. Float Constants of more than
//   kMaxInlineConstantElements elements are weights from the start.
// - Operands autopar needs at compile time (Reshape/Expand shapes, Slice
//   starts/ends/axes/steps, Clip bounds, Reduce axes, Split sizes, Squeeze and
//   Unsqueeze axes, ConstantOfShape and Range inputs) must be known values.
// - Supported operators (default domain): those with an importer registered
//   by op type and since-version in lib/Import/ops/<Family>.cpp (the
//   importer's OpImporterRegistry; docs/onnx-node-tests.md lists them with
//   their node-test results). Nodes read float32, int64, int32 and bool
//   tensors. Shapes of runtime inputs must be static: symbolic dimensions are resolved by
//   ImportOptions::inputShapes (`--input-shape`, `--batch`) or rejected.
//   Read optional outputs: LayerNormalization's Mean and InvStdDev
//   (decomposed into reduce_mean, sub, mul, add, sqrt, reciprocal; Y stays
//   layer_norm) and Dropout's mask (an all-true splat constant); MaxPool's
//   Indices is an error. Nodes of other domains (ai.onnx.preview.training, ...) are
//   unsupported operators, named with their domain.
// - ONNX 1.12's checker and shape inference run when the default-domain opset
//   is <= 17 and external data (if any) is present; result types inferred by
//   the ops are cross-checked against the types ONNX declares or infers, and
//   the module is verified.
//
// ONNX text syntax is ONNX 1.12's `OnnxParser` format: `#` starts a comment
// (lit RUN/CHECK lines), initializers are written in the graph input list
// (`float[3,4] w = {1.0, ...}`), nodes cannot be named.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_IMPORT_IMPORT_H
#define AUTOPAR_IMPORT_IMPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringMap.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir::autopar {

/// Element types that cross the host/device boundary.
enum class DType { F32, F64, I64, I32, I8, U8, Bool };

/// Size in bytes of one element of `dtype` (Bool is one byte).
int64_t getDTypeSize(DType dtype);
/// Lowercase name of `dtype` ("f32", "i64", "bool", ...), also the runtime
/// ABI suffix except Bool, whose suffix is "i1".
StringRef getDTypeName(DType dtype);
/// MLIR element type of `dtype` (Bool is i1).
Type getDTypeElementType(MLIRContext *ctx, DType dtype);
/// DType of an MLIR element type, or failure for unsupported ones.
FailureOr<DType> getDTypeFromElementType(Type type);

/// A dense row-major tensor on the host.
struct HostTensor {
  DType dtype = DType::F32;
  SmallVector<int64_t> shape;
  std::vector<char> data; ///< getNumElements() * getDTypeSize(dtype) bytes.
  int64_t getNumElements() const;
};

/// The weights (initializers) of an imported model. The data of each weight is
/// held once (for external data, loaded from its file on first use) and never
/// copied into the IR.
class WeightStore {
public:
  struct Weight {
    std::string name;
    DType dtype;
    SmallVector<int64_t> shape;
  };
  virtual ~WeightStore();
  /// Weights in initializer order.
  virtual ArrayRef<Weight> getWeights() const = 0;
  /// Returns the weight called `name`, or nullptr.
  const Weight *lookup(StringRef name) const;
  /// Raw little-endian row-major bytes of weight `name`; failure (with a
  /// message in `error`) when it has no data (external file missing) or its
  /// data is malformed. The bytes stay valid while the store lives.
  virtual FailureOr<ArrayRef<char>> getData(StringRef name,
                                            std::string &error) = 0;
};

/// The result of importing a model.
struct ImportedModel {
  /// `func.func @main` with one argument per runtime input and one result per
  /// graph output; locations carry ONNX node and tensor names.
  OwningOpRef<ModuleOp> module;
  std::unique_ptr<WeightStore> weights;
  /// Lowercase hex SHA-256 of the model file bytes.
  std::string sha256;
  /// ONNX names of the runtime inputs and of the outputs, in order.
  std::vector<std::string> inputNames;
  std::vector<std::string> outputNames;
};

/// The static shapes runtime inputs are imported with: by input name
/// (`--input-shape NAME=8x128`), and a batch size (`--batch N`) for
/// dimension 0 of every other runtime input of rank >= 1.
struct InputShapes : std::map<std::string, SmallVector<int64_t>> {
  using std::map<std::string, SmallVector<int64_t>>::map;
  /// `--batch N`: dimension 0 of every runtime input of rank >= 1 that has no
  /// shape by name becomes `*batch`, whether symbolic, unknown or static (a
  /// different static size is overridden).
  std::optional<int64_t> batch;
};

struct ImportOptions {
  /// Fail at import when an initializer's external data file is missing.
  /// Planning-only users (autopar plan) turn this off.
  bool requireWeightData = true;
  /// Static shapes replacing the declared shapes of runtime graph inputs,
  /// applied before ONNX shape inference and shape folding: this is how
  /// symbolic (batch, sequence) and unknown dimensions are resolved. Each
  /// must name a runtime input, have its rank, agree with its static
  /// dimensions and have positive sizes; otherwise the import fails with an
  /// error naming the input. `inputShapes.batch` then sets dimension 0 of
  /// the other runtime inputs (it must be positive); when it overrides a
  /// static size, the declared shapes of graph outputs and value_info (made
  /// for the old batch) are dropped, and an import error names the inputs
  /// it changed.
  InputShapes inputShapes;
  /// Training: float initializers of rank >= 1 are parameters, so they are
  /// never read as compile-time values (an op on one is never folded into a
  /// new constant weight, which training would then update instead).
  bool keepFloatInitializers = false;
  /// The seed of the random ops without a `seed` attribute (`--seed`): each
  /// such node's key is a hash of it and the node's name.
  uint64_t seed = 0;
};

/// Parses one `NAME=D0xD1x...` entry of `--input-shape` into `shapes`
/// (sizes are checked against the model at import, not here). On failure
/// returns failure and sets `error` to one line.
LogicalResult parseInputShape(StringRef text, InputShapes &shapes,
                              std::string &error);

/// Formats `shapes` as the `--input-shape` value `a=8x128,b=8` (names in
/// order).
std::string formatInputShapes(const InputShapes &shapes);

/// Imports the model at `path` (`.onnxtxt` is parsed as ONNX text syntax,
/// anything else as a binary ModelProto). Errors (malformed file, unsupported
/// op naming node, op and opset, ...) are emitted as diagnostics on `ctx`.
FailureOr<ImportedModel> importOnnxFile(StringRef path, MLIRContext &ctx,
                                        const ImportOptions &options = {});

/// Imports a model held in memory. `bufferName` names the model in
/// diagnostics, selects the format (a `.onnxtxt` suffix means ONNX text
/// syntax; otherwise the bytes are sniffed: text when they contain no control
/// characters, else a binary ModelProto) and its directory is the base for
/// external data locations. `bytes` need not outlive the call.
FailureOr<ImportedModel> importOnnxBuffer(StringRef bytes, StringRef bufferName,
                                          MLIRContext &ctx,
                                          const ImportOptions &options = {});

/// Largest ONNX `Constant` (in elements) imported as `autopar.constant`;
/// larger ones become `autopar.weight` named after their output tensor.
constexpr int64_t kMaxInlineConstantElements = 64;

/// Lowercase hex SHA-256 of `bytes`.
std::string computeSha256(StringRef bytes);

/// Reads a serialized ONNX TensorProto (test-data layout `input_0.pb`).
/// On failure returns failure and sets `error` to one line.
FailureOr<HostTensor> readTensorProtoFile(StringRef path, std::string &error);

/// Writes `tensor` as a serialized ONNX TensorProto named `name`.
LogicalResult writeTensorProtoFile(StringRef path, const HostTensor &tensor,
                                   StringRef name, std::string &error);

/// What scanTensorProtoFile finds in a serialized TensorProto without
/// reading its data.
struct TensorFileInfo {
  DType dtype = DType::F32;
  SmallVector<int64_t> shape;
  std::string name;
  /// Byte offset of the raw_data payload in the file, when the tensor is
  /// raw-encoded (its length is then the tensor's byte size); std::nullopt
  /// for typed fields (float_data, int64_data, ...).
  std::optional<int64_t> rawDataOffset;
};

/// Reads the header fields of the TensorProto file at `path` (dims,
/// data_type, name) and locates its raw_data, skipping over payloads without
/// reading them, so that a tensor of any size is located by reading a few
/// bytes. On failure (unreadable, malformed, unsupported element type,
/// external data, raw_data of the wrong size) sets `error` to one line.
FailureOr<TensorFileInfo> scanTensorProtoFile(StringRef path,
                                              std::string &error);

/// The bytes that precede the raw data in a serialized TensorProto named
/// `name` of `dtype` and `shape` whose last field is raw_data: writing them
/// followed by the tensor's row-major bytes gives a valid TensorProto file.
std::string serializeTensorProtoHeader(DType dtype, ArrayRef<int64_t> shape,
                                       StringRef name);

/// Parses the bytes of a serialized ONNX TensorProto (see
/// readTensorProtoFile); `bufferName` names it in `error`.
FailureOr<HostTensor> parseTensorProto(StringRef bytes, StringRef bufferName,
                                       std::string &error);
/// Serializes `tensor` as an ONNX TensorProto named `name`.
std::string serializeTensorProto(const HostTensor &tensor, StringRef name);

/// Writes the binary ONNX model at `sourcePath` to `destPath` with the data
/// of the initializers named in `initializers` replaced (same graph, same
/// types and shapes; the new data is stored inline). Fails with one line in
/// `error` when the source is not a binary model or an initializer is
/// missing or differs in type or shape.
LogicalResult
writeModelWithInitializers(StringRef sourcePath, StringRef destPath,
                           const std::map<std::string, HostTensor> &initializers,
                           std::string &error);

} // namespace mlir::autopar

#endif // AUTOPAR_IMPORT_IMPORT_H
