//===- TensorProto.cpp - ONNX TensorProto conversion and files ------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements the conversion between ONNX TensorProtos and host
// tensors, and the TensorProto files of the ONNX test-data layout
// (`test_data_set_0/input_0.pb`).
//
//===----------------------------------------------------------------------===//

#include "OnnxUtils.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <sys/stat.h>

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::importer;

//===----------------------------------------------------------------------===//
// Data types
//===----------------------------------------------------------------------===//

std::optional<DType> importer::getDTypeFromOnnx(int32_t dataType) {
  switch (dataType) {
  case onnx::TensorProto::FLOAT:
    return DType::F32;
  case onnx::TensorProto::DOUBLE:
    return DType::F64;
  case onnx::TensorProto::INT64:
    return DType::I64;
  case onnx::TensorProto::INT32:
    return DType::I32;
  case onnx::TensorProto::INT8:
    return DType::I8;
  case onnx::TensorProto::UINT8:
    return DType::U8;
  case onnx::TensorProto::BOOL:
    return DType::Bool;
  default:
    return std::nullopt;
  }
}

int32_t importer::getOnnxDataType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return onnx::TensorProto::FLOAT;
  case DType::F64:
    return onnx::TensorProto::DOUBLE;
  case DType::I64:
    return onnx::TensorProto::INT64;
  case DType::I32:
    return onnx::TensorProto::INT32;
  case DType::I8:
    return onnx::TensorProto::INT8;
  case DType::U8:
    return onnx::TensorProto::UINT8;
  case DType::Bool:
    return onnx::TensorProto::BOOL;
  }
  llvm_unreachable("unknown DType");
}

std::string importer::getOnnxDataTypeName(int32_t dataType) {
  if (onnx::TensorProto::DataType_IsValid(dataType))
    return onnx::TensorProto::DataType_Name(
        static_cast<onnx::TensorProto::DataType>(dataType));
  return "data type " + std::to_string(dataType);
}

std::optional<int64_t> importer::getNumElements(ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0)
      return std::nullopt;
    if (dim != 0 && count > INT64_MAX / dim)
      return std::nullopt;
    count *= dim;
  }
  return count;
}

std::string importer::toOneLine(StringRef message) {
  SmallVector<StringRef> lines;
  message.split(lines, '\n', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  std::string result;
  for (StringRef line : lines) {
    line = line.trim();
    if (line.empty())
      continue;
    if (!result.empty())
      result += "; ";
    result += line.str();
  }
  return result;
}

//===----------------------------------------------------------------------===//
// Typed value fields
//===----------------------------------------------------------------------===//

/// Appends `values` converted to `T` to `out` (host order is little-endian on
/// every platform autopar supports).
template <typename T, typename Range>
static void appendAs(const Range &values, std::vector<char> &out) {
  size_t offset = out.size();
  out.resize(offset + values.size() * sizeof(T));
  char *dst = out.data() + offset;
  for (auto value : values) {
    T converted = static_cast<T>(value);
    std::memcpy(dst, &converted, sizeof(T));
    dst += sizeof(T);
  }
}

LogicalResult importer::decodeTypedData(const onnx::TensorProto &tensor,
                                        DType dtype, int64_t numElements,
                                        std::vector<char> &out,
                                        std::string &error) {
  static_assert(llvm::sys::IsLittleEndianHost,
                "autopar assumes a little-endian host");
  auto check = [&](int64_t count, StringRef field) -> LogicalResult {
    if (count == numElements)
      return success();
    error = ("tensor '" + tensor.name() + "' has " + std::to_string(count) +
             " values in " + field.str() + ", expected " +
             std::to_string(numElements));
    return failure();
  };
  out.clear();
  switch (dtype) {
  case DType::F32:
    if (failed(check(tensor.float_data_size(), "float_data")))
      return failure();
    appendAs<float>(tensor.float_data(), out);
    return success();
  case DType::F64:
    if (failed(check(tensor.double_data_size(), "double_data")))
      return failure();
    appendAs<double>(tensor.double_data(), out);
    return success();
  case DType::I64:
    if (failed(check(tensor.int64_data_size(), "int64_data")))
      return failure();
    appendAs<int64_t>(tensor.int64_data(), out);
    return success();
  case DType::I32:
    if (failed(check(tensor.int32_data_size(), "int32_data")))
      return failure();
    appendAs<int32_t>(tensor.int32_data(), out);
    return success();
  case DType::I8:
    if (failed(check(tensor.int32_data_size(), "int32_data")))
      return failure();
    appendAs<int8_t>(tensor.int32_data(), out);
    return success();
  case DType::U8:
    if (failed(check(tensor.int32_data_size(), "int32_data")))
      return failure();
    appendAs<uint8_t>(tensor.int32_data(), out);
    return success();
  case DType::Bool:
    if (failed(check(tensor.int32_data_size(), "int32_data")))
      return failure();
    out.reserve(numElements);
    for (int32_t value : tensor.int32_data())
      out.push_back(value != 0 ? 1 : 0);
    return success();
  }
  llvm_unreachable("unknown DType");
}

//===----------------------------------------------------------------------===//
// TensorProto files
//===----------------------------------------------------------------------===//

/// Converts `tensor` into a host tensor; `what` names it in `error`.
static FailureOr<HostTensor> toHostTensor(const onnx::TensorProto &tensor,
                                          StringRef what, std::string &error) {
  std::optional<DType> dtype = getDTypeFromOnnx(tensor.data_type());
  if (!dtype) {
    error = (what + ": unsupported element type " +
             getOnnxDataTypeName(tensor.data_type()))
                .str();
    return failure();
  }
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    error = (what + ": external data is not supported in tensor files").str();
    return failure();
  }
  HostTensor host;
  host.dtype = *dtype;
  host.shape.assign(tensor.dims().begin(), tensor.dims().end());
  std::optional<int64_t> numElements = getNumElements(host.shape);
  if (!numElements) {
    error = (what + ": invalid dimensions").str();
    return failure();
  }
  int64_t numBytes = *numElements * getDTypeSize(*dtype);
  if (tensor.has_raw_data()) {
    const std::string &raw = tensor.raw_data();
    if (static_cast<int64_t>(raw.size()) != numBytes) {
      error = (what + ": raw_data has " + Twine(raw.size()) +
               " bytes, expected " + Twine(numBytes))
                  .str();
      return failure();
    }
    host.data.assign(raw.begin(), raw.end());
    return host;
  }
  std::string decodeError;
  if (failed(decodeTypedData(tensor, *dtype, *numElements, host.data,
                             decodeError))) {
    error = (what + ": " + decodeError).str();
    return failure();
  }
  return host;
}

FailureOr<HostTensor> mlir::autopar::parseTensorProto(StringRef bytes,
                                                      StringRef bufferName,
                                                      std::string &error) {
  try {
    if (bytes.empty()) {
      error = ("'" + bufferName + "' is empty").str();
      return failure();
    }
    if (bytes.size() > static_cast<size_t>(INT_MAX)) {
      error = ("'" + bufferName + "' is larger than 2 GiB").str();
      return failure();
    }
    onnx::TensorProto tensor;
    if (!tensor.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
      error = ("'" + bufferName +
               "' is not a valid ONNX TensorProto (malformed or truncated)")
                  .str();
      return failure();
    }
    return toHostTensor(tensor, "'" + bufferName.str() + "'", error);
  } catch (const std::exception &e) {
    error = ("'" + bufferName + "': " + toOneLine(e.what())).str();
  } catch (...) {
    error =
        ("'" + bufferName + "': unknown error while reading a tensor").str();
  }
  return failure();
}

std::string mlir::autopar::serializeTensorProto(const HostTensor &tensor,
                                                StringRef name) {
  onnx::TensorProto proto;
  proto.set_name(name.str());
  proto.set_data_type(getOnnxDataType(tensor.dtype));
  for (int64_t dim : tensor.shape)
    proto.add_dims(dim);
  proto.set_raw_data(tensor.data.data(), tensor.data.size());
  return proto.SerializeAsString();
}

FailureOr<HostTensor> mlir::autopar::readTensorProtoFile(StringRef path,
                                                         std::string &error) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!buffer) {
    error =
        ("cannot open '" + path + "': " + buffer.getError().message()).str();
    return failure();
  }
  return parseTensorProto((*buffer)->getBuffer(), path, error);
}

LogicalResult mlir::autopar::writeTensorProtoFile(StringRef path,
                                                  const HostTensor &tensor,
                                                  StringRef name,
                                                  std::string &error) {
  int64_t expected = tensor.getNumElements() * getDTypeSize(tensor.dtype);
  if (static_cast<int64_t>(tensor.data.size()) != expected) {
    error = ("tensor '" + name + "' has " + Twine(tensor.data.size()) +
             " bytes of data, expected " + Twine(expected))
                .str();
    return failure();
  }
  std::string bytes;
  try {
    bytes = serializeTensorProto(tensor, name);
  } catch (const std::exception &e) {
    error = ("cannot serialize tensor '" + name + "': " + toOneLine(e.what()))
                .str();
    return failure();
  }
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec) {
    error = ("cannot open '" + path + "' for writing: " + ec.message()).str();
    return failure();
  }
  os << bytes;
  os.close();
  if (os.has_error()) {
    error = ("cannot write '" + path + "': " + os.error().message()).str();
    os.clear_error();
    return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Locating raw data in TensorProto files
//===----------------------------------------------------------------------===//

namespace {

/// Reads protobuf wire format from a file, sequentially, skipping payloads
/// with a seek.
class WireReader {
public:
  explicit WireReader(FILE *file) : file(file) {}

  /// Reads a varint; false at end of file or on a malformed one.
  bool readVarint(uint64_t &value) {
    value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      int c = std::fgetc(file);
      if (c == EOF)
        return false;
      ++position;
      value |= static_cast<uint64_t>(c & 0x7F) << shift;
      if (!(c & 0x80))
        return true;
    }
    return false;
  }

  bool skip(uint64_t bytes) {
    if (bytes > static_cast<uint64_t>(INT64_MAX - position))
      return false;
    if (fseeko(file, static_cast<off_t>(bytes), SEEK_CUR) != 0)
      return false;
    position += static_cast<int64_t>(bytes);
    return true;
  }

  bool read(std::string &out, uint64_t bytes) {
    if (bytes > (1u << 20))
      return false;
    out.resize(bytes);
    if (bytes && std::fread(out.data(), 1, bytes, file) != bytes)
      return false;
    position += static_cast<int64_t>(bytes);
    return true;
  }

  bool atEnd() {
    int c = std::fgetc(file);
    if (c == EOF)
      return true;
    std::ungetc(c, file);
    return false;
  }

  int64_t position = 0;

private:
  FILE *file;
};

} // namespace

FailureOr<TensorFileInfo>
mlir::autopar::scanTensorProtoFile(StringRef path, std::string &error) {
  std::string pathString = path.str();
  FILE *file = std::fopen(pathString.c_str(), "rb");
  if (!file) {
    error = "cannot open '" + pathString + "': " + std::strerror(errno);
    return failure();
  }
  auto fail = [&](const Twine &message) {
    error = ("'" + path + "': " + message).str();
    std::fclose(file);
    return failure();
  };
  struct stat info;
  if (fstat(fileno(file), &info) != 0)
    return fail("cannot stat the file");
  int64_t fileSize = info.st_size;
  if (fileSize == 0)
    return fail("the file is empty");

  WireReader reader(file);
  TensorFileInfo result;
  int64_t dataType = 0;
  std::optional<int64_t> rawOffset;
  uint64_t rawLength = 0;
  bool external = false;
  while (!reader.atEnd()) {
    uint64_t key;
    if (!reader.readVarint(key))
      return fail("is not a valid ONNX TensorProto (malformed or truncated)");
    uint64_t field = key >> 3, wireType = key & 7;
    uint64_t value = 0;
    switch (wireType) {
    case 0: // varint
      if (!reader.readVarint(value))
        return fail("is not a valid ONNX TensorProto (malformed varint)");
      if (field == 1)
        result.shape.push_back(static_cast<int64_t>(value));
      else if (field == 2)
        dataType = static_cast<int64_t>(value);
      else if (field == 14)
        external = value == onnx::TensorProto::EXTERNAL;
      break;
    case 1: // fixed64
      if (!reader.skip(8))
        return fail("is not a valid ONNX TensorProto (truncated)");
      break;
    case 5: // fixed32
      if (!reader.skip(4))
        return fail("is not a valid ONNX TensorProto (truncated)");
      break;
    case 2: { // length-delimited
      uint64_t length;
      if (!reader.readVarint(length) ||
          length > static_cast<uint64_t>(fileSize - reader.position))
        return fail("is not a valid ONNX TensorProto (malformed or truncated)");
      if (field == 1) { // packed dims
        int64_t end = reader.position + static_cast<int64_t>(length);
        while (reader.position < end) {
          if (!reader.readVarint(value))
            return fail("is not a valid ONNX TensorProto (malformed dims)");
          result.shape.push_back(static_cast<int64_t>(value));
        }
        if (reader.position != end)
          return fail("is not a valid ONNX TensorProto (malformed dims)");
        break;
      }
      if (field == 8) {
        if (!reader.read(result.name, length))
          return fail("has a malformed or too long name");
        break;
      }
      if (field == 9) {
        rawOffset = reader.position;
        rawLength = length;
      } else if (field == 13) {
        external = true;
      }
      if (!reader.skip(length))
        return fail("is not a valid ONNX TensorProto (truncated)");
      break;
    }
    default:
      return fail("is not a valid ONNX TensorProto (wire type " +
                  Twine(wireType) + " of field " + Twine(field) + ")");
    }
  }
  std::fclose(file);
  std::optional<DType> dtype = getDTypeFromOnnx(static_cast<int32_t>(dataType));
  if (!dtype) {
    error = ("'" + path + "': unsupported element type " +
             getOnnxDataTypeName(static_cast<int32_t>(dataType)))
                .str();
    return failure();
  }
  if (external) {
    error = ("'" + path + "': external data is not supported in tensor files")
                .str();
    return failure();
  }
  result.dtype = *dtype;
  std::optional<int64_t> numElements = getNumElements(result.shape);
  if (!numElements) {
    error = ("'" + path + "': invalid dimensions").str();
    return failure();
  }
  if (rawOffset) {
    int64_t numBytes = *numElements * getDTypeSize(*dtype);
    if (static_cast<int64_t>(rawLength) != numBytes) {
      error = ("'" + path + "': raw_data has " + Twine(rawLength) +
               " bytes, expected " + Twine(numBytes))
                  .str();
      return failure();
    }
    result.rawDataOffset = rawOffset;
  }
  // Otherwise the tensor is in typed fields (or missing, which the full
  // parse reports).
  return result;
}

std::string mlir::autopar::serializeTensorProtoHeader(DType dtype,
                                                      ArrayRef<int64_t> shape,
                                                      StringRef name) {
  onnx::TensorProto proto;
  proto.set_name(name.str());
  proto.set_data_type(getOnnxDataType(dtype));
  for (int64_t dim : shape)
    proto.add_dims(dim);
  std::string bytes = proto.SerializeAsString();
  // raw_data (field 9, length-delimited) last: its key and length.
  uint64_t length = getDTypeSize(dtype);
  for (int64_t dim : shape)
    length *= static_cast<uint64_t>(dim);
  bytes.push_back(static_cast<char>((9 << 3) | 2));
  do {
    uint8_t byte = length & 0x7F;
    length >>= 7;
    bytes.push_back(static_cast<char>(byte | (length ? 0x80 : 0)));
  } while (length);
  return bytes;
}

LogicalResult mlir::autopar::writeModelWithInitializers(
    StringRef sourcePath, StringRef destPath,
    const std::map<std::string, HostTensor> &initializers,
    std::string &error) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(sourcePath, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!buffer) {
    error = ("cannot open '" + sourcePath + "': " +
             buffer.getError().message())
                .str();
    return failure();
  }
  std::string bytes;
  try {
    onnx::ModelProto model;
    StringRef data = (*buffer)->getBuffer();
    if (data.size() > INT_MAX ||
        !model.ParseFromArray(data.data(), static_cast<int>(data.size()))) {
      error = ("'" + sourcePath +
               "' is not a binary ONNX model (only .onnx files can be "
               "written back)")
                  .str();
      return failure();
    }
    size_t replaced = 0;
    for (onnx::TensorProto &init :
         *model.mutable_graph()->mutable_initializer()) {
      auto it = initializers.find(init.name());
      if (it == initializers.end())
        continue;
      const HostTensor &tensor = it->second;
      if (init.data_type() != getOnnxDataType(tensor.dtype) ||
          init.dims_size() != static_cast<int>(tensor.shape.size()) ||
          !std::equal(init.dims().begin(), init.dims().end(),
                      tensor.shape.begin())) {
        error = "initializer '" + init.name() +
                "' has another type or shape than its new value";
        return failure();
      }
      // The new data replaces every former encoding, external data included.
      init.clear_float_data();
      init.clear_double_data();
      init.clear_int32_data();
      init.clear_int64_data();
      init.clear_external_data();
      init.set_data_location(onnx::TensorProto::DEFAULT);
      init.set_raw_data(tensor.data.data(), tensor.data.size());
      ++replaced;
    }
    if (replaced != initializers.size()) {
      error = ("'" + sourcePath + "' has " + Twine(replaced) + " of the " +
               Twine(initializers.size()) + " initializers to write")
                  .str();
      return failure();
    }
    bytes = model.SerializeAsString();
  } catch (const std::exception &e) {
    error = "cannot write the model: " + toOneLine(e.what());
    return failure();
  }
  std::error_code ec;
  llvm::raw_fd_ostream os(destPath, ec, llvm::sys::fs::OF_None);
  if (ec) {
    error = ("cannot open '" + destPath + "' for writing: " + ec.message())
                .str();
    return failure();
  }
  os << bytes;
  os.close();
  if (os.has_error()) {
    error = ("cannot write '" + destPath + "': " + os.error().message()).str();
    os.clear_error();
    return failure();
  }
  return success();
}
