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
  if (manifest.pipeline) {
    const PipelineManifest &pipeline = *manifest.pipeline;
    auto ports = [](ArrayRef<PipelinePort> list, bool inputs) {
      llvm::json::Array array;
      for (const PipelinePort &port : list) {
        llvm::json::Object entry;
        if (port.boundary < 0) {
          entry[inputs ? "input" : "output"] = port.index;
          if (inputs)
            entry["whole"] = port.whole;
          if (inputs && port.microbatch >= 0)
            entry["microbatch"] = port.microbatch;
        } else {
          entry["boundary"] = port.boundary;
          if (inputs)
            entry["from"] = port.stages.empty() ? -1 : port.stages.front();
          else
            entry["to"] = llvm::json::Array(port.stages);
        }
        array.push_back(std::move(entry));
      }
      return array;
    };
    llvm::json::Array stages;
    for (auto [s, stage] : llvm::enumerate(pipeline.stages))
      stages.push_back(llvm::json::Object{
          {"index", int64_t(s)},
          {"dir", "stage" + std::to_string(s)},
          {"grid", shapeToJson(stage.grid)},
          {"ranks", llvm::json::Array{stage.firstRank,
                                      stage.firstRank + stage.numRanks}},
          {"blocks", llvm::json::Array{stage.firstBlock,
                                       stage.firstBlock + stage.numBlocks}},
          {"inputs", ports(stage.inputs, true)},
          {"outputs", ports(stage.outputs, false)}});
    object["pipeline"] = llvm::json::Object{
        {"stages", int64_t(pipeline.stages.size())},
        {"microbatches", pipeline.microbatches},
        {"schedule", pipeline.schedule},
        {"stage_list", std::move(stages)},
        {"boundaries", signaturesToJson(pipeline.boundaries)}};
  }
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

/// Reads the `pipeline` section: stage programs, their ports and the
/// boundary tensors; checks that the stages' ranks tile the grid.
static FailureOr<PipelineManifest>
readPipeline(ManifestReader &reader, const llvm::json::Object &object,
             const Manifest &manifest) {
  const llvm::json::Object *section = object.getObject("pipeline");
  if (!section) {
    reader.fail("'pipeline' is not an object");
    return failure();
  }
  PipelineManifest pipeline;
  FailureOr<int64_t> microbatches = reader.getInteger(*section, "microbatches");
  if (failed(microbatches))
    return failure();
  pipeline.microbatches = *microbatches;
  pipeline.schedule = section->getString("schedule").value_or("gpipe").str();
  if (pipeline.schedule != "gpipe" && pipeline.schedule != "1f1b") {
    reader.fail("unknown pipeline schedule '" + pipeline.schedule + "'");
    return failure();
  }
  if (failed(reader.getSignatures(*section, "boundaries", pipeline.boundaries)))
    return failure();
  const llvm::json::Array *stages = section->getArray("stage_list");
  if (!stages || stages->size() < 2 || pipeline.microbatches < 1) {
    reader.fail("'pipeline' needs a 'stage_list' of 2 or more stages and a "
                "positive 'microbatches'");
    return failure();
  }
  int64_t nextRank = 0;
  auto readPorts = [&](const llvm::json::Object &stage, StringRef key,
                       bool inputs, std::vector<PipelinePort> &ports) {
    const llvm::json::Array *array = stage.getArray(key);
    if (!array) {
      reader.fail("a stage has no array '" + key + "'");
      return failure();
    }
    for (const llvm::json::Value &value : *array) {
      const llvm::json::Object *entry = value.getAsObject();
      if (!entry) {
        reader.fail("'" + key + "' of a stage holds a non-object");
        return failure();
      }
      PipelinePort port;
      StringRef indexKey = inputs ? "input" : "output";
      size_t limit = inputs ? manifest.inputs.size() : manifest.outputs.size();
      if (entry->get(indexKey)) {
        FailureOr<int64_t> index = reader.getInteger(*entry, indexKey);
        if (failed(index))
          return failure();
        if (*index < 0 || size_t(*index) >= limit) {
          reader.fail("a stage names " + indexKey + " " +
                      std::to_string(*index) + ", the model has " +
                      std::to_string(limit));
          return failure();
        }
        port.index = *index;
        port.whole = entry->getBoolean("whole").value_or(false);
        port.microbatch = entry->getInteger("microbatch").value_or(-1);
        if (port.microbatch >= pipeline.microbatches) {
          reader.fail("a stage reads microbatch " +
                      std::to_string(port.microbatch) + " of " +
                      std::to_string(pipeline.microbatches));
          return failure();
        }
      } else {
        FailureOr<int64_t> boundary = reader.getInteger(*entry, "boundary");
        if (failed(boundary))
          return failure();
        if (*boundary < 0 || size_t(*boundary) >= pipeline.boundaries.size()) {
          reader.fail("a stage names boundary tensor " +
                      std::to_string(*boundary) + ", the pipeline has " +
                      std::to_string(pipeline.boundaries.size()));
          return failure();
        }
        port.boundary = *boundary;
        if (inputs) {
          FailureOr<int64_t> from = reader.getInteger(*entry, "from");
          if (failed(from))
            return failure();
          port.stages.push_back(*from);
        } else {
          FailureOr<SmallVector<int64_t>> to = reader.getShape(*entry, "to");
          if (failed(to))
            return failure();
          port.stages = *to;
        }
        for (int64_t peer : port.stages)
          if (peer < 0 || size_t(peer) >= stages->size()) {
            reader.fail("a boundary tensor names stage " +
                        std::to_string(peer));
            return failure();
          }
      }
      ports.push_back(std::move(port));
    }
    return success();
  };
  for (const llvm::json::Value &value : *stages) {
    const llvm::json::Object *entry = value.getAsObject();
    if (!entry) {
      reader.fail("'stage_list' holds a non-object");
      return failure();
    }
    PipelineStageManifest stage;
    FailureOr<SmallVector<int64_t>> grid = reader.getShape(*entry, "grid");
    FailureOr<SmallVector<int64_t>> ranks = reader.getShape(*entry, "ranks");
    FailureOr<SmallVector<int64_t>> blocks = reader.getShape(*entry, "blocks");
    if (failed(grid) || failed(ranks) || failed(blocks))
      return failure();
    stage.grid = *grid;
    int64_t devices = 1;
    for (int64_t size : stage.grid)
      devices *= size;
    if (ranks->size() != 2 || (*ranks)[0] != nextRank ||
        (*ranks)[1] - (*ranks)[0] != devices || blocks->size() != 2) {
      reader.fail("stage ranks must follow each other, one per device of "
                  "the stage's grid");
      return failure();
    }
    stage.firstRank = (*ranks)[0];
    stage.numRanks = devices;
    stage.firstBlock = (*blocks)[0];
    stage.numBlocks = (*blocks)[1] - (*blocks)[0];
    nextRank += devices;
    if (failed(readPorts(*entry, "inputs", true, stage.inputs)) ||
        failed(readPorts(*entry, "outputs", false, stage.outputs)))
      return failure();
    pipeline.stages.push_back(std::move(stage));
  }
  if (nextRank != manifest.numDevices) {
    reader.fail("the stages hold " + std::to_string(nextRank) +
                " ranks, the grid " + std::to_string(manifest.numDevices));
    return failure();
  }
  return pipeline;
}

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

  if (object->get("pipeline")) {
    FailureOr<PipelineManifest> pipeline =
        readPipeline(reader, *object, manifest);
    if (failed(pipeline))
      return failure();
    manifest.pipeline = std::move(*pipeline);
  }
  SmallVector<std::string> programDirs;
  if (manifest.pipeline)
    for (size_t s = 0; s < manifest.pipeline->stages.size(); ++s)
      programDirs.push_back((outDir + "/stage" + std::to_string(s)).str());
  else
    programDirs.push_back(outDir.str());
  for (const std::string &dir : programDirs) {
    SmallString<256> program(dir);
    llvm::sys::path::append(program, "program.so");
    if (!llvm::sys::fs::exists(program)) {
      emitDriverError(ctx) << "'" << program
                           << "' is missing; compile the model again";
      return failure();
    }
    SmallString<256> weightsDir(dir);
    llvm::sys::path::append(weightsDir, "weights");
    if (!llvm::sys::fs::is_directory(weightsDir)) {
      emitDriverError(ctx) << "'" << weightsDir
                           << "' is missing; compile the model again";
      return failure();
    }
  }
  return manifest;
}
