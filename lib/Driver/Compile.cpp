//===- Compile.cpp - autopar compile and autopar import ---------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements the compilation of an imported model into an output
// directory (plan files, device program, per-device weight shards, manifest)
// and the `compile` and `import` subcommands.
//
//===----------------------------------------------------------------------===//

#include "DriverInternal.h"

#include "autopar/Conversion/ProgramToRuntime.h"
#include "autopar/Dialect/Autopar/IR/Autopar.h"
#include "autopar/Dialect/Autopar/IR/ShardLayout.h"
#include "autopar/Dialect/Autopar/IR/WeightParts.h"
#include "autopar/Pipelines/Pipelines.h"
#include "autopar/Target/Target.h"
#include "autopar/Transforms/Autodiff/Markers.h"
#include "autopar/Transforms/Autodiff/MicrobatchDraws.h"
#include "autopar/Transforms/Lowering/PackedWeights.h"
#include "autopar/Transforms/Lowering/Precision.h"
#include "autopar/Transforms/Passes.h"
#include "autopar/Transforms/Planning/PlanReport.h"
#include "autopar/Transforms/Planning/StageSplit.h"
#include "autopar/Transforms/Planning/TrainingLoss.h"
#include "mlir/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstring>
#include <limits>

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::driver;

//===----------------------------------------------------------------------===//
// Stages
//===----------------------------------------------------------------------===//

/// Set by `compile --pass-timing`: every stage prints MLIR's pass timing
/// report (wall time per pass) to stderr.
static bool reportPassTiming = false;

/// Runs the passes that `build` adds on `module`; reports a generic error
/// naming `stage` when the passes failed without saying why.
static LogicalResult runStage(MLIRContext &ctx, ModuleOp module,
                              StringRef stage,
                              function_ref<void(OpPassManager &)> build) {
  bool sawError = false;
  ScopedDiagnosticHandler errorWatcher(&ctx, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error)
      sawError = true;
    return failure();
  });
  PassManager pm(&ctx, ModuleOp::getOperationName());
  build(pm);
  if (reportPassTiming)
    pm.enableTiming();
  if (succeeded(pm.run(module)))
    return success();
  if (!sawError)
    emitDriverError(ctx) << "the " << stage << " stage failed";
  return failure();
}

static LogicalResult runPartitionStage(MLIRContext &ctx, ModuleOp module) {
  return runStage(ctx, module, "partitioning", [&](OpPassManager &pm) {
    buildPartitionPipeline(pm, PartitionPipelineOptions());
  });
}

static LogicalResult runLowerStage(MLIRContext &ctx, ModuleOp module) {
  return runStage(ctx, module, "lowering", [&](OpPassManager &pm) {
    buildLowerToLLVMPipeline(pm, LowerToLLVMPipelineOptions());
  });
}

/// The lowering in two parts around the writing of the weight files: data
/// tiling gives the weights of contractions their packed layout, which
/// writeWeightShards then writes.
static LogicalResult runDataTilingStage(MLIRContext &ctx, ModuleOp module,
                                        StringRef precision, bool winograd) {
  return runStage(ctx, module, "data tiling", [&](OpPassManager &pm) {
    LowerToLLVMPipelineOptions options;
    options.packWeights = true;
    options.precision = precision.str();
    options.winograd = winograd;
    buildDataTilingPipeline(pm, options);
  });
}

static LogicalResult runLowerDataTiledStage(MLIRContext &ctx, ModuleOp module,
                                            const CompileOptions &compile) {
  return runStage(ctx, module, "lowering", [&](OpPassManager &pm) {
    LowerToLLVMPipelineOptions options;
    options.precision = compile.precision;
    if (compile.minFlopsPerThread)
      options.minFlopsPerThread = *compile.minFlopsPerThread;
    buildLowerDataTiledPipeline(pm, options);
  });
}

/// The plan search's options for a compile: the storage precision, so that
/// the plan's memory and communication figures use its element size.
static PlanSearchOptions getPlanSearchOptions(const CompileOptions &options) {
  PlanSearchOptions search;
  if (std::optional<StoragePrecision> precision =
          parseStoragePrecision(options.precision))
    switch (*precision) {
    case StoragePrecision::F32:
      break;
    case StoragePrecision::BF16:
      search.precision = PlanPrecision::BF16;
      break;
    case StoragePrecision::F16:
      search.precision = PlanPrecision::F16;
      break;
    }
  search.shardOptimizerUpdates =
      options.training && options.training->distributedOptimizer;
  return search;
}

/// Returns the `func.func @main` of `module` or emits an error.
static FailureOr<func::FuncOp> getMainFunction(MLIRContext &ctx,
                                               ModuleOp module) {
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main) {
    emitDriverError(ctx) << "the module has no 'func.func @main'";
    return failure();
  }
  return main;
}

/// Normalizes the `--grid` value; errors on `ctx`.
static FailureOr<SmallVector<int64_t>> parseGridOption(MLIRContext &ctx,
                                                       StringRef grid) {
  std::string error;
  FailureOr<SmallVector<int64_t>> shape = parseGridShape(grid, error);
  if (failed(shape))
    emitDriverError(ctx) << error;
  return shape;
}

FailureOr<OwningOpRef<ModuleOp>>
mlir::autopar::runStagesUntil(MLIRContext &ctx, ImportedModel &model,
                              StringRef grid, StringRef plan, EmitStage stage) {
  OwningOpRef<ModuleOp> module = model.module->clone();
  if (stage == EmitStage::Imported)
    return module;
  FailureOr<SmallVector<int64_t>> gridShape = parseGridOption(ctx, grid);
  if (failed(gridShape) || failed(checkPlanArgument(ctx, plan)))
    return failure();
  FailureOr<std::optional<ClusterSpec>> cluster =
      resolveCluster(ctx, "", *gridShape, /*required=*/plan == "auto");
  if (failed(cluster))
    return failure();
  PlanMetadata meta;
  if (failed(planModule(ctx, *module, *gridShape, plan, *cluster,
                        PlanMode::Inference, /*quiet=*/true, meta)))
    return failure();
  if (stage == EmitStage::Annotated)
    return module;
  if (failed(runPartitionStage(ctx, *module)))
    return failure();
  if (stage == EmitStage::Partitioned)
    return module;
  if (failed(runLowerStage(ctx, *module)))
    return failure();
  return module;
}

//===----------------------------------------------------------------------===//
// Signatures, cluster file
//===----------------------------------------------------------------------===//

/// Describes the tensor type `type` of runtime input/output `name`.
static FailureOr<TensorSignature> getSignature(MLIRContext &ctx, Type type,
                                               StringRef name) {
  auto tensorType = dyn_cast<RankedTensorType>(type);
  FailureOr<DType> dtype =
      tensorType ? getDTypeFromElementType(tensorType.getElementType())
                 : FailureOr<DType>(failure());
  if (failed(dtype)) {
    emitDriverError(ctx) << "'" << name << "' has type " << type
                         << ", which cannot cross the host/device boundary";
    return failure();
  }
  TensorSignature sig;
  sig.name = name.str();
  sig.dtype = *dtype;
  sig.shape.assign(tensorType.getShape().begin(), tensorType.getShape().end());
  return sig;
}

/// Fills the inputs and outputs of `manifest` from @main of `module` (the
/// imported one, or the training step, whose extra input is the labels or
/// target and whose output is the loss).
static LogicalResult fillSignatures(MLIRContext &ctx, ImportedModel &model,
                                    ModuleOp module, Manifest &manifest) {
  FailureOr<func::FuncOp> main = getMainFunction(ctx, module);
  if (failed(main))
    return failure();
  FunctionType type = main->getFunctionType();
  for (auto [index, input] : llvm::enumerate(type.getInputs())) {
    std::string name = index < model.inputNames.size()
                           ? model.inputNames[index]
                           : getOnnxValueName(main->getArgument(index));
    if (name.empty())
      name = "input_" + std::to_string(index);
    FailureOr<TensorSignature> sig = getSignature(ctx, input, name);
    if (failed(sig))
      return failure();
    manifest.inputs.push_back(std::move(*sig));
  }
  for (auto [index, output] : llvm::enumerate(type.getResults())) {
    std::string name = module != *model.module ? std::string("loss")
                       : index < model.outputNames.size()
                           ? model.outputNames[index]
                           : "output_" + std::to_string(index);
    FailureOr<TensorSignature> sig = getSignature(ctx, output, name);
    if (failed(sig))
      return failure();
    manifest.outputs.push_back(std::move(*sig));
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Weight shards
//===----------------------------------------------------------------------===//

/// Copies the block at `offsets` of `localShape` out of the row-major tensor
/// `src` of `globalShape` into `dst` (row-major, contiguous).
static void copyBlock(const char *src, ArrayRef<int64_t> globalShape,
                      ArrayRef<int64_t> offsets, ArrayRef<int64_t> localShape,
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
  int64_t numRows = 1;
  for (int64_t d = 0; d + 1 < rank; ++d)
    numRows *= localShape[d];
  if (rowBytes == 0)
    return;
  SmallVector<int64_t> index(rank, 0);
  for (int64_t row = 0; row < numRows; ++row) {
    int64_t linear = 0;
    for (int64_t d = 0; d < rank; ++d)
      linear += (offsets[d] + index[d]) * strides[d];
    std::memcpy(dst + row * rowBytes, src + linear * elementSize, rowBytes);
    for (int64_t d = rank - 2; d >= 0; --d) {
      if (++index[d] < localShape[d])
        break;
      index[d] = 0;
    }
  }
}

/// Writes every device's shard of every weight of the partitioned @main into
/// `outDir/weights/rank<R>/w<id>.bin` and records the weights in `manifest`.
static LogicalResult writeWeightShards(MLIRContext &ctx, ModuleOp module,
                                       ImportedModel &model,
                                       ArrayRef<int64_t> grid, StringRef outDir,
                                       Manifest &manifest) {
  FailureOr<func::FuncOp> main = getMainFunction(ctx, module);
  if (failed(main))
    return failure();

  // The first `autopar.weight` of each name; every use of a name must agree
  // on the shard it loads, since one file per (rank, id) is written.
  llvm::StringMap<WeightOp> weightOps;
  WalkResult walk = main->walk([&](WeightOp op) -> WalkResult {
    auto [it, inserted] = weightOps.try_emplace(op.getName(), op);
    if (inserted)
      return WalkResult::advance();
    WeightOp first = it->second;
    if (first.getType() != op.getType() ||
        getSharding(first.getResult()) != getSharding(op.getResult()) ||
        first->getAttr(kGlobalTypeAttrName) !=
            op->getAttr(kGlobalTypeAttrName)) {
      op.emitError() << "weight '" << op.getName()
                     << "' is loaded with two different shardings";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();

  SmallString<256> weightsDir(outDir);
  llvm::sys::path::append(weightsDir, "weights");
  if (llvm::sys::fs::exists(weightsDir))
    if (std::error_code ec = llvm::sys::fs::remove_directories(weightsDir)) {
      emitDriverError(ctx) << "cannot remove the old '" << weightsDir
                           << "': " << ec.message();
      return failure();
    }
  int64_t numDevices = manifest.numDevices;
  for (int64_t rank = 0; rank < numDevices; ++rank) {
    SmallString<256> rankDir(weightsDir);
    llvm::sys::path::append(rankDir, "rank" + std::to_string(rank));
    if (std::error_code ec = llvm::sys::fs::create_directories(rankDir)) {
      emitDriverError(ctx) << "cannot create '" << rankDir
                           << "': " << ec.message();
      return failure();
    }
  }

  SmallVector<std::string> order = getProgramWeightOrder(*main);
  for (auto [id, name] : llvm::enumerate(order)) {
    auto it = weightOps.find(name);
    if (it == weightOps.end()) {
      emitDriverError(ctx) << "weight '" << name
                           << "' of the program's weight order has no "
                              "'autopar.weight' op";
      return failure();
    }
    WeightOp op = it->second;
    // A packed weight (autopar-pack-contractions) is cut from the global
    // weight as its unpacked local type, then packed.
    auto localType = cast<RankedTensorType>(op.getType());
    auto packedTiles =
        op->getAttrOfType<DenseI64ArrayAttr>(kPackedTilesAttrName);
    if (packedTiles) {
      auto source = op->getAttrOfType<TypeAttr>(kPackedSourceTypeAttrName);
      auto sourceType =
          source ? dyn_cast<RankedTensorType>(source.getValue()) : nullptr;
      if (!sourceType || sourceType.getRank() < 2 ||
          (sourceType.getRank() > 2 &&
           !op->hasAttr(kPackedTransposedAttrName)) ||
          packedTiles.size() != 2) {
        op.emitError() << "packed weight '" << name
                       << "' needs a 2-d (or transposed n-d) '"
                       << kPackedSourceTypeAttrName << "' and two '"
                       << kPackedTilesAttrName << "'";
        return failure();
      }
      localType = sourceType;
    }
    auto globalTypeAttr = op->getAttrOfType<TypeAttr>(kGlobalTypeAttrName);
    auto globalType =
        globalTypeAttr ? dyn_cast<RankedTensorType>(globalTypeAttr.getValue())
                       : localType;
    if (!globalType || !globalType.hasStaticShape()) {
      op.emitError() << "weight '" << name
                     << "' needs a static global tensor type";
      return failure();
    }
    ShardingAttr sharding = getSharding(op.getResult());
    if (!sharding)
      sharding = ShardingAttr::getReplicated(&ctx, globalType.getRank());

    const WeightStore::Weight *stored = model.weights->lookup(name);
    // Optimizer state made by autopar-differentiate starts at zero.
    std::vector<char> zeros;
    WeightStore::Weight zeroWeight;
    if (!stored && op->hasAttr(kZeroInitAttrName)) {
      FailureOr<DType> zeroType =
          getDTypeFromElementType(globalType.getElementType());
      if (failed(zeroType)) {
        op.emitError() << "state '" << name << "' has an unsupported type";
        return failure();
      }
      zeroWeight.name = name;
      zeroWeight.dtype = *zeroType;
      zeroWeight.shape.assign(globalType.getShape().begin(),
                              globalType.getShape().end());
      zeros.assign(globalType.getNumElements() * getDTypeSize(*zeroType), 0);
      stored = &zeroWeight;
    }
    if (!stored) {
      op.emitError() << "weight '" << name << "' is not in the model";
      return failure();
    }
    // Weights stored in bf16/f16 (autopar-lower-precision) are converted
    // from the model's f32 data.
    Type storedElement = globalType.getElementType();
    bool lowered = (storedElement.isBF16() || storedElement.isF16()) &&
                   stored->dtype == DType::F32;
    if (lowered)
      globalType = globalType.clone(Float32Type::get(&ctx));
    FailureOr<DType> dtype =
        getDTypeFromElementType(globalType.getElementType());
    if (failed(dtype) || *dtype != stored->dtype ||
        ArrayRef<int64_t>(stored->shape) != globalType.getShape()) {
      op.emitError() << "weight '" << name << "' has type " << globalType
                     << " in the program but is stored as "
                     << getDTypeName(stored->dtype) << " "
                     << formatShape(stored->shape);
      return failure();
    }
    std::string error;
    FailureOr<ArrayRef<char>> data =
        stored == &zeroWeight ? FailureOr<ArrayRef<char>>(ArrayRef<char>(zeros))
                              : model.weights->getData(name, error);
    if (failed(data)) {
      emitDriverError(ctx) << error;
      return failure();
    }
    int64_t elementSize = getDTypeSize(*dtype);
    if (static_cast<int64_t>(data->size()) !=
        globalType.getNumElements() * elementSize) {
      emitDriverError(ctx) << "weight '" << name << "' holds " << data->size()
                           << " bytes, expected "
                           << globalType.getNumElements() * elementSize;
      return failure();
    }
    std::vector<char> converted;
    if (lowered) {
      convertWeightPrecision(*data, storedElement, converted);
      data = ArrayRef<char>(converted);
      elementSize = 2;
    }
    FailureOr<SmallVector<int64_t>> localShape = getLocalShape(
        globalType.getShape(), sharding, grid, [&] { return op.emitError(); });
    if (failed(localShape))
      return failure();
    if (ArrayRef<int64_t>(*localShape) != localType.getShape()) {
      op.emitError() << "weight '" << name << "' has local type " << localType
                     << " but its sharding " << sharding << " of " << globalType
                     << " gives " << formatShape(*localShape);
      return failure();
    }

    int64_t localElements = 1;
    for (int64_t size : *localShape)
      localElements *= size;
    std::vector<char> shard(localElements * elementSize);
    std::vector<char> packed;
    bool transposed = op->hasAttr(kPackedTransposedAttrName);
    // A convolution weight transformed for the Winograd form: f32 M x C x 3
    // x 3, 16 packed taps.
    bool winograd = packedTiles && op->hasAttr(kWinogradAttrName);
    if (winograd &&
        (elementSize != 4 || localShape->size() != 4 || (*localShape)[2] != 3 ||
         (*localShape)[3] != 3 ||
         cast<RankedTensorType>(op.getType()).getNumElements() !=
             16 * (((*localShape)[0] + packedTiles[0] - 1) / packedTiles[0]) *
                 packedTiles[0] * (*localShape)[1])) {
      op.emitError() << "winograd weight '" << name
                     << "' needs an f32 3x3 kernel and 16 packed taps, got "
                     << op.getType();
      return failure();
    }
    if (packedTiles)
      packed.resize(cast<RankedTensorType>(op.getType()).getNumElements() *
                    elementSize);
    for (int64_t rank = 0; rank < numDevices; ++rank) {
      SmallVector<int64_t> coords = getGridCoordinates(rank, grid);
      // A pending sum over some axes: one device of each group holds the
      // value, the others hold zeros, so that the sum is the weight.
      bool holdsValue = !sharding.isPartial() ||
                        getGroupIndex(sharding.getPartial(), grid, coords) == 0;
      if (holdsValue) {
        SmallVector<int64_t> offsets =
            getShardOffsets(globalType.getShape(), sharding, grid, coords);
        copyBlock(data->data(), globalType.getShape(), offsets, *localShape,
                  elementSize, shard.data());
      } else {
        std::fill(shard.begin(), shard.end(), 0);
      }
      SmallString<256> path(weightsDir);
      llvm::sys::path::append(path, "rank" + std::to_string(rank),
                              "w" + std::to_string(id) + ".bin");
      if (packedTiles && winograd) {
        packWeightForWinograd(reinterpret_cast<const float *>(shard.data()),
                              (*localShape)[0], (*localShape)[1],
                              packedTiles[0],
                              reinterpret_cast<float *>(packed.data()));
      } else if (packedTiles) {
        // An n-d source (a convolution's weight) is rows x (the rest).
        int64_t rows = (*localShape)[0], cols = 1;
        for (int64_t size : ArrayRef<int64_t>(*localShape).drop_front())
          cols *= size;
        packWeightForMmt4d(shard.data(), transposed ? cols : rows,
                           transposed ? rows : cols, transposed, packedTiles[0],
                           packedTiles[1], elementSize, packed.data());
      }
      if (failed(writeFileBytes(ctx, path, packedTiles ? packed : shard)))
        return failure();
    }

    WeightEntry entry;
    entry.id = id;
    entry.name = name;
    entry.dtype = *dtype;
    entry.globalShape.assign(globalType.getShape().begin(),
                             globalType.getShape().end());
    manifest.weights.push_back(std::move(entry));
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Training step
//===----------------------------------------------------------------------===//

/// The options of autopar-differentiate for `training`.
static DifferentiatePassOptions
getDifferentiateOptions(const TrainingStepOptions &training) {
  DifferentiatePassOptions options;
  options.optimizer = training.optimizer;
  options.learningRate = training.learningRate;
  options.weightDecay = training.weightDecay;
  options.freeze.assign(training.freeze.begin(), training.freeze.end());
  return options;
}

/// Checks the loss and optimizer of `training` and appends the loss to @main
/// of `module` (autopar-append-loss).
static LogicalResult appendLoss(MLIRContext &ctx, ModuleOp module,
                                const TrainingStepOptions &training) {
  std::optional<LossKind> loss = symbolizeLossKind(training.loss);
  if (!loss) {
    emitDriverError(ctx) << "unknown --loss '" << training.loss
                         << "', expected cross_entropy, mse or output";
    return failure();
  }
  if (training.optimizer != "sgd" && training.optimizer != "adam") {
    emitDriverError(ctx) << "unknown --optimizer '" << training.optimizer
                         << "', expected sgd or adam";
    return failure();
  }
  return appendTrainingLoss(module, *loss);
}

/// Appends the loss to @main of `module` and differentiates it into one
/// training step (autopar-append-loss, autopar-differentiate).
static LogicalResult buildTrainingStep(MLIRContext &ctx, ModuleOp module,
                                       const TrainingStepOptions &training) {
  if (failed(appendLoss(ctx, module, training)))
    return failure();
  return runStage(ctx, module, "differentiation", [&](OpPassManager &pm) {
    pm.addPass(createDifferentiatePass(getDifferentiateOptions(training)));
  });
}

/// Writes `OUTDIR/training.json`: what `autopar train` needs to print the
/// steps and to write the updated model: the step's settings, the model
/// path, and every stored weight (id, name, global shape, dtype, sharding,
/// whether it is a model initializer or optimizer state).
static LogicalResult writeTrainingDescription(MLIRContext &ctx, ModuleOp module,
                                              const Manifest &manifest,
                                              const CompileOptions &options,
                                              StringRef dir) {
  llvm::StringMap<int64_t> ids;
  for (const WeightEntry &entry : manifest.weights)
    ids[entry.name] = entry.id;
  llvm::json::Array stored;
  llvm::StringSet<> seen;
  // A pipeline's top-level description has no program (each stage has its
  // own description).
  FailureOr<func::FuncOp> main = func::FuncOp();
  if (module)
    main = getMainFunction(ctx, module);
  if (failed(main))
    return failure();
  WalkResult walk =
      !*main
          ? WalkResult::advance()
          : main->walk([&](AssignOp assign) -> WalkResult {
              auto weight = assign.getWeight().getDefiningOp<WeightOp>();
              if (!weight || !seen.insert(weight.getName()).second)
                return WalkResult::advance();
              auto it = ids.find(weight.getName());
              if (it == ids.end()) {
                assign.emitError() << "stored weight '" << weight.getName()
                                   << "' has no weight file";
                return WalkResult::interrupt();
              }
              const WeightEntry &entry = manifest.weights[it->second];
              ShardingAttr sharding = getSharding(weight.getResult());
              llvm::json::Array dims;
              for (int64_t d = 0; d < (int64_t)entry.globalShape.size(); ++d)
                dims.push_back(llvm::json::Array(
                    sharding ? sharding.getDimAxes(d) : ArrayRef<int64_t>()));
              llvm::json::Object record{
                  {"id", entry.id},
                  {"name", entry.name},
                  {"dtype", getDTypeName(entry.dtype)},
                  {"shape", llvm::json::Array(entry.globalShape)},
                  {"sharding", std::move(dims)},
                  {"partial",
                   llvm::json::Array(sharding ? sharding.getPartial()
                                              : ArrayRef<int64_t>())},
                  {"state", weight->hasAttr(kZeroInitAttrName)}};
              // A part of an initializer (autopar-split-fused-projections):
              // `train --save` writes it back into its source.
              if (std::optional<WeightPart> part = getWeightPart(weight))
                record["part_of"] =
                    llvm::json::Object{{"source", part->source},
                                       {"axis", part->axis},
                                       {"offset", part->offset}};
              stored.push_back(std::move(record));
              return WalkResult::advance();
            });
  if (walk.wasInterrupted())
    return failure();
  SmallString<256> model(options.modelPath);
  if (!model.empty())
    llvm::sys::fs::make_absolute(model);
  llvm::json::Object description{
      {"model", model.str()},
      {"loss", options.training->loss},
      {"optimizer", options.training->optimizer},
      {"lr", options.training->learningRate},
      {"weight_decay", options.training->weightDecay},
      {"freeze", llvm::json::Array(options.training->freeze)},
      {"stored_weights", std::move(stored)}};
  if (manifest.pipeline)
    description["pipeline_stages"] = int64_t(manifest.pipeline->stages.size());
  SmallString<256> path(dir);
  llvm::sys::path::append(path, "training.json");
  std::string json =
      llvm::formatv("{0:2}", llvm::json::Value(std::move(description))).str() +
      "\n";
  return writeFileBytes(ctx, path, ArrayRef<char>(json.data(), json.size()));
}

//===----------------------------------------------------------------------===//
// compileModel
//===----------------------------------------------------------------------===//

/// Prints `module` into `path` (for people: no debug locations).
static LogicalResult writeModule(MLIRContext &ctx, ModuleOp module,
                                 StringRef path) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os, OpPrintingFlags());
  return writeFileBytes(ctx, path, ArrayRef<char>(text.data(), text.size()));
}

//===----------------------------------------------------------------------===//
// Pipelines (MPMD)
//===----------------------------------------------------------------------===//

namespace {
/// What a pipeline compiles: the stage count and block split, the
/// microbatches, and each stage's plan (a keyword with the grid it is
/// applied on, or a plan file's stage plan).
struct PipelineRequest {
  unsigned stages = 2;
  /// Repeated blocks per stage; empty: an even split.
  SmallVector<unsigned> blocks;
  int64_t microbatches = 1;
  /// `--fixed`: the keyword plan and the configuration viewing each slab.
  std::optional<FixedConfig> fixed;
  /// A plan file's `pipeline.stage_list[s].plan` and its grid.
  std::vector<llvm::json::Value> stagePlans;
  std::vector<SmallVector<int64_t>> stageGrids;
  /// A plan file's schedule (`pipeline.schedule`).
  std::string schedule;
  /// A plan file's recomputation per stage (`stage_list[s].recompute`).
  std::vector<RecomputeSpec> stageRecompute;
};
} // namespace

/// Reads the `pipeline` section of plan file `path`, if it has one; the plan
/// must have been made for the step compiled (`training`: a training step
/// with loss `training->loss`, or inference).
static FailureOr<std::optional<PipelineRequest>>
readPipelinePlan(MLIRContext &ctx, StringRef path,
                 const std::optional<TrainingStepOptions> &training) {
  if (path == "replicated" || path == "data" || path == "tensor" ||
      path == "auto")
    return std::optional<PipelineRequest>();
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return std::optional<PipelineRequest>(); // reported by the plan stage
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse((*buffer)->getBuffer());
  if (!json) {
    llvm::consumeError(json.takeError());
    return std::optional<PipelineRequest>();
  }
  const llvm::json::Object *root = json->getAsObject();
  const llvm::json::Object *section =
      root ? root->getObject("pipeline") : nullptr;
  if (!section)
    return std::optional<PipelineRequest>();
  auto bad = [&](const Twine &what) {
    emitDriverError(ctx) << "plan file '" << path
                         << "': invalid pipeline section: " << what;
    return failure();
  };
  PipelineRequest request;
  const llvm::json::Array *stages = section->getArray("stage_list");
  if (!stages || stages->size() < 2)
    return bad("'stage_list' must hold 2 or more stages");
  request.stages = stages->size();
  request.microbatches = section->getInteger("microbatches").value_or(1);
  if (request.microbatches < 1)
    return bad("'microbatches' must be positive");
  StringRef mode = root->getString("mode").value_or("inference");
  if (!training && mode != "inference")
    return bad("a " + mode +
               " pipeline cannot be compiled for inference; "
               "plan it without --mode training");
  if (training) {
    if (mode != "training")
      return bad("an " + mode +
                 " pipeline cannot be compiled as a training step; plan it "
                 "with --mode training --loss " +
                 training->loss);
    StringRef loss = root->getString("loss").value_or("");
    if (loss != training->loss)
      return bad("the plan's loss is '" + loss + "', the compile's '" +
                 training->loss + "'");
  }
  request.schedule = section->getString("schedule").value_or("gpipe").str();
  for (const llvm::json::Value &value : *stages) {
    const llvm::json::Object *stage = value.getAsObject();
    const llvm::json::Array *blocks =
        stage ? stage->getArray("blocks") : nullptr;
    const llvm::json::Object *plan = stage ? stage->getObject("plan") : nullptr;
    const llvm::json::Array *grid = plan ? plan->getArray("grid") : nullptr;
    if (!blocks || blocks->size() != 2 || !plan || !grid)
      return bad("each stage needs 'blocks' [first, end) and a 'plan' with "
                 "its 'grid'");
    std::optional<int64_t> first = (*blocks)[0].getAsInteger();
    std::optional<int64_t> end = (*blocks)[1].getAsInteger();
    if (!first || !end || *end <= *first)
      return bad("a stage's 'blocks' must be [first, end) with end > first");
    request.blocks.push_back(unsigned(*end - *first));
    if (training) {
      StringRef recompute = stage->getString("recompute").value_or("none");
      std::optional<RecomputeSpec> spec = parseRecomputeSpec(recompute);
      if (!spec)
        return bad("stage " + Twine(request.stageGrids.size()) +
                   " has recompute '" + recompute +
                   "', expected none, selective, full or full:K");
      request.stageRecompute.push_back(*spec);
    }
    SmallVector<int64_t> shape;
    for (const llvm::json::Value &size : *grid) {
      std::optional<int64_t> n = size.getAsInteger();
      if (!n || *n <= 0)
        return bad("a stage plan's 'grid' holds a non-positive size");
      shape.push_back(*n);
    }
    request.stageGrids.push_back(shape);
    request.stagePlans.push_back(llvm::json::Value(llvm::json::Object(*plan)));
  }
  return std::optional<PipelineRequest>(std::move(request));
}

/// Marks each random op of the microbatch program `micro` with the shape of
/// its counterpart in the whole batch's program `whole` (the importer makes
/// them in the same order), so that each of the `m` microbatches draws its
/// own block of the single-device program's values. A training stage runs
/// its microbatches as copies in one program, which autopar-build-stage-step
/// places. An inference pipeline runs the microbatch program once per
/// microbatch: its draws are marked with the dimension the microbatches
/// split (kMicrobatchDrawAttrName), along which the runtime lowering places
/// the block of the microbatch the runner streams through the program.
static LogicalResult placeRandomDraws(MLIRContext &ctx, ModuleOp whole,
                                      ModuleOp micro, int64_t m,
                                      bool training) {
  SmallVector<RandomUniformOp> wholeDraws, microDraws;
  whole.walk([&](RandomUniformOp op) { wholeDraws.push_back(op); });
  micro.walk([&](RandomUniformOp op) { microDraws.push_back(op); });
  if (microDraws.empty())
    return success();
  if (wholeDraws.size() != microDraws.size()) {
    emitDriverError(ctx) << "internal error: the microbatch program has "
                         << microDraws.size() << " random ops, the whole "
                         << "batch's " << wholeDraws.size();
    return failure();
  }
  for (auto [w, u] : llvm::zip(wholeDraws, microDraws)) {
    if (w.getSeed() != u.getSeed() || w.getStream() != u.getStream()) {
      emitDriverError(ctx) << "internal error: the random ops of the "
                              "microbatch and whole batch programs differ";
      return failure();
    }
    ArrayRef<int64_t> wholeShape = w.getResult().getType().getShape();
    if (wholeShape == u.getResult().getType().getShape())
      continue;
    u.setWholeShapeAttr(DenseI64ArrayAttr::get(&ctx, wholeShape));
    if (training)
      continue;
    FailureOr<std::optional<int64_t>> split = getMicrobatchDrawDim(u, m);
    if (failed(split))
      return failure();
    u->setAttr(kMicrobatchDrawAttrName,
               IntegerAttr::get(IntegerType::get(&ctx, 64), **split));
  }
  return success();
}

/// Compiles `model` as a pipeline: the global batch in `request.microbatches`
/// slices of dimension 0 (the model imported again at the microbatch size),
/// split into stages (buildStageSplitPipeline), and each stage planned,
/// partitioned and lowered into `OUTDIR/stage<s>/` like a program of its
/// own on its slab of grid axis 0.
static FailureOr<Manifest> compilePipeline(
    MLIRContext &ctx, ImportedModel &model, const CompileOptions &options,
    Manifest manifest, ArrayRef<int64_t> grid,
    const std::optional<ClusterSpec> &cluster, PipelineRequest &request) {
  // A training pipeline runs each stage's whole step (every microbatch's
  // forward and backward pass, in the schedule's order) as one program.
  std::string schedule = "gpipe";
  if (options.training) {
    schedule = request.fixed ? request.fixed->schedule : request.schedule;
    if (schedule != "1f1b" && schedule != "gpipe") {
      emitDriverError(ctx) << (request.fixed ? "--fixed" : "the plan file")
                           << ": training pipelines run the 1f1b or "
                              "gpipe schedule, not "
                           << schedule;
      return failure();
    }
  }
  unsigned p = request.stages;
  if (grid.empty() || grid[0] % p != 0) {
    emitDriverError(ctx) << "pipeline stages take slabs of grid axis 0: " << p
                         << " stages do not divide axis 0 of the grid "
                         << formatGridShape(grid);
    return failure();
  }
  OwningOpRef<ModuleOp> globalStep;
  if (options.training) {
    globalStep = model.module->clone();
    if (failed(appendLoss(ctx, *globalStep, *options.training)))
      return failure();
  }
  if (failed(fillSignatures(ctx, model,
                            options.training ? *globalStep : *model.module,
                            manifest)))
    return failure();
  // The global batch is dimension 0 of the first runtime input; inputs
  // without it go whole to every microbatch, every output must carry it.
  int64_t m = request.microbatches;
  int64_t batch = !manifest.inputs.empty() && !manifest.inputs[0].shape.empty()
                      ? manifest.inputs[0].shape[0]
                      : -1;
  if (m > 1 && (batch <= 0 || batch % m != 0)) {
    emitDriverError(ctx) << "the global batch ("
                         << (batch > 0 ? std::to_string(batch) : "none")
                         << ", dimension 0 of the first input) does not split "
                            "into "
                         << m << " microbatches";
    return failure();
  }
  std::vector<bool> whole;
  for (const TensorSignature &input : manifest.inputs)
    whole.push_back(m > 1 && (input.shape.empty() || input.shape[0] != batch));
  for (const TensorSignature &output : manifest.outputs)
    if (!options.training && m > 1 &&
        (output.shape.empty() || output.shape[0] != batch)) {
      emitDriverError(ctx) << "output '" << output.name
                           << "' does not carry the batch in dimension 0, so "
                              "it cannot be assembled from "
                           << m << " microbatches";
      return failure();
    }
  ImportedModel microModel;
  ImportedModel *micro = &model;
  if (m > 1) {
    if (options.modelPath.empty()) {
      emitDriverError(ctx) << "internal error: a pipeline with microbatches "
                              "needs the model's path to import it again";
      return failure();
    }
    // The batch of a microbatch for every input that carries it (as
    // `--batch` re-batches a model); the others keep their shapes.
    InputShapes shapes;
    shapes.batch = batch / m;
    for (auto [i, input] : llvm::enumerate(manifest.inputs)) {
      SmallVector<int64_t> shape = input.shape;
      if (!whole[i])
        shape[0] = batch / m;
      if (whole[i] || options.inputShapes.count(input.name))
        shapes[input.name] = shape;
    }
    FailureOr<ImportedModel> imported =
        importModel(ctx, options.modelPath, shapes, /*requireWeightData=*/true,
                    /*keepFloatInitializers=*/options.training.has_value());
    if (failed(imported))
      return failure();
    microModel = std::move(*imported);
    micro = &microModel;
    if (failed(placeRandomDraws(ctx, *model.module, *microModel.module, m,
                                options.training.has_value())))
      return failure();
    auto main = micro->module->lookupSymbol<func::FuncOp>("main");
    for (auto [j, type] : llvm::enumerate(main.getResultTypes())) {
      if (options.training)
        break; // the loss is the mean of the microbatches' losses
      auto tensor = dyn_cast<RankedTensorType>(type);
      if (!tensor || tensor.getRank() == 0 ||
          tensor.getDimSize(0) * m != batch) {
        emitDriverError(ctx)
            << "output '" << manifest.outputs[j].name << "' of a microbatch of "
            << batch / m
            << " does not hold its share of the batch in dimension 0";
        return failure();
      }
    }
  }

  // The stage split.
  OwningOpRef<ModuleOp> module = micro->module->clone();
  if (options.training && failed(appendLoss(ctx, *module, *options.training)))
    return failure();
  if (request.blocks.empty()) {
    FailureOr<unsigned> blocks = countPipelineBlocks(*module);
    if (failed(blocks))
      return failure();
    if (*blocks < p) {
      emitDriverError(ctx) << "pipeline stages are cut between repeated "
                              "blocks, and the model has "
                           << *blocks << " repeated blocks for " << p
                           << " stages";
      return failure();
    }
    request.blocks = evenBlockSplit(*blocks, p);
  }
  if (failed(runStage(ctx, *module, "stage split", [&](OpPassManager &pm) {
        StageSplitPipelineOptions split;
        for (unsigned count : request.blocks)
          split.blocks.push_back(count);
        buildStageSplitPipeline(pm, split);
      })))
    return failure();
  // The regions each training stage recomputes (the plan's setting, marked
  // on its forward program; autopar-recompute-regions clones them).
  if (options.training) {
    SmallVector<ModuleOp> stageModules(module->getBody()->getOps<ModuleOp>());
    for (auto [s, stageOp] : llvm::enumerate(stageModules)) {
      RecomputeSpec spec;
      if (request.fixed)
        spec = request.fixed->recompute;
      else if (s < request.stageRecompute.size())
        spec = request.stageRecompute[s];
      bool singleBlock = s < request.blocks.size() && request.blocks[s] == 1;
      if (failed(markRecomputeRegions(stageOp, spec, singleBlock)))
        return failure();
    }
  }
  if (options.training &&
      failed(runStage(ctx, *module, "stage steps", [&](OpPassManager &pm) {
        BuildStageStepPassOptions step;
        step.microbatches = m;
        for (auto [i, isWhole] : llvm::enumerate(whole))
          if (isWhole)
            step.whole.push_back(i);
        step.freeze.assign(options.training->freeze.begin(),
                           options.training->freeze.end());
        pm.addPass(createBuildStageStepPass(step));
      })))
    return failure();

  ProgressLog progress(!options.quiet);
  PipelineManifest pipeline;
  pipeline.microbatches = m;
  SmallVector<int64_t> slab(grid.begin(), grid.end());
  slab[0] /= p;
  int64_t nextRank = 0, nextBlock = 0;
  std::map<int64_t, TensorSignature> boundaries;
  llvm::json::Array stageSummaries;
  SmallVector<ModuleOp> nested(module->getBody()->getOps<ModuleOp>());
  for (auto [s, stageOp] : llvm::enumerate(nested)) {
    // A module of its own, without the split's port attributes.
    OwningOpRef<ModuleOp> stage = ModuleOp::create(stageOp.getLoc());
    for (NamedAttribute attr : stageOp->getDiscardableAttrs())
      if (attr.getName() != kStageIndexAttr)
        (*stage)->setAttr(attr.getName(), attr.getValue());
    stage->getBody()->getOperations().splice(
        stage->getBody()->begin(), stageOp.getBody()->getOperations());
    auto main = stage->lookupSymbol<func::FuncOp>("main");
    PipelineStageManifest entry;
    auto readPort = [&](DictionaryAttr attr, bool input) {
      PipelinePort port;
      if (auto index = attr.getAs<IntegerAttr>(input ? "input" : "output")) {
        port.index = index.getInt();
        port.whole = input && whole[port.index];
        if (auto microbatch = attr.getAs<IntegerAttr>("microbatch"))
          port.microbatch = microbatch.getInt();
        return port;
      }
      port.boundary = attr.getAs<IntegerAttr>("boundary").getInt();
      if (input)
        port.stages.push_back(attr.getAs<IntegerAttr>("from").getInt());
      else
        for (Attribute to : attr.getAs<ArrayAttr>("to"))
          port.stages.push_back(cast<IntegerAttr>(to).getInt());
      return port;
    };
    for (unsigned i = 0; i < main.getNumArguments(); ++i) {
      auto attr = main.getArgAttrOfType<DictionaryAttr>(i, kStageInputAttr);
      entry.inputs.push_back(readPort(attr, true));
      main.removeArgAttr(i, kStageInputAttr);
    }
    for (unsigned i = 0; i < main.getNumResults(); ++i) {
      auto attr = main.getResultAttrOfType<DictionaryAttr>(i, kStageOutputAttr);
      PipelinePort port = readPort(attr, false);
      if (port.boundary >= 0) {
        FailureOr<TensorSignature> sig =
            getSignature(ctx, main.getResultTypes()[i],
                         "boundary_" + std::to_string(port.boundary));
        if (failed(sig))
          return failure();
        boundaries[port.boundary] = *sig;
      }
      entry.outputs.push_back(std::move(port));
      main.removeResultAttr(i, StringAttr::get(&ctx, kStageOutputAttr));
    }

    // A training stage: its backward pass and optimizer update, in the
    // schedule's order.
    if (options.training &&
        failed(runStage(ctx, *stage,
                        "the training step of stage " + Twine(s).str(),
                        [&](OpPassManager &pm) {
                          pm.addPass(createDifferentiatePass(
                              getDifferentiateOptions(*options.training)));
                          pm.addPass(createRecomputeRegionsPass());
                          ScheduleMicrobatchesPassOptions order;
                          order.stage = s;
                          order.stages = p;
                          order.schedule = schedule;
                          pm.addPass(createScheduleMicrobatchesPass(order));
                        })))
      return failure();

    // The stage's plan on its grid.
    std::string stageDir = (options.outDir + "/stage" + Twine(s)).str();
    if (std::error_code ec = llvm::sys::fs::create_directories(stageDir)) {
      emitDriverError(ctx) << "cannot create '" << stageDir
                           << "': " << ec.message();
      return failure();
    }
    SmallVector<int64_t> stageGrid = slab;
    std::optional<ClusterSpec> stageCluster = cluster;
    std::string plan;
    PlanMetadata metadata;
    metadata.modelSha256 = model.sha256;
    if (request.fixed) {
      FixedConfig view = *request.fixed;
      view.pp = 1;
      std::string error;
      auto gridView = getFixedGridView(view, slab, cluster, error);
      if (failed(gridView)) {
        emitDriverError(ctx) << error;
        return failure();
      }
      stageGrid = gridView->first;
      stageCluster = gridView->second;
      plan = request.fixed->tp == 1 ? "data" : "tensor";
      metadata.strategy = "fixed";
      // The microbatches' copies of an op on the same operands (the
      // transpose of a weight that each microbatch's matmul reads) become
      // one op when the partitioned program is CSE'd; merged before this
      // stage is planned, so that the plan prices the buffers the stage
      // holds (it counted each copy of a transposed weight: tiny_gpt pp 2,
      // stage 0, +192 KiB). A plan file's stage plans pin the names of the
      // unmerged module, so they are applied to it as it is.
      if (failed(runStage(
              ctx, *stage, "cse of stage " + Twine(s).str(),
              [&](OpPassManager &pm) { pm.addPass(createCSEPass()); })))
        return failure();
    } else {
      stageGrid = request.stageGrids[s];
      plan = stageDir + "/stage-plan.json";
      std::string text =
          llvm::formatv("{0:2}", request.stagePlans[s]).str() + "\n";
      if (failed(writeFileBytes(ctx, plan,
                                ArrayRef<char>(text.data(), text.size()))))
        return failure();
      // The plan file's cluster describes the whole grid; a stage's slab is
      // priced without it.
      stageCluster.reset();
    }
    entry.grid = stageGrid;
    entry.numRanks = 1;
    for (int64_t size : stageGrid)
      entry.numRanks *= size;
    int64_t slabDevices = 1;
    for (int64_t size : slab)
      slabDevices *= size;
    if (entry.numRanks != slabDevices) {
      emitDriverError(ctx) << "stage " << s << " is planned for grid "
                           << formatGridShape(stageGrid) << " ("
                           << entry.numRanks << " devices), its slab of grid "
                           << formatGridShape(grid) << " has " << slabDevices;
      return failure();
    }
    entry.firstRank = nextRank;
    nextRank += entry.numRanks;
    entry.firstBlock = nextBlock;
    entry.numBlocks = request.blocks[s];
    nextBlock += entry.numBlocks;
    progress.step("stage " + Twine(s) + " of " + Twine(p) + " on grid " +
                  formatGridShape(stageGrid) + " with plan " +
                  (request.fixed ? plan : std::string("of the plan file")) +
                  ": planning");
    if (failed(planModule(ctx, *stage, stageGrid, plan, stageCluster,
                          PlanMode::Inference, /*quiet=*/true, metadata,
                          getPlanSearchOptions(options))))
      return failure();
    // A training stage's program is its whole step, planned as one program
    // (its ops include the backward pass and the update).
    if (options.training)
      metadata.mode = "training";
    std::string planSha, error;
    if (failed(writePlanFiles(*stage, metadata, stageDir, planSha, error))) {
      emitDriverError(ctx) << "cannot write the plan files: " << error;
      return failure();
    }
    if (auto text = llvm::MemoryBuffer::getFile(stageDir + "/plan.json")) {
      if (auto json = llvm::json::parse((*text)->getBuffer()))
        stageSummaries.push_back(llvm::json::Object{
            {"index", int64_t(s)},
            {"blocks", llvm::json::Array{entry.firstBlock,
                                         entry.firstBlock + entry.numBlocks}},
            {"prefix", s == 0},
            {"suffix", s + 1 == p},
            {"slab",
             llvm::json::Array{int64_t(s) * slab[0], int64_t(s + 1) * slab[0]}},
            {"grid", llvm::json::Array(stageGrid)},
            {"plan", std::move(*json)}});
      else
        llvm::consumeError(json.takeError());
    }

    // Partition, weights, native code.
    progress.step("stage " + Twine(s) + ": partitioning and lowering");
    Manifest stageManifest;
    stageManifest.numDevices = entry.numRanks;
    if (failed(runPartitionStage(ctx, *stage)) ||
        failed(writeModule(ctx, *stage, stageDir + "/program.mlir")) ||
        failed(runDataTilingStage(ctx, *stage, options.precision,
                                  options.winograd)) ||
        failed(writeWeightShards(ctx, *stage, *micro, stageGrid, stageDir,
                                 stageManifest)) ||
        (options.training &&
         failed(writeTrainingDescription(ctx, *stage, stageManifest, options,
                                         stageDir))) ||
        failed(runLowerDataTiledStage(ctx, *stage, options)))
      return failure();
    SmallString<256> programSo(stageDir);
    llvm::sys::path::append(programSo, "program.so");
    llvm::sys::fs::make_absolute(programSo);
    if (failed(emitSharedLibrary(*stage, programSo)))
      return failure();
    pipeline.stages.push_back(std::move(entry));
  }
  for (auto &[id, sig] : boundaries) {
    if (id != int64_t(pipeline.boundaries.size())) {
      emitDriverError(ctx) << "internal error: boundary tensor " << id
                           << " is sent by no stage";
      return failure();
    }
    pipeline.boundaries.push_back(sig);
  }
  pipeline.schedule = schedule;
  manifest.pipeline = std::move(pipeline);
  if (options.training &&
      failed(writeTrainingDescription(ctx, ModuleOp(), manifest, options,
                                      options.outDir)))
    return failure();

  // The pipeline's plan file: the stages and their plans.
  llvm::json::Object planJson{
      {"schema_version", kPlanSchemaVersion},
      {"strategy", request.fixed ? "fixed" : "file"},
      {"mode", options.training ? "training" : "inference"},
      {"grid", llvm::json::Array(grid)},
      {"values", llvm::json::Object()},
      {"ops", llvm::json::Array()},
      {"pipeline",
       llvm::json::Object{
           {"stages", int64_t(p)},
           {"schedule", schedule},
           {"microbatches", m},
           {"executed", options.training
                            ? "one program per stage (MPMD): its whole "
                              "training step, every microbatch's forward "
                              "and backward pass in schedule order; "
                              "boundary tensors and their gradients point "
                              "to point"
                            : "one program per stage (MPMD); "
                              "boundary tensors point to point"},
           {"stage_list", std::move(stageSummaries)}}}};
  if (request.fixed)
    planJson["fixed"] = llvm::json::Object{{"config", request.fixed->text}};
  std::string planText =
      llvm::formatv("{0:2}", llvm::json::Value(std::move(planJson))).str() +
      "\n";
  if (failed(writeFileBytes(ctx, options.outDir + "/plan.json",
                            ArrayRef<char>(planText.data(), planText.size()))))
    return failure();
  // plan.txt: the stages, then each stage's own plan.txt.
  std::string summary;
  llvm::raw_string_ostream os(summary);
  os << "pipeline:  " << p << " stages, schedule " << schedule << ", " << m
     << " microbatches of " << (batch > 0 ? batch / m : -1)
     << " (one program per stage, boundary tensors point to point)\n";
  if (request.fixed)
    os << "fixed:     " << request.fixed->text << "\n";
  for (auto [s, stage] : llvm::enumerate(manifest.pipeline->stages))
    os << "stage " << s << ":   blocks [" << stage.firstBlock << ", "
       << stage.firstBlock + stage.numBlocks << ")"
       << (s == 0 ? " + ops before" : "") << (s + 1 == p ? " + ops after" : "")
       << " on ranks [" << stage.firstRank << ", "
       << stage.firstRank + stage.numRanks << ") (grid "
       << formatGridShape(stage.grid) << ")\n";
  for (size_t s = 0; s < p; ++s) {
    auto text = llvm::MemoryBuffer::getFile(options.outDir + "/stage" +
                                            std::to_string(s) + "/plan.txt");
    if (text)
      os << "\nstage " << s << ":\n" << (*text)->getBuffer();
  }
  if (failed(writeFileBytes(ctx, options.outDir + "/plan.txt",
                            ArrayRef<char>(summary.data(), summary.size()))))
    return failure();
  manifest.planSha256 =
      llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef(planText)),
                  /*LowerCase=*/true);
  std::string json =
      llvm::formatv("{0:2}", manifestToJson(manifest)).str() + "\n";
  if (failed(writeFileBytes(ctx, options.outDir + "/manifest.json",
                            ArrayRef<char>(json.data(), json.size()))))
    return failure();
  progress.step("compiled " + Twine(p) + " pipeline stages into " +
                options.outDir);
  return manifest;
}

FailureOr<Manifest> mlir::autopar::compileModel(MLIRContext &ctx,
                                                ImportedModel &model,
                                                const CompileOptions &options) {
  FailureOr<SmallVector<int64_t>> grid = parseGridOption(ctx, options.grid);
  if (failed(grid) || failed(checkPlanArgument(ctx, options.plan)))
    return failure();
  std::optional<StoragePrecision> precision =
      parseStoragePrecision(options.precision);
  if (!precision) {
    emitDriverError(ctx) << "unknown --precision '" << options.precision
                         << "': expected f32, bf16 or f16";
    return failure();
  }
  if (options.outDir.empty()) {
    emitDriverError(ctx) << "no output directory (-o OUTDIR)";
    return failure();
  }
  if (llvm::sys::fs::exists(options.outDir) &&
      !llvm::sys::fs::is_directory(options.outDir)) {
    emitDriverError(ctx) << "output path '" << options.outDir
                         << "' exists and is not a directory";
    return failure();
  }

  Manifest manifest;
  manifest.autoparVersion = getAutoparVersion().str();
  manifest.modelSha256 = model.sha256;
  manifest.plan = options.plan;
  manifest.inputShapes = options.inputShapes;
  manifest.grid = *grid;
  manifest.numDevices = 1;
  for (int64_t size : *grid)
    manifest.numDevices *= size;
  FailureOr<std::optional<ClusterSpec>> cluster = resolveCluster(
      ctx, options.clusterPath, *grid, /*required=*/options.plan == "auto");
  if (failed(cluster))
    return failure();
  std::string plan = options.plan;
  std::optional<FixedConfig> fixed;
  if (!options.fixed.empty()) {
    std::string error;
    FailureOr<FixedConfig> parsed = parseFixedConfig(options.fixed, error);
    if (failed(parsed)) {
      emitDriverError(ctx) << error;
      return failure();
    }
    fixed = *parsed;
    if (fixed->pp > 1) {
      // One microbatch is micro_batch x dp sequences.
      auto main = model.module->lookupSymbol<func::FuncOp>("main");
      auto first =
          main && main.getNumArguments() > 0
              ? dyn_cast<RankedTensorType>(main.getArgument(0).getType())
              : RankedTensorType();
      int64_t batch = first && first.getRank() > 0 ? first.getDimSize(0) : -1;
      int64_t perMicrobatch = fixed->microBatch * fixed->dp;
      if (batch <= 0 || batch % perMicrobatch != 0) {
        emitDriverError(ctx)
            << "--fixed: micro_batch*dp (" << fixed->microBatch << "*"
            << fixed->dp << ") must divide the batch ("
            << (batch > 0 ? std::to_string(batch) : std::string("none")) << ")";
        return failure();
      }
      if (fixed->schedule != "1f1b" && fixed->schedule != "gpipe") {
        emitDriverError(ctx)
            << (options.training
                    ? "--fixed: training pipelines run the 1f1b or gpipe "
                      "schedule, not "
                    : "--fixed: an inference pipeline runs the gpipe "
                      "schedule, not ")
            << fixed->schedule;
        return failure();
      }
      PipelineRequest request;
      request.stages = unsigned(fixed->pp);
      request.microbatches = batch / perMicrobatch;
      request.fixed = fixed;
      manifest.plan = "fixed: " + fixed->text;
      if (*cluster)
        manifest.cluster = clusterToJson(**cluster);
      return compilePipeline(ctx, model, options, std::move(manifest), *grid,
                             *cluster, request);
    }
    auto view = getFixedGridView(*fixed, *grid, *cluster, error);
    if (failed(view)) {
      emitDriverError(ctx) << error;
      return failure();
    }
    // One compiled step is one batch (no gradient accumulation in an
    // inference program).
    auto main = model.module->lookupSymbol<func::FuncOp>("main");
    auto first = main && main.getNumArguments() > 0
                     ? dyn_cast<RankedTensorType>(main.getArgument(0).getType())
                     : RankedTensorType();
    int64_t batch = first && first.getRank() > 0 ? first.getDimSize(0) : -1;
    if (batch != fixed->microBatch * fixed->dp) {
      emitDriverError(ctx)
          << "--fixed: a compiled program runs one batch without gradient "
             "accumulation, so micro_batch*dp ("
          << fixed->microBatch << "*" << fixed->dp << ") must equal the batch ("
          << (batch > 0 ? std::to_string(batch) : std::string("none")) << ")";
      return failure();
    }
    *grid = view->first;
    *cluster = view->second;
    plan = fixed->tp == 1 ? "data" : "tensor";
    manifest.plan = "fixed: " + fixed->text;
    manifest.grid = *grid;
  }
  if (!fixed) {
    FailureOr<std::optional<PipelineRequest>> pipelinePlan =
        readPipelinePlan(ctx, options.plan, options.training);
    if (failed(pipelinePlan))
      return failure();
    if (*pipelinePlan) {
      if (*cluster)
        manifest.cluster = clusterToJson(**cluster);
      return compilePipeline(ctx, model, options, std::move(manifest), *grid,
                             *cluster, **pipelinePlan);
    }
  }
  if (*cluster)
    manifest.cluster = clusterToJson(**cluster);
  OwningOpRef<ModuleOp> module = model.module->clone();
  if (options.training &&
      failed(buildTrainingStep(ctx, *module, *options.training)))
    return failure();
  if (failed(fillSignatures(ctx, model,
                            options.training ? *module : *model.module,
                            manifest)))
    return failure();
  if (std::error_code ec = llvm::sys::fs::create_directories(options.outDir)) {
    emitDriverError(ctx) << "cannot create output directory '" << options.outDir
                         << "': " << ec.message();
    return failure();
  }

  // Plan. A training step is planned from its explicit graph (forward,
  // backward and update are ops like any other), so it is priced as one
  // program run.
  ProgressLog progress(!options.quiet);
  progress.step("compiling for grid " + formatGridShape(*grid) +
                " with plan " + plan + ": planning");
  PlanMetadata metadata;
  metadata.modelSha256 = model.sha256;
  if (failed(planModule(ctx, *module, *grid, plan, *cluster,
                        PlanMode::Inference, options.quiet, metadata,
                        getPlanSearchOptions(options))))
    return failure();
  if (options.training) {
    metadata.mode = "training";
    metadata.extra["training_step"] = llvm::json::Object{
        {"loss", options.training->loss},
        {"optimizer", options.training->optimizer},
        {"lr", options.training->learningRate},
        {"weight_decay", options.training->weightDecay},
        {"distributed_optimizer", options.training->distributedOptimizer},
        {"note", "the step graph (forward, backward, update) is planned and "
                 "priced as one program"}};
  }
  if (fixed) {
    metadata.strategy = "fixed";
    metadata.extra["fixed"] = llvm::json::Object{
        {"config", fixed->text},
        // One batch per step: micro_batch * dp equals the batch (checked).
        {"microbatches", 1},
        {"grid_view", llvm::json::Array(*grid)},
        {"schedule_note",
         "one pipeline stage: the schedule has no bubble to change"}};
  }
  std::string error;
  if (failed(writePlanFiles(*module, metadata, options.outDir,
                            manifest.planSha256, error))) {
    emitDriverError(ctx) << "cannot write the plan files: " << error;
    return failure();
  }

  // Partition; the device program and each device's weights.
  progress.step("partitioning");
  if (failed(runPartitionStage(ctx, *module)))
    return failure();
  SmallString<256> programMlir(options.outDir);
  llvm::sys::path::append(programMlir, "program.mlir");
  if (failed(writeModule(ctx, *module, programMlir)) ||
      failed(runDataTilingStage(ctx, *module, options.precision,
                                options.winograd)))
    return failure();
  progress.step("writing the weight shards of " + Twine(manifest.numDevices) +
                " devices");
  if (failed(writeWeightShards(ctx, *module, model, *grid, options.outDir,
                               manifest)))
    return failure();

  if (options.training && failed(writeTrainingDescription(
                              ctx, *module, manifest, options, options.outDir)))
    return failure();

  // Native code.
  progress.step("lowering the device program");
  if (failed(runLowerDataTiledStage(ctx, *module, options)))
    return failure();
  progress.step("generating native code");
  SmallString<256> programSo(options.outDir);
  llvm::sys::path::append(programSo, "program.so");
  llvm::sys::fs::make_absolute(programSo);
  if (failed(emitSharedLibrary(*module, programSo)))
    return failure();

  SmallString<256> manifestPath(options.outDir);
  llvm::sys::path::append(manifestPath, "manifest.json");
  std::string json =
      llvm::formatv("{0:2}", manifestToJson(manifest)).str() + "\n";
  if (failed(writeFileBytes(ctx, manifestPath,
                            ArrayRef<char>(json.data(), json.size()))))
    return failure();
  progress.step("compiled into " + options.outDir);
  return manifest;
}

//===----------------------------------------------------------------------===//
// Subcommands
//===----------------------------------------------------------------------===//

int driver::compileCommand(int argc, char **argv) {
  static llvm::cl::OptionCategory category("autopar compile options");
  static ModelPlanOptions common(
      category, "device grid: N or AxB[xC...], e.g. 4 or 2x2", "");
  llvm::cl::opt<std::string> &model = common.model;
  llvm::cl::opt<std::string> &grid = common.grid;
  llvm::cl::opt<std::string> &plan = common.plan;
  static llvm::cl::opt<std::string> cluster(
      "cluster",
      llvm::cl::desc("cluster description (JSON, one 'axes' entry per grid "
                     "axis)"),
      llvm::cl::value_desc("file.json"), llvm::cl::cat(category));
  static llvm::cl::opt<std::string> outDir(
      "o", llvm::cl::desc("output directory"), llvm::cl::value_desc("outdir"),
      llvm::cl::cat(category));
  static llvm::cl::opt<std::string> fixed(
      "fixed",
      llvm::cl::desc("a hand configuration in Megatron's notation instead of "
                     "--plan: tp=T,pp=P,dp=D,micro_batch=b[,recompute=..]"
                     "[,schedule=..] (tensor parallelism over the innermost T "
                     "devices of the last axis, data over the rest; pp>1: "
                     "an inference pipeline, one program per stage)"),
      llvm::cl::value_desc("config"), llvm::cl::cat(category));

  static llvm::cl::opt<std::string> precision(
      "precision",
      llvm::cl::desc("f32 (default), bf16 or f16: the type weights and "
                     "activations are stored and moved in (contractions "
                     "accumulate and other ops compute in f32; inputs and "
                     "outputs stay f32)"),
      llvm::cl::value_desc("type"), llvm::cl::init("f32"),
      llvm::cl::cat(category));
  static llvm::cl::opt<bool> noWinograd(
      "no-winograd",
      llvm::cl::desc("compute 3x3 convolutions as im2col products only, not "
                     "in the Winograd form F(2x2, 3x3) (for comparison)"),
      llvm::cl::init(false), llvm::cl::cat(category));
  static llvm::cl::opt<std::string> minFlopsPerThread(
      "min-flops-per-thread",
      llvm::cl::desc("FLOPs each thread of a parallel loop must get for the "
                     "loop to be threaded (default 1000000: a fork and join "
                     "of the threads, about 5 us, times a fast core's rate; "
                     "0: every parallel loop on all threads, for comparison)"),
      llvm::cl::value_desc("n"), llvm::cl::cat(category));
  static TrainingFlags trainingFlags(category);
  static llvm::cl::opt<std::string> seedFlag(
      "seed",
      llvm::cl::desc("seed of the random ops without a 'seed' attribute "
                     "(dropout in training, RandomUniform(Like), "
                     "RandomNormal(Like), Bernoulli): each node's key is a "
                     "hash of it and the node's name (default: 0)"),
      llvm::cl::value_desc("n"), llvm::cl::init("0"), llvm::cl::cat(category));
  static llvm::cl::opt<bool> passTiming(
      "pass-timing",
      llvm::cl::desc("print the wall time of every pass of every stage "
                     "(MLIR's timing report) to stderr"),
      llvm::cl::cat(category));

  if (std::optional<int> exit = parseCommandLine(
          argc, argv, "compile",
          "compile an ONNX model into per-device programs and weight shards\n\n"
          "  autopar compile MODEL.onnx --grid SHAPE [--plan P] "
          "[--cluster FILE.json] [--input-shape NAME=8x128] -o OUTDIR\n"
          "  autopar compile MODEL.onnx --mode training --loss L "
          "[--optimizer sgd|adam] [--lr X] [--weight-decay X] "
          "[--freeze NAME,...] --grid SHAPE [--plan P] -o OUTDIR\n\n"
          "OUTDIR receives program.so (the device program), program.mlir, "
          "weights/rank<R>/w<id>.bin, plan.json, plan.txt and manifest.json.\n",
          category, kErrorExitCode))
    return *exit;
  reportPassTiming = passTiming;
  if (model.empty()) {
    printError("no model given (autopar compile MODEL.onnx --grid SHAPE -o "
               "OUTDIR)");
    return kErrorExitCode;
  }
  if (grid.getNumOccurrences() == 0) {
    printError("missing --grid (e.g. --grid 2 or --grid 2x2)");
    return kErrorExitCode;
  }
  if (outDir.empty()) {
    printError("missing output directory (-o OUTDIR)");
    return kErrorExitCode;
  }

  FailureOr<std::optional<TrainingStepOptions>> trainingOptions =
      trainingFlags.get();
  if (failed(trainingOptions))
    return kErrorExitCode;
  std::optional<TrainingStepOptions> training = std::move(*trainingOptions);

  DriverContext context;
  MLIRContext &ctx = context.get();
  // Check the cheap arguments before importing.
  std::string error;
  if (failed(parseGridShape(grid, error))) {
    printError(error);
    return kErrorExitCode;
  }
  if (failed(checkPlanArgument(ctx, plan)))
    return kErrorExitCode;
  if (!fixed.empty()) {
    if (plan.getNumOccurrences()) {
      printError("--fixed and --plan both choose the plan: give one");
      return kErrorExitCode;
    }
    // Configuration errors come before the import.
    FailureOr<FixedConfig> parsed = parseFixedConfig(fixed, error);
    if (failed(parsed)) {
      printError(error);
      return kErrorExitCode;
    }
  }
  FailureOr<InputShapes> inputShapes = common.getInputShapes();
  FailureOr<uint64_t> seed = parseUnsignedOption("seed", seedFlag);
  if (failed(inputShapes) || failed(seed))
    return kErrorExitCode;
  std::optional<int64_t> grain;
  if (minFlopsPerThread.getNumOccurrences()) {
    FailureOr<uint64_t> value =
        parseUnsignedOption("min-flops-per-thread", minFlopsPerThread);
    if (failed(value))
      return kErrorExitCode;
    if (*value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      printError("invalid --min-flops-per-thread '" + minFlopsPerThread +
                 "': at most " +
                 Twine(std::numeric_limits<int64_t>::max()).str());
      return kErrorExitCode;
    }
    grain = static_cast<int64_t>(*value);
  }
  // A training step keeps every float initializer a parameter.
  FailureOr<ImportedModel> imported =
      importModel(ctx, model, *inputShapes, /*requireWeightData=*/true,
                  /*keepFloatInitializers=*/training.has_value(), *seed,
                  /*unmergeHeads=*/hasSeveralDevices(grid));
  if (failed(imported))
    return kErrorExitCode;
  CompileOptions options;
  options.grid = grid;
  options.plan = plan;
  options.inputShapes = *inputShapes;
  options.clusterPath = cluster;
  options.outDir = outDir;
  options.fixed = fixed;
  options.training = training;
  options.modelPath = model;
  options.precision = precision;
  options.winograd = !noWinograd;
  options.minFlopsPerThread = grain;
  FailureOr<Manifest> manifest = compileModel(ctx, *imported, options);
  if (failed(manifest))
    return kErrorExitCode;
  llvm::outs() << "compiled '" << model << "' for grid "
               << formatGridShape(manifest->grid) << " ("
               << manifest->numDevices << " device"
               << (manifest->numDevices == 1 ? "" : "s") << ", plan "
               << manifest->plan << ") into '" << outDir << "'\n";
  return 0;
}

int driver::importCommand(int argc, char **argv) {
  static llvm::cl::OptionCategory category("autopar import options");
  static ModelPlanOptions common(
      category, "device grid for the later stages (default: 1)", "1");
  llvm::cl::opt<std::string> &model = common.model;
  llvm::cl::opt<std::string> &grid = common.grid;
  llvm::cl::opt<std::string> &plan = common.plan;
  static llvm::cl::opt<std::string> emit(
      "emit",
      llvm::cl::desc("the stage after which to print the IR: imported "
                     "(default), annotated (after planning), partitioned (the "
                     "SPMD device program) or llvm (the LLVM dialect module)"),
      llvm::cl::value_desc("stage"), llvm::cl::init("imported"),
      llvm::cl::cat(category));

  if (std::optional<int> exit =
          parseCommandLine(argc, argv, "import",
                           "print the IR of a model after a compiler stage\n\n"
                           "  autopar import MODEL.onnx [--grid G --plan P] "
                           "[--input-shape NAME=8x128] "
                           "[--emit imported|annotated|partitioned|llvm]\n",
                           category, kErrorExitCode))
    return *exit;
  if (model.empty()) {
    printError("no model given (autopar import MODEL.onnx)");
    return kErrorExitCode;
  }
  std::optional<EmitStage> stage =
      llvm::StringSwitch<std::optional<EmitStage>>(emit)
          .Case("imported", EmitStage::Imported)
          .Case("annotated", EmitStage::Annotated)
          .Case("partitioned", EmitStage::Partitioned)
          .Case("llvm", EmitStage::LLVM)
          .Default(std::nullopt);
  if (!stage) {
    printError("invalid --emit '" + emit +
               "': expected imported, annotated, partitioned or llvm");
    return kErrorExitCode;
  }
  FailureOr<InputShapes> inputShapes = common.getInputShapes();
  if (failed(inputShapes))
    return kErrorExitCode;
  DriverContext context;
  MLIRContext &ctx = context.get();
  FailureOr<ImportedModel> imported =
      importModel(ctx, model, *inputShapes, /*requireWeightData=*/false,
                  /*keepFloatInitializers=*/false, /*seed=*/0,
                  /*unmergeHeads=*/hasSeveralDevices(grid));
  if (failed(imported))
    return kErrorExitCode;
  FailureOr<OwningOpRef<ModuleOp>> module =
      runStagesUntil(ctx, *imported, grid, plan, *stage);
  if (failed(module))
    return kErrorExitCode;
  (*module)->print(llvm::outs(), OpPrintingFlags());
  llvm::outs() << "\n";
  return 0;
}
