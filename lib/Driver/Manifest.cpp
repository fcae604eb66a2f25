//===- Manifest.cpp - manifest.json of a compiled directory -----*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements writing and reading `OUTDIR/manifest.json`, the record
// of a compilation that `autopar run` checks before launching a job.
//
//===----------------------------------------------------------------------===//

#include "DriverInternal.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::driver;

static llvm::json::Array shapeToJson(ArrayRef<int64_t> shape) {
  llvm::json::Array array;
  for (int64_t size : shape)
    array.push_back(ShapedType::isDynamic(size) ? int64_t(-1) : size);
  return array;
}

static llvm::json::Array signaturesToJson(ArrayRef<TensorSignature> list) {
  llvm::json::Array array;
  for (const TensorSignature &sig : list)
    array.push_back(llvm::json::Object{{"name", sig.name},
                                       {"dtype", getDTypeName(sig.dtype)},
                                       {"shape", shapeToJson(sig.shape)}});
  return array;
}

llvm::json::Value mlir::autopar::manifestToJson(const Manifest &manifest) {
  llvm::json::Array weights;
  for (const WeightEntry &weight : manifest.weights)
    weights.push_back(
        llvm::json::Object{{"id", weight.id},
                           {"name", weight.name},
                           {"dtype", getDTypeName(weight.dtype)},
                           {"global_shape", shapeToJson(weight.globalShape)}});
  llvm::json::Object object{
      {"autopar_version", manifest.autoparVersion},
      {"model_sha256", manifest.modelSha256},
      {"plan_sha256", manifest.planSha256},
      {"plan", manifest.plan},
      {"grid", shapeToJson(manifest.grid)},
      {"num_devices", manifest.numDevices},
      {"inputs", signaturesToJson(manifest.inputs)},
      {"outputs", signaturesToJson(manifest.outputs)},
      {"weights", std::move(weights)},
  };
  if (manifest.cluster)
    object["cluster"] = *manifest.cluster;
  if (!manifest.inputShapes.empty()) {
    llvm::json::Object shapes;
    for (const auto &[name, shape] : manifest.inputShapes)
      shapes[name] = shapeToJson(shape);
    object["input_shapes"] = std::move(shapes);
  }
  if (manifest.inputShapes.batch)
    object["batch"] = *manifest.inputShapes.batch;
  return llvm::json::Value(std::move(object));
}

namespace {
/// Reads the fields of a manifest with errors that name the file and field.
class ManifestReader {
public:
  ManifestReader(MLIRContext &ctx, StringRef path) : ctx(ctx), path(path) {}

  InFlightDiagnostic fail(const Twine &what) {
    return emitDriverError(ctx)
           << "invalid manifest '" << path << "': " << what;
  }

  FailureOr<std::string> getString(const llvm::json::Object &object,
                                   StringRef key) {
    std::optional<StringRef> value = object.getString(key);
    if (!value) {
      fail("missing string '" + key + "'");
      return failure();
    }
    return value->str();
  }

  FailureOr<int64_t> getInteger(const llvm::json::Object &object,
                                StringRef key) {
    std::optional<int64_t> value = object.getInteger(key);
    if (!value) {
      fail("missing integer '" + key + "'");
      return failure();
    }
    return *value;
  }

  FailureOr<SmallVector<int64_t>> getShape(const llvm::json::Object &object,
                                           StringRef key) {
    const llvm::json::Array *array = object.getArray(key);
    if (!array) {
      fail("missing array '" + key + "'");
      return failure();
    }
    SmallVector<int64_t> shape;
    for (const llvm::json::Value &value : *array) {
      std::optional<int64_t> size = value.getAsInteger();
      if (!size) {
        fail("'" + key + "' holds a non-integer");
        return failure();
      }
      shape.push_back(*size < 0 ? ShapedType::kDynamic : *size);
    }
    return shape;
  }

  FailureOr<DType> getDType(const llvm::json::Object &object) {
    FailureOr<std::string> name = getString(object, "dtype");
    if (failed(name))
      return failure();
    std::optional<DType> dtype = parseDTypeName(*name);
    if (!dtype) {
      fail("unknown dtype '" + *name + "'");
      return failure();
    }
    return *dtype;
  }

  LogicalResult getSignatures(const llvm::json::Object &object, StringRef key,
                              std::vector<TensorSignature> &result) {
    const llvm::json::Array *array = object.getArray(key);
    if (!array) {
      fail("missing array '" + key + "'");
      return failure();
    }
    for (const llvm::json::Value &value : *array) {
      const llvm::json::Object *entry = value.getAsObject();
      if (!entry) {
        fail("'" + key + "' holds a non-object");
        return failure();
      }
      TensorSignature sig;
      FailureOr<std::string> name = getString(*entry, "name");
      FailureOr<DType> dtype = getDType(*entry);
      FailureOr<SmallVector<int64_t>> shape = getShape(*entry, "shape");
      if (failed(name) || failed(dtype) || failed(shape))
        return failure();
      sig.name = *name;
      sig.dtype = *dtype;
      sig.shape = *shape;
      result.push_back(std::move(sig));
    }
    return success();
  }

private:
  MLIRContext &ctx;
  StringRef path;
};
} // namespace

FailureOr<Manifest> mlir::autopar::readManifest(MLIRContext &ctx,
                                                StringRef outDir) {
  if (!llvm::sys::fs::is_directory(outDir)) {
    emitDriverError(ctx) << "compiled directory '" << outDir
                         << "' does not exist (create it with 'autopar "
                            "compile ... -o "
                         << outDir << "')";
    return failure();
  }
  SmallString<256> path(outDir);
  llvm::sys::path::append(path, "manifest.json");
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    emitDriverError(ctx) << "cannot read '" << path
                         << "': " << buffer.getError().message()
                         << " (is it a directory written by 'autopar "
                            "compile'?)";
    return failure();
  }
  ManifestReader reader(ctx, path);
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse((*buffer)->getBuffer());
  if (!json) {
    reader.fail(llvm::toString(json.takeError()));
    return failure();
  }
  const llvm::json::Object *object = json->getAsObject();
  if (!object) {
    reader.fail("expected a JSON object");
    return failure();
  }

  Manifest manifest;
  FailureOr<std::string> version = reader.getString(*object, "autopar_version");
  if (failed(version))
    return failure();
  if (*version != getAutoparVersion()) {
    emitDriverError(ctx) << "'" << outDir << "' was compiled by autopar "
                         << *version << ", this is autopar "
                         << getAutoparVersion() << "; compile it again";
    return failure();
  }
  manifest.autoparVersion = *version;
  FailureOr<std::string> modelSha = reader.getString(*object, "model_sha256");
  FailureOr<std::string> planSha = reader.getString(*object, "plan_sha256");
  FailureOr<std::string> plan = reader.getString(*object, "plan");
  FailureOr<SmallVector<int64_t>> grid = reader.getShape(*object, "grid");
  FailureOr<int64_t> numDevices = reader.getInteger(*object, "num_devices");
  if (failed(modelSha) || failed(planSha) || failed(plan) || failed(grid) ||
      failed(numDevices))
    return failure();
  manifest.modelSha256 = *modelSha;
  manifest.planSha256 = *planSha;
  manifest.plan = *plan;
  manifest.grid = *grid;
  manifest.numDevices = *numDevices;
  int64_t product = 1;
  for (int64_t size : manifest.grid)
    product *= size;
  if (manifest.grid.empty() || product != manifest.numDevices ||
      llvm::any_of(manifest.grid, [](int64_t size) { return size <= 0; })) {
    reader.fail("grid and num_devices disagree");
    return failure();
  }
  if (failed(reader.getSignatures(*object, "inputs", manifest.inputs)) ||
      failed(reader.getSignatures(*object, "outputs", manifest.outputs)))
    return failure();

  const llvm::json::Array *weights = object->getArray("weights");
  if (!weights) {
    reader.fail("missing array 'weights'");
    return failure();
  }
  for (const llvm::json::Value &value : *weights) {
    const llvm::json::Object *entry = value.getAsObject();
    if (!entry) {
      reader.fail("'weights' holds a non-object");
      return failure();
    }
    WeightEntry weight;
    FailureOr<int64_t> id = reader.getInteger(*entry, "id");
    FailureOr<std::string> name = reader.getString(*entry, "name");
    FailureOr<DType> dtype = reader.getDType(*entry);
    FailureOr<SmallVector<int64_t>> shape =
        reader.getShape(*entry, "global_shape");
    if (failed(id) || failed(name) || failed(dtype) || failed(shape))
      return failure();
    weight.id = *id;
    weight.name = *name;
    weight.dtype = *dtype;
    weight.globalShape = *shape;
    manifest.weights.push_back(std::move(weight));
  }
  if (const llvm::json::Value *cluster = object->get("cluster"))
    manifest.cluster = *cluster;
  if (object->get("input_shapes")) {
    const llvm::json::Object *shapes = object->getObject("input_shapes");
    if (!shapes) {
      reader.fail("'input_shapes' is not an object");
      return failure();
    }
    for (const auto &entry : *shapes) {
      FailureOr<SmallVector<int64_t>> shape =
          reader.getShape(*shapes, entry.first);
      if (failed(shape))
        return failure();
      manifest.inputShapes[entry.first.str()] = *shape;
    }
  }
  if (const llvm::json::Value *batch = object->get("batch")) {
    std::optional<int64_t> size = batch->getAsInteger();
    if (!size || *size <= 0) {
      reader.fail("'batch' is not a positive integer");
      return failure();
    }
    manifest.inputShapes.batch = *size;
  }

  SmallString<256> program(outDir);
  llvm::sys::path::append(program, "program.so");
  if (!llvm::sys::fs::exists(program)) {
    emitDriverError(ctx) << "'" << program
                         << "' is missing; compile the model again";
    return failure();
  }
  SmallString<256> weightsDir(outDir);
  llvm::sys::path::append(weightsDir, "weights");
  if (!llvm::sys::fs::is_directory(weightsDir)) {
    emitDriverError(ctx) << "'" << weightsDir
                         << "' is missing; compile the model again";
    return failure();
  }
  return manifest;
}
