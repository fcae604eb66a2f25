//===- Train.cpp - autopar train ------------------------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements `autopar train OUTDIR --data DIR --steps N`: runs the
// training step compiled with `compile --mode training` N times in one job.
// The runner keeps the weights and the optimizer state the step stores in
// memory on each rank between steps (autopar-runner --steps) and prints one
// `step K loss=V` line per step; with `--save`, every rank writes its shards
// of the stored weights once the last step has succeeded, and the driver
// assembles the model's initializers from them (training.json names their
// ids and shardings) and writes the ONNX model with the new values.
//
//===----------------------------------------------------------------------===//

#include "DriverInternal.h"

#include "autopar/Dialect/Autopar/IR/Autopar.h"
#include "autopar/Dialect/Autopar/IR/ShardLayout.h"
#include "autopar/Dialect/Autopar/IR/WeightParts.h"
#include "autopar/Import/Import.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::driver;

static std::string joinPath(StringRef dir, const Twine &name) {
  SmallString<256> path(dir);
  llvm::sys::path::append(path, name);
  return std::string(path);
}

namespace {
/// A weight the step stores, as training.json describes it.
struct StoredWeight {
  int64_t id = 0;
  std::string name;
  DType dtype = DType::F32;
  SmallVector<int64_t> shape;
  SmallVector<SmallVector<int64_t>> dims;
  SmallVector<int64_t> partial;
  /// Optimizer state, not a model initializer.
  bool state = false;
  /// A part of initializer `part->source` (autopar-split-fused-projections).
  std::optional<WeightPart> part;
};

struct TrainingDescription {
  std::string model;
  std::string loss;
  std::vector<StoredWeight> weights;
};
} // namespace

/// Reads `OUTDIR/training.json` (written by compile --mode training).
static FailureOr<TrainingDescription> readTrainingDescription(MLIRContext &ctx,
                                                              StringRef dir) {
  std::string path = joinPath(dir, "training.json");
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    emitDriverError(ctx) << "'" << dir
                         << "' holds no training step (no training.json; "
                            "compile the model with --mode training)";
    return failure();
  }
  llvm::Expected<llvm::json::Value> parsed =
      llvm::json::parse((*buffer)->getBuffer());
  auto malformed = [&](StringRef what) {
    emitDriverError(ctx) << "'" << path << "' is malformed: " << what;
    return failure();
  };
  if (!parsed) {
    std::string message = llvm::toString(parsed.takeError());
    return malformed(message);
  }
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root)
    return malformed("not an object");
  TrainingDescription description;
  if (std::optional<StringRef> model = root->getString("model"))
    description.model = model->str();
  if (std::optional<StringRef> loss = root->getString("loss"))
    description.loss = loss->str();
  const llvm::json::Array *weights = root->getArray("stored_weights");
  if (!weights)
    return malformed("no 'stored_weights'");
  auto readInts = [](const llvm::json::Array *array,
                     SmallVector<int64_t> &out) {
    if (!array)
      return false;
    for (const llvm::json::Value &v : *array) {
      std::optional<int64_t> i = v.getAsInteger();
      if (!i)
        return false;
      out.push_back(*i);
    }
    return true;
  };
  for (const llvm::json::Value &value : *weights) {
    const llvm::json::Object *w = value.getAsObject();
    StoredWeight weight;
    std::optional<int64_t> id = w ? w->getInteger("id") : std::nullopt;
    std::optional<StringRef> name = w ? w->getString("name") : std::nullopt;
    std::optional<StringRef> dtype = w ? w->getString("dtype") : std::nullopt;
    std::optional<DType> type =
        dtype ? parseDTypeName(*dtype) : std::optional<DType>();
    const llvm::json::Array *dims = w ? w->getArray("sharding") : nullptr;
    if (!id || !name || !type || !dims ||
        !readInts(w->getArray("shape"), weight.shape) ||
        !readInts(w->getArray("partial"), weight.partial))
      return malformed("a stored weight lacks id, name, dtype, shape or "
                       "sharding");
    for (const llvm::json::Value &d : *dims) {
      weight.dims.emplace_back();
      if (!readInts(d.getAsArray(), weight.dims.back()))
        return malformed("a sharding entry is not a list of axes");
    }
    if (weight.dims.size() != weight.shape.size())
      return malformed("a sharding has another rank than its weight");
    weight.id = *id;
    weight.name = name->str();
    weight.dtype = *type;
    weight.state = w->getBoolean("state").value_or(false);
    if (const llvm::json::Object *part = w->getObject("part_of")) {
      std::optional<StringRef> source = part->getString("source");
      std::optional<int64_t> axis = part->getInteger("axis");
      std::optional<int64_t> offset = part->getInteger("offset");
      if (!source || !axis || !offset || *axis < 0 ||
          *axis >= (int64_t)weight.shape.size() || *offset < 0)
        return malformed("a weight part lacks source, axis or offset");
      weight.part = WeightPart{source->str(), *axis, *offset};
    }
    description.weights.push_back(std::move(weight));
  }
  return description;
}

/// Reads the step's runtime inputs: the model's inputs `DIR/input_<i>.pb`
/// and, for the mse and cross_entropy losses, the last input of the step
/// (target or labels) from `DIR/target.pb`.
static FailureOr<std::vector<HostTensor>>
readTrainingInputs(MLIRContext &ctx, const Manifest &manifest,
                   const TrainingDescription &description, StringRef dir) {
  if (!llvm::sys::fs::is_directory(dir)) {
    emitDriverError(ctx) << "data directory '" << dir << "' does not exist";
    return failure();
  }
  bool hasTarget = description.loss != "output";
  size_t count = manifest.inputs.size();
  std::vector<HostTensor> tensors;
  for (auto [index, sig] : llvm::enumerate(manifest.inputs)) {
    bool target = hasTarget && index + 1 == count;
    std::string file = target ? std::string("target.pb")
                              : "input_" + std::to_string(index) + ".pb";
    std::string path = joinPath(dir, file);
    if (!llvm::sys::fs::exists(path)) {
      emitDriverError(ctx) << "missing " << (target ? "target" : "input")
                           << " '" << sig.name << "': '" << path
                           << "' does not exist";
      return failure();
    }
    std::string error;
    FailureOr<HostTensor> tensor = readTensorProtoFile(path, error);
    if (failed(tensor)) {
      emitDriverError(ctx) << "cannot read '" << path << "': " << error;
      return failure();
    }
    if (tensor->dtype != sig.dtype ||
        ArrayRef<int64_t>(tensor->shape) != ArrayRef<int64_t>(sig.shape)) {
      emitDriverError(ctx) << "'" << file << "' is "
                           << getDTypeName(tensor->dtype) << " "
                           << formatShape(tensor->shape) << ", expected "
                           << getDTypeName(sig.dtype) << " "
                           << formatShape(sig.shape) << " ('" << sig.name
                           << "')";
      return failure();
    }
    tensors.push_back(std::move(*tensor));
  }
  return tensors;
}

/// Copies the row-major block `src` of `localShape` into the row-major
/// tensor `dst` of `globalShape` at `offsets`.
static void placeBlock(const char *src, ArrayRef<int64_t> localShape,
                       ArrayRef<int64_t> globalShape, ArrayRef<int64_t> offsets,
                       int64_t elementSize, char *dst) {
  int64_t rank = globalShape.size();
  if (rank == 0) {
    std::memcpy(dst, src, elementSize);
    return;
  }
  SmallVector<int64_t> strides(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * globalShape[d + 1];
  int64_t rowBytes = localShape.back() * elementSize;
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < rank; ++d)
    rows *= localShape[d];
  SmallVector<int64_t> index(rank, 0);
  for (int64_t row = 0; row < rows && rowBytes; ++row) {
    int64_t linear = 0;
    for (int64_t d = 0; d < rank; ++d)
      linear += (offsets[d] + index[d]) * strides[d];
    std::memcpy(dst + linear * elementSize, src + row * rowBytes, rowBytes);
    for (int64_t d = rank - 2; d >= 0; --d) {
      if (++index[d] < localShape[d])
        break;
      index[d] = 0;
    }
  }
}

/// The MPMD apps of a training pipeline compiled into `outDir`: each stage
/// reads its microbatch slices of the inputs in `inDir` (the whole batch),
/// writes its outputs (the loss) into `resultDir` and, with `stateDir`, its
/// trained state into `stateDir/stage<s>`; `options` (steps, profile,
/// threads) go to every stage.
static std::vector<RunnerApp> getPipelineApps(const Manifest &manifest,
                                              StringRef outDir, StringRef inDir,
                                              StringRef resultDir,
                                              StringRef stateDir,
                                              ArrayRef<std::string> options) {
  const PipelineManifest &pipeline = *manifest.pipeline;
  std::vector<RunnerApp> apps;
  for (auto [s, stage] : llvm::enumerate(pipeline.stages)) {
    RunnerApp app;
    app.ranks = stage.numRanks;
    app.args = getStageRunnerArgs(outDir, pipeline, s);
    for (const PipelinePort &port : stage.inputs) {
      const TensorSignature &sig = manifest.inputs[port.index];
      int64_t bytes = getDTypeSize(sig.dtype);
      for (int64_t size : sig.shape)
        bytes *= size;
      int64_t offset = port.microbatch < 0
                           ? 0
                           : port.microbatch * bytes / pipeline.microbatches;
      app.args.insert(
          app.args.end(),
          {"--input",
           std::to_string(offset) + ":" +
               joinPath(inDir,
                        "input_" + std::to_string(port.index) + ".bin")});
    }
    if (!stage.outputs.empty())
      app.args.insert(app.args.end(), {"--outputs", resultDir.str()});
    if (!stateDir.empty())
      app.args.insert(
          app.args.end(),
          {"--save-state", joinPath(stateDir, "stage" + std::to_string(s))});
    app.args.insert(app.args.end(), options.begin(), options.end());
    apps.push_back(std::move(app));
  }
  return apps;
}

/// Assembles the trained initializers of one program (on `grid`) from its
/// ranks' saved shards in `stateDir` into `updated`.
static LogicalResult collectTrainedWeights(
    MLIRContext &ctx, ArrayRef<int64_t> grid, int64_t numDevices,
    const TrainingDescription &description, StringRef stateDir,
    std::map<std::string, HostTensor> &updated,
    std::vector<std::pair<WeightPart, HostTensor>> &parts) {
  ctx.getOrLoadDialect<AutoparDialect>();
  for (const StoredWeight &w : description.weights) {
    if (w.state)
      continue;
    if (!w.partial.empty()) {
      emitDriverError(ctx) << "weight '" << w.name
                           << "' is stored as a pending sum, which --save "
                              "cannot assemble";
      return failure();
    }
    ShardingAttr sharding = ShardingAttr::get(&ctx, w.dims, {});
    FailureOr<SmallVector<int64_t>> local = getLocalShape(
        w.shape, sharding, grid, [&] { return emitDriverError(ctx); });
    if (failed(local))
      return failure();
    int64_t elementSize = getDTypeSize(w.dtype);
    int64_t localBytes = elementSize;
    for (int64_t size : *local)
      localBytes *= size;
    HostTensor tensor;
    tensor.dtype = w.dtype;
    tensor.shape = w.shape;
    tensor.data.assign(tensor.getNumElements() * elementSize, 0);
    for (int64_t rank = 0; rank < numDevices; ++rank) {
      std::string path =
          joinPath(stateDir, "rank" + std::to_string(rank) + "/w" +
                                 std::to_string(w.id) + ".bin");
      auto buffer =
          llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                      /*RequiresNullTerminator=*/false);
      if (!buffer || (int64_t)(*buffer)->getBufferSize() != localBytes) {
        emitDriverError(ctx)
            << "rank " << rank << " saved no shard of '" << w.name << "' of "
            << localBytes << " bytes (" << path << ")";
        return failure();
      }
      SmallVector<int64_t> coords = getGridCoordinates(rank, grid);
      SmallVector<int64_t> offsets =
          getShardOffsets(w.shape, sharding, grid, coords);
      placeBlock((*buffer)->getBufferStart(), *local, w.shape, offsets,
                 elementSize, tensor.data.data());
    }
    if (w.part) {
      parts.emplace_back(*w.part, std::move(tensor));
      continue;
    }
    // A weight several pipeline stages read (tied) is one value: each stage
    // applied the same summed gradient to its copy.
    if (auto it = updated.find(w.name);
        it != updated.end() && it->second.data != tensor.data) {
      emitDriverError(ctx) << "internal error: the copies of weight '" << w.name
                           << "' in different pipeline stages differ after "
                              "training";
      return failure();
    }
    updated[w.name] = std::move(tensor);
  }
  return success();
}

/// Puts the trained parts of initializers (autopar-split-fused-projections)
/// back together into `updated`, under the initializers' names. The parts of
/// one initializer must tile it along their axis.
static LogicalResult
assembleWeightParts(MLIRContext &ctx,
                    std::vector<std::pair<WeightPart, HostTensor>> &parts,
                    std::map<std::string, HostTensor> &updated) {
  std::map<std::string, std::vector<std::pair<WeightPart, HostTensor> *>>
      bySource;
  for (auto &entry : parts)
    bySource[entry.first.source].push_back(&entry);
  for (auto &[source, pieces] : bySource) {
    llvm::sort(pieces, [](auto *a, auto *b) {
      return a->first.offset < b->first.offset;
    });
    const WeightPart &first = pieces.front()->first;
    const HostTensor &model = pieces.front()->second;
    int64_t axis = first.axis;
    int64_t extent = 0;
    for (auto *piece : pieces) {
      const HostTensor &t = piece->second;
      bool fits = piece->first.axis == axis && t.dtype == model.dtype &&
                  t.shape.size() == model.shape.size() &&
                  piece->first.offset == extent;
      for (size_t d = 0; fits && d < t.shape.size(); ++d)
        fits = (int64_t)d == axis || t.shape[d] == model.shape[d];
      if (!fits) {
        emitDriverError(ctx) << "the trained parts of '" << source
                             << "' do not tile it along dimension " << axis;
        return failure();
      }
      extent += t.shape[axis];
    }
    HostTensor whole;
    whole.dtype = model.dtype;
    whole.shape = model.shape;
    whole.shape[axis] = extent;
    int64_t elementSize = getDTypeSize(whole.dtype);
    whole.data.assign(whole.getNumElements() * elementSize, 0);
    // Each part is `outer` runs of `shape[axis] * inner` bytes, one in each
    // `extent * inner` of the whole.
    int64_t outer = 1, inner = elementSize;
    for (int64_t d = 0; d < axis; ++d)
      outer *= whole.shape[d];
    for (size_t d = axis + 1; d < whole.shape.size(); ++d)
      inner *= whole.shape[d];
    for (auto *piece : pieces) {
      int64_t run = piece->second.shape[axis] * inner;
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(whole.data.data() + o * extent * inner +
                        piece->first.offset * inner,
                    piece->second.data.data() + o * run, run);
    }
    updated[source] = std::move(whole);
  }
  return success();
}

/// Assembles the trained initializers from every rank's saved shards in
/// `stateDir` (a pipeline: `stateDir/stage<s>` with each stage's own
/// description) into `updated`.
static LogicalResult collectAllTrainedWeights(
    MLIRContext &ctx, StringRef outDir, const Manifest &manifest,
    const TrainingDescription &description, StringRef stateDir,
    std::map<std::string, HostTensor> &updated) {
  std::vector<std::pair<WeightPart, HostTensor>> parts;
  if (!manifest.pipeline) {
    if (failed(collectTrainedWeights(ctx, manifest.grid, manifest.numDevices,
                                     description, stateDir, updated, parts)))
      return failure();
    return assembleWeightParts(ctx, parts, updated);
  }
  for (auto [s, stage] : llvm::enumerate(manifest.pipeline->stages)) {
    std::string stageName = "stage" + std::to_string(s);
    FailureOr<TrainingDescription> stageDescription =
        readTrainingDescription(ctx, joinPath(outDir, stageName));
    if (failed(stageDescription) ||
        failed(collectTrainedWeights(
            ctx, stage.grid, stage.numRanks, *stageDescription,
            joinPath(stateDir, stageName), updated, parts)))
      return failure();
  }
  return assembleWeightParts(ctx, parts, updated);
}

FailureOr<std::vector<HostTensor>>
mlir::autopar::readTrainingData(MLIRContext &ctx, StringRef outDir,
                                const Manifest &manifest, StringRef dataDir) {
  FailureOr<TrainingDescription> description =
      readTrainingDescription(ctx, outDir);
  if (failed(description))
    return failure();
  return readTrainingInputs(ctx, manifest, *description, dataDir);
}

FailureOr<std::string> mlir::autopar::getTrainedModelSource(MLIRContext &ctx,
                                                            StringRef outDir) {
  FailureOr<TrainingDescription> description =
      readTrainingDescription(ctx, outDir);
  if (failed(description))
    return failure();
  if (description->model.empty()) {
    emitDriverError(ctx) << "training.json names no model to write back";
    return failure();
  }
  return description->model;
}

FailureOr<TrainingRun> mlir::autopar::runTraining(
    MLIRContext &ctx, StringRef outDir, const Manifest &manifest,
    ArrayRef<HostTensor> inputs, const TrainingRunOptions &options) {
  FailureOr<TrainingDescription> description =
      readTrainingDescription(ctx, outDir);
  if (failed(description))
    return failure();
  if (inputs.size() != manifest.inputs.size()) {
    emitDriverError(ctx) << "got " << inputs.size()
                         << " inputs, the training step has "
                         << manifest.inputs.size();
    return failure();
  }
  SmallString<256> absOutDir(outDir);
  llvm::sys::fs::make_absolute(absOutDir);
  TempDirectory runDir;
  if (failed(runDir.create(ctx, "autopar-train")))
    return failure();
  std::string inDir = joinPath(runDir.get(), "in");
  std::string resultDir = joinPath(runDir.get(), "out");
  // The ranks save their state here (a pipeline's stages under
  // stateDir/stage<s>).
  std::string stateDir =
      options.collectWeights ? joinPath(runDir.get(), "state") : "";
  std::vector<std::string> dirs = {inDir, resultDir};
  if (manifest.pipeline && options.collectWeights)
    dirs.push_back(stateDir);
  for (const std::string &dir : dirs)
    if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
      emitDriverError(ctx) << "cannot create '" << dir << "': " << ec.message();
      return failure();
    }
  for (auto [index, tensor] : llvm::enumerate(inputs))
    if (failed(writeFileBytes(
            ctx, joinPath(inDir, "input_" + std::to_string(index) + ".bin"),
            tensor.data)))
      return failure();

  // The options of every program of the job.
  std::vector<std::string> common = {"--steps", std::to_string(options.steps)};
  if (options.profile)
    common.push_back("--profile");
  if (options.threads)
    common.insert(common.end(), {"--threads", std::to_string(options.threads)});
  TrainingRun run;
  auto onLine = [&](StringRef line) {
    StringRef text = line.trim();
    if (!text.starts_with("step "))
      return;
    double loss;
    StringRef value = text.substr(text.find("loss=") + 5);
    if (text.contains("loss=") && !value.getAsDouble(loss))
      run.losses.push_back(loss);
    if (options.onStep)
      options.onStep(text);
  };
  std::string err;
  FailureOr<std::string> out;
  if (manifest.pipeline) {
    out = launchRunnerApps(ctx,
                           getPipelineApps(manifest, absOutDir, inDir,
                                           resultDir, stateDir, common),
                           runDir.get(), options.timeoutSeconds, &err,
                           options.hostfile, onLine);
  } else {
    std::vector<std::string> args = {
        "--program", joinPath(absOutDir, "program.so"),
        "--grid",    formatGridShape(manifest.grid),
        "--weights", joinPath(absOutDir, "weights"),
        "--inputs",  inDir,
        "--outputs", resultDir};
    if (options.collectWeights)
      args.insert(args.end(), {"--save-state", stateDir});
    args.insert(args.end(), common.begin(), common.end());
    out = launchRunner(ctx, args, manifest.numDevices, runDir.get(),
                       options.timeoutSeconds, &err, options.hostfile, onLine);
  }
  if (failed(out))
    return failure();
  llvm::errs() << err;
  SmallVector<StringRef> lines;
  StringRef(*out).split(lines, '\n');
  for (StringRef line : lines) {
    StringRef text = line.trim();
    double value;
    unsigned long long bytes;
    if (text.consume_front("autopar-runtime: step_time_s=") &&
        !text.getAsDouble(value)) {
      run.measured.stepTimeSeconds = value;
    } else if (text.consume_front("autopar-runtime: peak_memory_bytes=") &&
               !text.getAsInteger(10, bytes)) {
      run.measured.peakMemoryBytes = static_cast<int64_t>(bytes);
    }
  }
  if (run.losses.size() != options.steps) {
    emitDriverError(ctx) << "the job reported " << run.losses.size() << " of "
                         << options.steps << " steps";
    return failure();
  }
  if (options.collectWeights &&
      failed(collectAllTrainedWeights(ctx, outDir, manifest, *description,
                                      stateDir, run.weights)))
    return failure();
  return run;
}

int driver::trainCommand(int argc, char **argv) {
  static llvm::cl::OptionCategory category("autopar train options");
  static llvm::cl::opt<std::string> outDir(llvm::cl::Positional,
                                           llvm::cl::desc("<outdir>"),
                                           llvm::cl::cat(category));
  static llvm::cl::opt<std::string> data(
      "data",
      llvm::cl::desc("directory with input_<i>.pb (the model's inputs, the "
                     "whole batch) and target.pb (labels or targets)"),
      llvm::cl::value_desc("dir"), llvm::cl::cat(category));
  static llvm::cl::opt<std::string> steps(
      "steps", llvm::cl::desc("number of training steps (each on that batch)"),
      llvm::cl::value_desc("N"), llvm::cl::cat(category));
  static llvm::cl::opt<std::string> save(
      "save",
      llvm::cl::desc("write the ONNX model with the trained initializers "
                     "(same graph) after the last step"),
      llvm::cl::value_desc("model.onnx"), llvm::cl::cat(category));
  static LauncherOptions launcher(category);
  static llvm::cl::opt<bool> profile(
      "profile",
      llvm::cl::desc("compare the measured step time (median over the "
                     "steps) and peak memory with the plan's prediction"),
      llvm::cl::cat(category));
  static llvm::cl::opt<std::string> timeout(
      "timeout", llvm::cl::desc("stop the job after S seconds (default 600)"),
      llvm::cl::value_desc("S"), llvm::cl::init("600"),
      llvm::cl::cat(category));
  // LLVM registers a hidden integer `-threads` of its own (see `run`).
  static bool replaced = [] {
    auto registered = llvm::cl::getRegisteredOptions();
    if (auto it = registered.find("threads"); it != registered.end())
      it->second->removeArgument();
    return true;
  }();
  (void)replaced;
  static llvm::cl::opt<std::string> threads(
      "threads", llvm::cl::desc("threads per rank (default: cores / ranks)"),
      llvm::cl::value_desc("N"), llvm::cl::cat(category));

  if (std::optional<int> exit = parseCommandLine(
          argc, argv, "train",
          "run training steps of a model compiled with --mode training\n\n"
          "  autopar train OUTDIR --data DIR --steps N [--save MODEL.onnx] "
          "[--profile]\n\n"
          "Prints `step K loss=V` per step (V: the loss of step K's forward "
          "pass). The weights stay in memory on every rank between steps; "
          "nothing is written when a step fails.\n",
          category, kErrorExitCode))
    return *exit;
  if (outDir.empty()) {
    printError("no compiled directory given (autopar train OUTDIR --data DIR "
               "--steps N)");
    return kErrorExitCode;
  }
  if (data.empty()) {
    printError("missing --data DIR");
    return kErrorExitCode;
  }
  if (steps.empty()) {
    printError("missing --steps N");
    return kErrorExitCode;
  }
  FailureOr<uint64_t> stepCount = parseUnsignedOption("steps", steps);
  FailureOr<uint64_t> seconds = parseUnsignedOption("timeout", timeout);
  if (failed(stepCount) || failed(seconds))
    return kErrorExitCode;
  if (*stepCount == 0 || *stepCount > 1000000) {
    printError("--steps must be between 1 and 1000000, got '" + steps + "'");
    return kErrorExitCode;
  }
  uint64_t threadCount = 0;
  if (!threads.empty()) {
    FailureOr<uint64_t> parsed = parseUnsignedOption("threads", threads);
    if (failed(parsed))
      return kErrorExitCode;
    threadCount = *parsed;
  }

  DriverContext context;
  MLIRContext &ctx = context.get();
  ProgressLog progress;
  progress.step("train: reading the program and the data");
  FailureOr<Manifest> manifest = readManifest(ctx, outDir);
  if (failed(manifest))
    return kErrorExitCode;
  FailureOr<std::string> source;
  if (!save.empty()) {
    if (llvm::sys::fs::is_directory(save)) {
      printError("--save '" + save + "' is a directory");
      return kErrorExitCode;
    }
    source = getTrainedModelSource(ctx, outDir);
    if (failed(source))
      return kErrorExitCode;
  }
  FailureOr<std::vector<HostTensor>> inputs =
      readTrainingData(ctx, outDir, *manifest, data);
  if (failed(inputs))
    return kErrorExitCode;

  TrainingRunOptions options;
  options.steps = *stepCount;
  options.timeoutSeconds = static_cast<unsigned>(*seconds);
  options.threads = static_cast<unsigned>(threadCount);
  options.profile = profile;
  options.collectWeights = !save.empty();
  RunOptions launch;
  if (failed(launcher.apply(launch)))
    return kErrorExitCode;
  options.hostfile = launch.hostfile;
  // Each step's line as the job prints it.
  options.onStep = [](StringRef line) {
    llvm::outs() << line << "\n";
    llvm::outs().flush();
  };
  progress.step("train: starting " + Twine(*stepCount) + " steps on " +
                Twine(manifest->numDevices) +
                (manifest->numDevices == 1 ? " device" : " devices") +
                " (each rank loads its weight shards first)");
  FailureOr<TrainingRun> run =
      runTraining(ctx, outDir, *manifest, *inputs, options);
  if (failed(run))
    return kErrorExitCode;
  if (profile)
    printPredictionComparison(outDir, run->measured);
  if (!save.empty()) {
    progress.step("train: writing the trained model");
    std::string error;
    if (failed(
            writeModelWithInitializers(*source, save, run->weights, error))) {
      printError("--save: " + error);
      return kErrorExitCode;
    }
    llvm::outs() << "saved the trained model to '" << save << "'\n";
  }
  return 0;
}
