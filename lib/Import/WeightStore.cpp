//===- WeightStore.cpp - Weights of an imported ONNX model ----------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements the weight store of an imported model: inline data is
// served from the ModelProto without a copy, typed value fields are converted
// once, and external data is mapped from its file on first use.
//
//===----------------------------------------------------------------------===//

#include "OnnxUtils.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::importer;

WeightStore::~WeightStore() = default;

const WeightStore::Weight *WeightStore::lookup(StringRef name) const {
  for (const Weight &weight : getWeights())
    if (weight.name == name)
      return &weight;
  return nullptr;
}

LogicalResult OnnxWeightStore::addEntry(StringRef name, DType dtype,
                                        ArrayRef<int64_t> shape, Entry entry,
                                        std::string &error) {
  if (!indices.try_emplace(name, entries.size()).second) {
    error = ("weight '" + name + "' is defined twice").str();
    return failure();
  }
  weights.push_back(Weight{name.str(), dtype, SmallVector<int64_t>(shape)});
  entries.push_back(std::move(entry));
  return success();
}

LogicalResult OnnxWeightStore::addTensor(StringRef name, DType dtype,
                                         ArrayRef<int64_t> shape,
                                         onnx::TensorProto &tensor,
                                         std::string &error) {
  std::optional<int64_t> numElements = getNumElements(shape);
  if (!numElements) {
    error = ("weight '" + name + "' has invalid dimensions").str();
    return failure();
  }
  uint64_t numBytes = *numElements * getDTypeSize(dtype);
  Entry entry;
  entry.tensor = &tensor;
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    entry.external = true;
    std::optional<StringRef> location;
    std::optional<uint64_t> length;
    for (const onnx::StringStringEntryProto &kv : tensor.external_data()) {
      StringRef key = kv.key(), value = kv.value();
      uint64_t number = 0;
      if (key == "location") {
        location = value;
      } else if (key == "offset" || key == "length") {
        if (value.getAsInteger(10, number)) {
          error = ("weight '" + name + "' has an invalid external data " + key +
                   " '" + value + "'")
                      .str();
          return failure();
        }
        if (key == "offset")
          entry.offset = number;
        else
          length = number;
      }
    }
    if (!location || location->empty()) {
      error = ("weight '" + name + "' is stored externally without a location")
                  .str();
      return failure();
    }
    if (llvm::sys::path::is_absolute(*location) ||
        llvm::is_contained(llvm::make_range(llvm::sys::path::begin(*location),
                                            llvm::sys::path::end(*location)),
                           "..")) {
      error = ("weight '" + name + "' has external data location '" +
               *location + "' outside the model directory")
                  .str();
      return failure();
    }
    if (length && *length != numBytes) {
      error = ("weight '" + name + "' has external data length " +
               Twine(*length) + ", expected " + Twine(numBytes) + " bytes")
                  .str();
      return failure();
    }
    SmallString<256> path(baseDir);
    llvm::sys::path::append(path, *location);
    entry.path = std::string(path);
    entry.length = numBytes;
  } else if (tensor.has_raw_data()) {
    if (tensor.raw_data().size() != numBytes) {
      error = ("weight '" + name + "' has " + Twine(tensor.raw_data().size()) +
               " bytes of raw_data, expected " + Twine(numBytes))
                  .str();
      return failure();
    }
  } else {
    // Convert typed value fields once, now, so that malformed data is
    // reported at import; the typed fields are released afterwards.
    if (failed(
            decodeTypedData(tensor, dtype, *numElements, entry.bytes, error)))
      return failure();
    entry.decoded = true;
    tensor.clear_float_data();
    tensor.clear_double_data();
    tensor.clear_int64_data();
    tensor.clear_int32_data();
  }
  return addEntry(name, dtype, shape, std::move(entry), error);
}

LogicalResult OnnxWeightStore::addBytes(StringRef name, DType dtype,
                                        ArrayRef<int64_t> shape,
                                        std::vector<char> bytes,
                                        std::string &error) {
  std::optional<int64_t> numElements = getNumElements(shape);
  if (!numElements || static_cast<int64_t>(bytes.size()) !=
                          *numElements * getDTypeSize(dtype)) {
    error = ("weight '" + name + "' has " + Twine(bytes.size()) +
             " bytes of data, which does not match its shape")
                .str();
    return failure();
  }
  Entry entry;
  entry.decoded = true;
  entry.bytes = std::move(bytes);
  return addEntry(name, dtype, shape, std::move(entry), error);
}

bool OnnxWeightStore::hasExternalData() const {
  return llvm::any_of(entries, [](const Entry &e) { return e.external; });
}

/// Checks that the external data file of `entry` exists and holds its bytes.
static LogicalResult checkExternalFile(const WeightStore::Weight &weight,
                                       uint64_t offset, uint64_t length,
                                       StringRef path, std::string &error) {
  uint64_t size = 0;
  if (std::error_code ec = llvm::sys::fs::file_size(path, size)) {
    error = ("external data file '" + path + "' of weight '" + weight.name +
             "' cannot be read: " + ec.message())
                .str();
    return failure();
  }
  if (offset > size || size - offset < length) {
    error = ("external data file '" + path + "' of weight '" + weight.name +
             "' has " + Twine(size) + " bytes, expected at least " +
             Twine(offset + length) + " (offset " + Twine(offset) +
             " + length " + Twine(length) + ")")
                .str();
    return failure();
  }
  return success();
}

LogicalResult OnnxWeightStore::checkExternalData(std::string &error) const {
  for (auto [weight, entry] : llvm::zip_equal(weights, entries))
    if (entry.external &&
        failed(checkExternalFile(weight, entry.offset, entry.length, entry.path,
                                 error)))
      return failure();
  return success();
}

FailureOr<ArrayRef<char>> OnnxWeightStore::getData(StringRef name,
                                                   std::string &error) {
  auto it = indices.find(name);
  if (it == indices.end()) {
    error = ("no weight named '" + name + "'").str();
    return failure();
  }
  const Weight &weight = weights[it->second];
  Entry &entry = entries[it->second];
  if (entry.decoded)
    return ArrayRef<char>(entry.bytes);
  if (!entry.external) {
    const std::string &raw = entry.tensor->raw_data();
    return ArrayRef<char>(raw.data(), raw.size());
  }
  if (!entry.mapped) {
    if (entry.length == 0)
      return ArrayRef<char>();
    if (failed(checkExternalFile(weight, entry.offset, entry.length, entry.path,
                                 error)))
      return failure();
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
        llvm::MemoryBuffer::getFileSlice(entry.path, entry.length,
                                         entry.offset);
    if (!buffer) {
      error = "cannot read external data file '" + entry.path +
              "' of weight '" + weight.name +
              "': " + buffer.getError().message();
      return failure();
    }
    entry.mapped = std::move(*buffer);
  }
  return ArrayRef<char>(entry.mapped->getBufferStart(),
                        entry.mapped->getBufferSize());
}
