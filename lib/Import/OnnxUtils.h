//===- OnnxUtils.h - Private ONNX helpers of the importer -------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Helpers shared by the translation units of AutoparImport. This header
// includes ONNX and protobuf headers and is therefore private to lib/Import:
// nothing outside the importer may see ONNX types.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_LIB_IMPORT_ONNXUTILS_H
#define AUTOPAR_LIB_IMPORT_ONNXUTILS_H

#include "autopar/Import/Import.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MemoryBuffer.h"

#include "onnx/onnx_pb.h"

#include <optional>

namespace mlir::autopar::importer {

/// DType of an ONNX `TensorProto.DataType`, or nullopt when unsupported.
std::optional<DType> getDTypeFromOnnx(int32_t dataType);
/// ONNX `TensorProto.DataType` of `dtype`.
int32_t getOnnxDataType(DType dtype);
/// Name of an ONNX data type ("FLOAT16", ...) for diagnostics.
std::string getOnnxDataTypeName(int32_t dataType);

/// Number of elements of `shape`, or nullopt when a dimension is negative or
/// the count overflows.
std::optional<int64_t> getNumElements(ArrayRef<int64_t> shape);

/// Decodes the typed value fields (`float_data`, `int64_data`, ...) of
/// `tensor` into little-endian row-major bytes. `tensor` must not use
/// `raw_data` or external data.
LogicalResult decodeTypedData(const onnx::TensorProto &tensor, DType dtype,
                              int64_t numElements, std::vector<char> &out,
                              std::string &error);

/// Collapses a multi-line message (ONNX errors span several lines) into one
/// line, joining the non-empty lines with "; ".
std::string toOneLine(StringRef message);

/// The weight store of an imported ONNX model. It owns the ModelProto, so the
/// inline data of initializers (`raw_data`) is never copied; typed value
/// fields are converted once on first use and then released; external data is
/// mapped from its file on first use.
class OnnxWeightStore final : public WeightStore {
public:
  OnnxWeightStore(std::shared_ptr<onnx::ModelProto> model, std::string baseDir)
      : model(std::move(model)), baseDir(std::move(baseDir)) {}

  ArrayRef<Weight> getWeights() const override { return weights; }
  FailureOr<ArrayRef<char>> getData(StringRef name,
                                    std::string &error) override;

  /// Adds weight `name` whose data is held by `tensor` (inline or external),
  /// which must be owned by the model. Checks the size of inline data and the
  /// external data reference (not the file).
  LogicalResult addTensor(StringRef name, DType dtype, ArrayRef<int64_t> shape,
                          onnx::TensorProto &tensor, std::string &error);
  /// Adds weight `name` with already decoded bytes.
  LogicalResult addBytes(StringRef name, DType dtype, ArrayRef<int64_t> shape,
                         std::vector<char> bytes, std::string &error);
  /// Checks that every external data file exists and is large enough.
  LogicalResult checkExternalData(std::string &error) const;
  /// True when some weight is stored in an external file.
  bool hasExternalData() const;

private:
  struct Entry {
    onnx::TensorProto *tensor = nullptr;
    bool external = false;
    std::string path;
    uint64_t offset = 0;
    uint64_t length = 0;
    bool decoded = false;
    std::vector<char> bytes;
    std::unique_ptr<llvm::MemoryBuffer> mapped;
  };
  LogicalResult addEntry(StringRef name, DType dtype, ArrayRef<int64_t> shape,
                         Entry entry, std::string &error);

  std::shared_ptr<onnx::ModelProto> model;
  std::string baseDir;
  std::vector<Weight> weights;
  std::vector<Entry> entries;
  llvm::StringMap<size_t> indices;
};

} // namespace mlir::autopar::importer

#endif // AUTOPAR_LIB_IMPORT_ONNXUTILS_H
