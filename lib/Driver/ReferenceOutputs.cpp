//===- ReferenceOutputs.cpp - kept single-device outputs --------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements the reference directory of `autopar verify
// --reference-dir`: the key of a single-device run, and reading and writing
// its outputs with that key (`reference.json`, `output_<i>.pb`).
//
//===----------------------------------------------------------------------===//

#include "autopar/Driver/ReferenceOutputs.h"

#include "DriverInternal.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::driver;

/// The name of the key file, and the format it records.
static constexpr StringLiteral kReferenceFile = "reference.json";
static constexpr StringLiteral kReferenceFormat = "autopar-verify-reference-1";

std::string mlir::autopar::computeDataDigest(ArrayRef<char> bytes) {
  llvm::XXH128_hash_t hash = llvm::xxh3_128bits(ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size()));
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::format_hex_no_prefix(hash.high64, 16)
     << llvm::format_hex_no_prefix(hash.low64, 16);
  return text;
}

/// The digest of the file at `path` (an executable), or failure with an
/// error on `ctx` naming `what`.
static FailureOr<std::string> getFileDigest(MLIRContext &ctx, StringRef path,
                                            StringRef what) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!buffer) {
    emitDriverError(ctx) << "cannot read " << what << " '" << path
                         << "': " << buffer.getError().message();
    return failure();
  }
  StringRef bytes = (*buffer)->getBuffer();
  return computeDataDigest(ArrayRef<char>(bytes.data(), bytes.size()));
}

/// `f32 4x3x224x224`.
static std::string formatSignature(DType dtype, ArrayRef<int64_t> shape) {
  return (getDTypeName(dtype) + " " + formatShape(shape)).str();
}

FailureOr<ReferenceKey>
mlir::autopar::computeReferenceKey(MLIRContext &ctx, ImportedModel &model,
                                   const ReferenceRunDescription &run,
                                   StringRef runnerPath) {
  assert(run.compile && run.run && "a run description names its options");
  const CompileOptions &compile = *run.compile;
  if (compile.training) {
    emitDriverError(ctx) << "a reference directory holds the outputs of an "
                            "inference program, not of a training step";
    return failure();
  }
  ReferenceKey key;
  FailureOr<std::string> self = findAutoparExecutable(ctx);
  if (failed(self))
    return failure();
  FailureOr<std::string> selfDigest =
      getFileDigest(ctx, *self, "the autopar executable");
  FailureOr<std::string> runnerDigest =
      getFileDigest(ctx, runnerPath, "the runner");
  if (failed(selfDigest) || failed(runnerDigest))
    return failure();
  key.add("autopar executable",
          (getAutoparVersion() + ", digest " + *selfDigest).str());
  key.add("runner executable", *runnerDigest);
  key.add("model file (SHA-256)", model.sha256);

  // The weights' data: the model file's digest misses external data.
  std::string weightDigests;
  std::string error;
  for (const WeightStore::Weight &weight : model.weights->getWeights()) {
    FailureOr<ArrayRef<char>> data = model.weights->getData(weight.name, error);
    if (failed(data)) {
      emitDriverError(ctx) << error;
      return failure();
    }
    weightDigests += weight.name + " " +
                     formatSignature(weight.dtype, weight.shape) + " " +
                     computeDataDigest(*data) + "\n";
  }
  key.add("weights' data", computeDataDigest(ArrayRef<char>(
                               weightDigests.data(), weightDigests.size())));

  std::string shapes = formatInputShapes(compile.inputShapes);
  if (compile.inputShapes.batch)
    shapes += (shapes.empty() ? "" : ", ") + std::string("batch ") +
              std::to_string(*compile.inputShapes.batch);
  key.add("input shapes (--input-shape, --batch)",
          shapes.empty() ? "the model's" : shapes);
  key.add("seed of the random ops (--seed)", std::to_string(run.seed));
  key.add("merged batch and heads kept apart (grids of several devices)",
          run.unmergeHeads ? "yes" : "no");
  std::string options;
  llvm::raw_string_ostream os(options);
  os << "grid " << compile.grid << ", plan " << compile.plan;
  if (!compile.fixed.empty())
    os << ", fixed " << compile.fixed;
  os << ", precision " << compile.precision << ", winograd "
     << (compile.winograd ? "yes" : "no") << ", min flops per thread ";
  if (compile.minFlopsPerThread)
    os << *compile.minFlopsPerThread;
  else
    os << "default";
  key.add("single-device compile options", options);
  // The runner's default thread count depends on the usable cores.
  std::string threads =
      run.run->threads
          ? std::to_string(run.run->threads)
          : "default, " +
                std::to_string(
                    llvm::hardware_concurrency().compute_thread_count()) +
                " usable cores";
  key.add("threads", threads);
  key.add("hostfile", run.run->hostfile.empty() ? "none" : run.run->hostfile);

  if (run.inputs.size() != run.inputSignatures.size()) {
    emitDriverError(ctx) << "internal error: " << run.inputs.size()
                         << " inputs for " << run.inputSignatures.size()
                         << " input signatures";
    return failure();
  }
  for (auto [index, sig] : llvm::enumerate(run.inputSignatures)) {
    const HostTensor &tensor = run.inputs[index];
    key.add("input " + std::to_string(index) + " ('" + sig.name + "')",
            formatSignature(tensor.dtype, tensor.shape) + ", digest " +
                computeDataDigest(tensor.data));
  }
  return key;
}

//===----------------------------------------------------------------------===//
// reference.json
//===----------------------------------------------------------------------===//

/// `dir/name`.
static std::string joinDir(StringRef dir, StringRef name) {
  SmallString<256> path(dir);
  llvm::sys::path::append(path, name);
  return path.str().str();
}

/// Starts the error that `dir` holds no usable reference; the caller streams
/// the reason.
static InFlightDiagnostic emitReferenceError(MLIRContext &ctx, StringRef dir) {
  InFlightDiagnostic diag = emitDriverError(ctx);
  diag << "reference directory '" << dir << "': ";
  return diag;
}

/// Says how to get a new reference.
static void attachNewReferenceNote(InFlightDiagnostic &diag) {
  diag.attachNote() << "remove the directory, or name another one, and verify "
                       "writes a new reference";
}

/// The shape in reference.json: an array of sizes.
static llvm::json::Array shapeToJson(ArrayRef<int64_t> shape) {
  llvm::json::Array array;
  for (int64_t size : shape)
    array.push_back(size);
  return array;
}

FailureOr<std::optional<std::vector<HostTensor>>>
mlir::autopar::readReferenceOutputs(MLIRContext &ctx, StringRef dir,
                                    const ReferenceKey &key,
                                    ArrayRef<TensorSignature> outputs) {
  std::string keyPath = joinDir(dir, kReferenceFile);
  if (!llvm::sys::fs::exists(keyPath))
    return std::optional<std::vector<HostTensor>>();
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(keyPath);
  if (!buffer) {
    emitReferenceError(ctx, dir)
        << "cannot read '" << keyPath << "': " << buffer.getError().message();
    return failure();
  }
  llvm::Expected<llvm::json::Value> parsed =
      llvm::json::parse((*buffer)->getBuffer());
  if (!parsed) {
    emitReferenceError(ctx, dir)
        << "'" << keyPath
        << "' is not valid JSON: " << llvm::toString(parsed.takeError());
    return failure();
  }
  auto malformed = [&](StringRef what) {
    InFlightDiagnostic diag = emitReferenceError(ctx, dir);
    diag << "'" << keyPath << "' is malformed: " << what;
    attachNewReferenceNote(diag);
    return failure();
  };
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root)
    return malformed("not an object");
  std::optional<StringRef> format = root->getString("format");
  if (!format || *format != kReferenceFormat) {
    InFlightDiagnostic diag = emitReferenceError(ctx, dir);
    diag << "'" << keyPath << "' has the format '"
         << (format ? *format : StringRef("(none)")) << "', expected '"
         << kReferenceFormat << "'";
    attachNewReferenceNote(diag);
    return failure();
  }
  const llvm::json::Array *fields = root->getArray("key");
  const llvm::json::Array *entries = root->getArray("outputs");
  if (!fields || !entries)
    return malformed("no 'key' or 'outputs' array");

  // The key, field by field in order: the first difference is reported.
  for (size_t i = 0, e = std::max(fields->size(), key.fields.size()); i < e;
       ++i) {
    std::optional<StringRef> storedField, storedValue;
    if (i < fields->size())
      if (const llvm::json::Array *pair = (*fields)[i].getAsArray())
        if (pair->size() == 2) {
          storedField = (*pair)[0].getAsString();
          storedValue = (*pair)[1].getAsString();
        }
    if (i < fields->size() && (!storedField || !storedValue))
      return malformed("key entry " + std::to_string(i) +
                       " is not a [field, value] pair");
    if (i < key.fields.size() && storedField &&
        *storedField == key.fields[i].first &&
        *storedValue == key.fields[i].second)
      continue;
    InFlightDiagnostic diag = emitReferenceError(ctx, dir);
    diag << "it holds the outputs of another single-device run: ";
    if (i >= key.fields.size())
      diag << "its key has the extra field '" << *storedField << "'";
    else if (!storedField)
      diag << "its key has no field '" << key.fields[i].first << "'";
    else if (*storedField != key.fields[i].first)
      diag << "its key has the field '" << *storedField << "' where this run "
           << "has '" << key.fields[i].first << "'";
    else
      diag << key.fields[i].first << " differs: '" << key.fields[i].second
           << "' in this run, '" << *storedValue << "' in the reference";
    attachNewReferenceNote(diag);
    return failure();
  }

  if (entries->size() != outputs.size()) {
    InFlightDiagnostic diag = emitReferenceError(ctx, dir);
    diag << "it holds " << entries->size() << " outputs, the program has "
         << outputs.size();
    attachNewReferenceNote(diag);
    return failure();
  }
  std::vector<HostTensor> tensors;
  for (auto [index, sig] : llvm::enumerate(outputs)) {
    const llvm::json::Object *entry = (*entries)[index].getAsObject();
    std::optional<StringRef> file =
        entry ? entry->getString("file") : std::nullopt;
    std::optional<StringRef> digest =
        entry ? entry->getString("digest") : std::nullopt;
    std::optional<StringRef> name =
        entry ? entry->getString("name") : std::nullopt;
    if (!file || !digest || !name)
      return malformed("output " + std::to_string(index) +
                       " lacks its 'name', 'file' or 'digest'");
    if (*name != sig.name) {
      InFlightDiagnostic diag = emitReferenceError(ctx, dir);
      diag << "its output " << index << " is '" << *name
           << "', the program's is '" << sig.name << "'";
      attachNewReferenceNote(diag);
      return failure();
    }
    std::string path = joinDir(dir, *file);
    std::string error;
    FailureOr<HostTensor> tensor = readTensorProtoFile(path, error);
    if (failed(tensor)) {
      InFlightDiagnostic diag = emitReferenceError(ctx, dir);
      diag << "cannot read output '" << sig.name << "' ('" << path
           << "'): " << error;
      attachNewReferenceNote(diag);
      return failure();
    }
    std::string actual = computeDataDigest(tensor->data);
    if (actual != *digest) {
      InFlightDiagnostic diag = emitReferenceError(ctx, dir);
      diag << "'" << path << "' changed after the reference was written: "
           << "digest " << actual << ", recorded " << *digest;
      attachNewReferenceNote(diag);
      return failure();
    }
    if (tensor->dtype != sig.dtype ||
        ArrayRef<int64_t>(tensor->shape) != ArrayRef<int64_t>(sig.shape)) {
      InFlightDiagnostic diag = emitReferenceError(ctx, dir);
      diag << "output '" << sig.name << "' is "
           << formatSignature(tensor->dtype, tensor->shape)
           << ", the program's is " << formatSignature(sig.dtype, sig.shape);
      attachNewReferenceNote(diag);
      return failure();
    }
    tensors.push_back(std::move(*tensor));
  }
  return std::optional<std::vector<HostTensor>>(std::move(tensors));
}

/// Writes `path` through `write`, which writes the file it is given:
/// `path.tmp<pid>`, then renamed to `path`, so that a reader never sees a
/// partial file.
static LogicalResult
writeThroughRename(MLIRContext &ctx, StringRef path,
                   llvm::function_ref<LogicalResult(StringRef)> write) {
  std::string temp =
      (path + ".tmp" + Twine(llvm::sys::Process::getProcessId())).str();
  if (failed(write(temp)))
    return failure();
  if (std::error_code ec = llvm::sys::fs::rename(temp, path)) {
    emitDriverError(ctx) << "cannot rename '" << temp << "' to '" << path
                         << "': " << ec.message();
    llvm::sys::fs::remove(temp);
    return failure();
  }
  return success();
}

LogicalResult mlir::autopar::writeReferenceOutputs(
    MLIRContext &ctx, StringRef dir, const ReferenceKey &key,
    ArrayRef<TensorSignature> outputs, ArrayRef<HostTensor> tensors) {
  assert(outputs.size() == tensors.size() && "one tensor per output");
  if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
    emitDriverError(ctx) << "cannot create the reference directory '" << dir
                         << "': " << ec.message();
    return failure();
  }
  llvm::json::Array entries;
  for (size_t index = 0, e = outputs.size(); index < e; ++index) {
    const TensorSignature &sig = outputs[index];
    std::string file = "output_" + std::to_string(index) + ".pb";
    const HostTensor &tensor = tensors[index];
    auto write = [&](StringRef temp) -> LogicalResult {
      std::string error;
      if (failed(writeTensorProtoFile(temp, tensor, sig.name, error))) {
        emitDriverError(ctx) << "cannot write '" << temp << "': " << error;
        return failure();
      }
      return success();
    };
    if (failed(writeThroughRename(ctx, joinDir(dir, file), write)))
      return failure();
    entries.push_back(
        llvm::json::Object{{"name", sig.name},
                           {"file", file},
                           {"dtype", getDTypeName(tensor.dtype)},
                           {"shape", shapeToJson(tensor.shape)},
                           {"digest", computeDataDigest(tensor.data)}});
  }
  llvm::json::Array fields;
  for (const auto &field : key.fields)
    fields.push_back(llvm::json::Array{field.first, field.second});
  llvm::json::Object root{{"format", kReferenceFormat},
                          {"key", std::move(fields)},
                          {"outputs", std::move(entries)}};
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  auto write = [&](StringRef temp) {
    return writeFileBytes(ctx, temp, ArrayRef<char>(text.data(), text.size()));
  };
  return writeThroughRename(ctx, joinDir(dir, kReferenceFile), write);
}
