//===- Driver.h - the autopar command-line driver ---------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The compiler driver behind the `autopar` tool: compiling a model into an
// output directory (device program, per-device weight shards, plan, manifest),
// running a compiled directory under `mpirun`, and verifying a partitioned
// program against the single-device one. The tool's `main` is one call to
// runMain; the pieces are exposed for other front ends (bindings, tests).
//
// Errors are emitted as diagnostics on the MLIRContext passed in; runMain
// installs a handler that prints them as `autopar: error: ...` lines.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_DRIVER_DRIVER_H
#define AUTOPAR_DRIVER_DRIVER_H

#include "autopar/Dialect/Autopar/IR/ShardLayout.h"
#include "autopar/Import/Import.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlir::autopar {

/// The autopar version recorded in manifests (the CMake project version).
StringRef getAutoparVersion();

/// Registers every dialect, extension and translation the driver's pipelines
/// need, autopar's included.
void registerDriverDialects(DialectRegistry &registry);

//===----------------------------------------------------------------------===//
// Grids
//===----------------------------------------------------------------------===//

// parseGridShape and formatGridShape live in
// autopar/Dialect/Autopar/IR/ShardLayout.h.

//===----------------------------------------------------------------------===//
// Manifest
//===----------------------------------------------------------------------===//

/// Name, element type and shape of a runtime input or output. A dynamic size
/// is ShapedType::kDynamic (-1 in the manifest).
struct TensorSignature {
  std::string name;
  DType dtype = DType::F32;
  SmallVector<int64_t> shape;
};

/// One weight of a compiled program: its runtime id (index in the program's
/// weight order), ONNX initializer name and global shape.
struct WeightEntry {
  int64_t id = 0;
  std::string name;
  DType dtype = DType::F32;
  SmallVector<int64_t> globalShape;
};

/// Where one input of a stage program comes from, or one output goes.
struct PipelinePort {
  /// The model's input or output index, or -1 for a boundary tensor.
  int64_t index = -1;
  /// The boundary tensor's id, or -1.
  int64_t boundary = -1;
  /// Input: the sending stage; output: the receiving stages.
  SmallVector<int64_t> stages;
  /// A model input every microbatch reads whole (it has no batch dimension).
  bool whole = false;
  /// A training stage's input read once per microbatch: the slice of this
  /// microbatch along dimension 0 (-1: the runtime's current microbatch, or
  /// whole).
  int64_t microbatch = -1;
};

/// One stage of a pipeline: its program, weights and plan are in
/// `OUTDIR/stage<s>/`.
struct PipelineStageManifest {
  /// The grid its program is partitioned for: its slab of grid axis 0, or
  /// the --fixed configuration's view of it.
  SmallVector<int64_t> grid;
  /// Its world ranks are [firstRank, firstRank + numRanks).
  int64_t firstRank = 0, numRanks = 1;
  /// Its repeated blocks [firstBlock, firstBlock + numBlocks).
  int64_t firstBlock = 0, numBlocks = 0;
  std::vector<PipelinePort> inputs, outputs;
};

/// An executed pipeline (MPMD): one program per stage, the global batch
/// streamed through them in `microbatches` slices of dimension 0.
struct PipelineManifest {
  int64_t microbatches = 1;
  /// `gpipe`: the runtime calls each stage's program once per microbatch
  /// (inference); `1f1b`: each stage's program is its whole training step
  /// over the microbatches, boundary tensors sent and received inside it.
  std::string schedule = "gpipe";
  std::vector<PipelineStageManifest> stages;
  /// Boundary tensors by id: one microbatch's global shape.
  std::vector<TensorSignature> boundaries;
};

/// The contents of `OUTDIR/manifest.json`, which `run` checks.
struct Manifest {
  std::string autoparVersion;
  std::string modelSha256;
  std::string planSha256;
  /// The `--plan` value (keyword or plan file path).
  std::string plan;
  SmallVector<int64_t> grid;
  int64_t numDevices = 1;
  std::vector<TensorSignature> inputs;
  std::vector<TensorSignature> outputs;
  std::vector<WeightEntry> weights;
  /// The `--cluster` file's contents, when one was given.
  std::optional<llvm::json::Value> cluster;
  /// The `--input-shape` values the model was imported with (`input_shapes`,
  /// written when not empty) and its `--batch` (`batch`, when given).
  InputShapes inputShapes;
  /// Set when the program is a pipeline of stage programs (no
  /// OUTDIR/program.so then, and `weights` is empty: each stage has its
  /// own).
  std::optional<PipelineManifest> pipeline;
};

/// Serializes `manifest` as JSON.
llvm::json::Value manifestToJson(const Manifest &manifest);

/// Reads `OUTDIR/manifest.json`; checks the autopar version and that
/// `program.so` and the weight directory exist. Errors are emitted on `ctx`.
FailureOr<Manifest> readManifest(MLIRContext &ctx, StringRef outDir);

//===----------------------------------------------------------------------===//
// Compile, run, verify
//===----------------------------------------------------------------------===//

/// The stage after which `autopar import` prints the IR.
enum class EmitStage { Imported, Annotated, Partitioned, LLVM };

/// What `autopar compile` is asked to do.
/// `compile --mode training`: the program is one training step (forward,
/// backward, optimizer update) with the weights and the optimizer state as
/// state the runtime keeps between steps (`autopar train`).
struct TrainingStepOptions {
  /// `cross_entropy`, `mse` or `output` (autopar-append-loss).
  std::string loss = "cross_entropy";
  /// `sgd` or `adam` (autopar-differentiate).
  std::string optimizer = "sgd";
  double learningRate = 0.01;
  double weightDecay = 0.0;
  /// Float initializers that are not trained.
  std::vector<std::string> freeze;
  /// Shard each weight's optimizer update and state over the devices that
  /// hold replicas of the weight (ZeRO-1, autopar-shard-optimizer-state).
  bool distributedOptimizer = false;
};

struct CompileOptions {
  std::string grid = "1";
  /// `replicated`, `data`, `tensor`, or the path of a plan file.
  std::string plan = "replicated";
  /// A hand configuration in Megatron's notation (`--fixed`, replaces
  /// `plan`): tp=T,pp=P,dp=D,micro_batch=b[,recompute=..][,schedule=..]. The
  /// program is built on the (n/T) x T view of `grid`; pp > 1 compiles an
  /// inference pipeline, one program per stage (manifest `pipeline`).
  std::string fixed;
  /// Optional cluster description (JSON with one `axes` entry per grid axis).
  std::string clusterPath;
  std::string outDir;
  /// No progress output from the planner.
  bool quiet = false;
  /// The `--input-shape` values the model was imported with, recorded in the
  /// manifest (the import applied them).
  InputShapes inputShapes;
  /// Set: compile one training step instead of inference; the output
  /// directory also receives `training.json` (see Train.cpp).
  std::optional<TrainingStepOptions> training;
  /// The model's path, recorded in `training.json` for `train --save`.
  std::string modelPath;
  /// `f32`, `bf16` or `f16`: the type weights and activations are stored
  /// and moved in (the lowering pipeline's `precision`); the plan search
  /// prices the same type.
  std::string precision = "f32";
  /// Qualifying 3x3 convolutions in the Winograd form (`--no-winograd`
  /// clears it; see autopar-pack-contractions).
  bool winograd = true;
  /// FLOPs each thread of a parallel loop must get for the loop to be
  /// threaded (`--min-flops-per-thread`; unset: the lowering pipeline's
  /// default, see autopar-size-thread-teams).
  std::optional<int64_t> minFlopsPerThread;
};

/// Runs autopar-split-fused-projections on the freshly imported `model`
/// (each fused [q | k | v] projection becomes one projection per part, so
/// that tensor parallelism gives whole heads), then, with `unmergeHeads`,
/// autopar-unmerge-heads (a reshape that merges the batch with the heads
/// keeps them apart, for the same reason; the driver leaves it out for a
/// grid of one device, where no plan splits heads and the merged batched
/// products run faster: ViT-S/16 at 224, 2 threads, 38.5 against 41.4 ms on
/// the 2-core AMD EPYC), and adds the parts' data, cut from the original
/// initializers, to its weight store. Every front end
/// runs it right after the import, so that plans name the same tensors. A
/// training step trains the parts; `train --save` and `verify` put them back
/// together (training.json records each part).
LogicalResult splitFusedProjections(MLIRContext &ctx, ImportedModel &model,
                                    bool unmergeHeads = true);

/// Compiles the imported `model` into `options.outDir`: plan files, the
/// device program (`program.mlir`, `program.so`), each device's weight
/// shards and `manifest.json`. `model.module` is left unchanged (the stages
/// run on a clone), so one import can be compiled several times.
FailureOr<Manifest> compileModel(MLIRContext &ctx, ImportedModel &model,
                                 const CompileOptions &options);

/// What `autopar plan` is asked to do: its flags, as text where the command
/// line takes text, so that every front end gets the same checks and
/// messages.
struct PlanRequest {
  std::string modelPath;
  /// `N` or `AxB[xC...]`.
  std::string grid;
  /// `auto` (the search; also when empty), replicated, data, tensor or the
  /// path of a plan file.
  std::string plan;
  /// Cluster description file; empty: the calibrated one of this machine.
  std::string clusterPath;
  /// `inference` or `training`.
  std::string mode = "inference";
  /// `model` (the model's types), f32, f16 or bf16.
  std::string precision = "model";
  /// Training: cross_entropy, mse or output; empty: none appended.
  std::string loss;
  /// Training: microbatches per step, `auto`, or empty (1).
  std::string microbatches;
  /// Training: none, selective, full, full:K or auto; empty: the default.
  std::string recompute;
  /// A hand configuration in Megatron's notation (see CompileOptions).
  std::string fixed;
  /// Pipeline stages: a count, `auto`, or empty (1).
  std::string stages;
  /// Pipeline schedule with stages: 1f1b, zb or gpipe; empty: the mode's.
  std::string schedule;
  bool distributedOptimizer = false;
  /// Training: weights not trained (`--freeze`), priced as buffers.
  std::vector<std::string> freeze;
  /// Share one strategy among repeated blocks.
  bool fold = true;
  /// Seconds the solver may take.
  uint64_t timeLimitSeconds = 600;
  /// No progress lines on stderr.
  bool quiet = false;
  /// Static shapes of graph inputs and the batch (`--input-shape`,
  /// `--batch`).
  InputShapes inputShapes;
};

/// Plans the model at `request.modelPath` as `autopar plan` does (the
/// search, or a fixed plan priced) and returns the plan as written to
/// plan.json (docs/plan-format.md). The weights need no data. Errors are
/// emitted on `ctx`, which must have registerDriverDialects' dialects.
FailureOr<llvm::json::Value> planModel(MLIRContext &ctx,
                                       const PlanRequest &request);

/// Runs the stages up to `stage` on a clone of the imported `model` and
/// returns the resulting module.
FailureOr<OwningOpRef<ModuleOp>> runStagesUntil(MLIRContext &ctx,
                                                ImportedModel &model,
                                                StringRef grid, StringRef plan,
                                                EmitStage stage);

/// Reads `DIR/input_<i>.pb` for every runtime input of `manifest` and checks
/// count, dtype and shape.
FailureOr<std::vector<HostTensor>>
readInputTensors(MLIRContext &ctx, const Manifest &manifest, StringRef dir);

/// A tensor's raw row-major bytes inside a file, from byte `offset` on (the
/// raw_data of a TensorProto file, or a whole raw file): what
/// `autopar-runner --input/--output OFFSET:PATH` takes.
struct TensorFileSlot {
  std::string path;
  int64_t offset = 0;
};

/// Locates the runtime inputs `DIR/input_<i>.pb` of `manifest` without
/// reading their data, and checks count, dtype and shape: a raw-encoded
/// tensor is used in place (each rank reads its block at the raw_data
/// offset); one in typed fields is converted into a raw file
/// `stagingDir/input_<i>.bin`.
FailureOr<std::vector<TensorFileSlot>>
locateInputFiles(MLIRContext &ctx, const Manifest &manifest, StringRef dir,
                 StringRef stagingDir);

/// What the runner measured with `--profile` (negative: not reported).
struct ProfileMeasurement {
  double stepTimeSeconds = -1;
  int64_t peakMemoryBytes = -1;
};

/// How a compiled program is launched.
struct RunOptions {
  /// Seconds before the job is killed.
  unsigned timeoutSeconds = 300;
  /// Passes `--profile` to the runner.
  bool profile = false;
  /// Threads per rank (`--threads`); 0: the runner's default,
  /// floor(usable cores / ranks on the host).
  unsigned threads = 0;
  /// Receives the measurements of a profiled run (may be null).
  ProfileMeasurement *measured = nullptr;
  /// OpenMPI hostfile: the ranks run across its hosts (mpirun is used even
  /// for one rank); empty: every rank on this host.
  std::string hostfile;
};

/// Runs the program compiled into `outDir` with `mpirun` (one rank per
/// device) on the input files `inputs` (one per runtime input), writing each
/// device's blocks of every output into `outputs` (existing files, large
/// enough; one per output).
LogicalResult runCompiledFiles(MLIRContext &ctx, StringRef outDir,
                               const Manifest &manifest,
                               ArrayRef<TensorFileSlot> inputs,
                               ArrayRef<TensorFileSlot> outputs,
                               const RunOptions &options);

/// Runs the program compiled into `outDir` on `inputs` (through raw files)
/// and returns its outputs.
FailureOr<std::vector<HostTensor>>
runCompiledProgram(MLIRContext &ctx, StringRef outDir, const Manifest &manifest,
                   ArrayRef<HostTensor> inputs, const RunOptions &options);

/// How `runTraining` runs a training step compiled with `--mode training`.
struct TrainingRunOptions {
  /// Steps, each on the same batch.
  uint64_t steps = 1;
  /// Seconds before the job is killed.
  unsigned timeoutSeconds = 600;
  /// Threads per rank; 0: the runtime's default.
  unsigned threads = 0;
  /// Measure the step time and peak memory (`TrainingRun::measured`).
  bool profile = false;
  /// Assemble the trained initializers from the ranks' shards
  /// (`TrainingRun::weights`).
  bool collectWeights = false;
  /// An OpenMPI hostfile: the ranks run across its hosts (the compiled
  /// directory must be on a filesystem every host sees); empty: this host.
  std::string hostfile;
  /// Called with each `step K loss=V` line as the job prints it.
  llvm::function_ref<void(StringRef)> onStep = nullptr;
};

/// What a training job produced.
struct TrainingRun {
  /// The loss of each step's forward pass, in step order.
  std::vector<double> losses;
  ProfileMeasurement measured;
  /// The trained initializers by name (with `collectWeights`).
  std::map<std::string, HostTensor> weights;
};

/// Reads a training step's runtime inputs from `dataDir`: the model's inputs
/// `input_<i>.pb` and, for the mse and cross_entropy losses, the step's last
/// input (target or labels) from `target.pb`; checks them against the
/// manifest of the step compiled into `outDir`.
FailureOr<std::vector<HostTensor>> readTrainingData(MLIRContext &ctx,
                                                    StringRef outDir,
                                                    const Manifest &manifest,
                                                    StringRef dataDir);

/// Runs `options.steps` steps of the training step compiled into `outDir`
/// (one program, or a pipeline's stages as one MPMD job) on `inputs` (the
/// whole batch), keeping the weights and optimizer state on the ranks
/// between steps.
FailureOr<TrainingRun> runTraining(MLIRContext &ctx, StringRef outDir,
                                   const Manifest &manifest,
                                   ArrayRef<HostTensor> inputs,
                                   const TrainingRunOptions &options);

/// The path of the model a training step was compiled from (`--save` writes
/// a copy of it with the trained initializers).
FailureOr<std::string> getTrainedModelSource(MLIRContext &ctx,
                                             StringRef outDir);

/// Comparison of one tensor against a reference.
struct Comparison {
  double maxAbsErr = 0;
  double maxRelErr = 0;
  /// Every element satisfies |a - b| <= atol + rtol * |b|.
  bool ok = true;
};

/// Per-dtype default tolerances (documented in docs/user-guide.md).
struct Tolerance {
  double rtol = 0;
  double atol = 0;
};
Tolerance getDefaultTolerance(DType dtype);

/// The default tolerance of an f32 output of a program compiled with
/// `--precision` `precision` (bf16 or f16) against the f32 program: rtol is
/// 8 units of roundoff of the storage type (bf16 2^-5, f16 2^-8) and atol is
/// rtol times `outputScale`, the output's largest magnitude (documented in
/// docs/user-guide.md). f32 gives getDefaultTolerance(F32).
Tolerance getPrecisionTolerance(StringRef precision, double outputScale);

/// Compares `actual` against `expected` elementwise; fails (with an error on
/// `ctx` naming `what`) when dtype or shape differ.
FailureOr<Comparison> compareTensors(MLIRContext &ctx, StringRef what,
                                     const HostTensor &actual,
                                     const HostTensor &expected,
                                     Tolerance tolerance);

/// Exclusive upper bound of valid values of each runtime input of `module`'s
/// @main when it is an integer index: the size of the gathered dimension
/// (smallest over its uses as Gather indices, also through reshapes,
/// transposes, expands, slices and casts), or 8 when it indexes nothing.
SmallVector<int64_t> getIntegerInputBounds(ModuleOp module);

/// Seeded random inputs for `manifest`'s runtime inputs: floats uniform in
/// [-1, 1], integers uniform in [0, integerBounds[i]) (8 when absent),
/// booleans uniform.
FailureOr<std::vector<HostTensor>>
generateRandomInputs(MLIRContext &ctx, const Manifest &manifest, uint64_t seed,
                     ArrayRef<int64_t> integerBounds = {});

//===----------------------------------------------------------------------===//
// The tool
//===----------------------------------------------------------------------===//

/// The `autopar` tool: dispatches to the `compile`, `run`, `verify` and
/// `import` subcommands. Returns the process exit code.
int runMain(int argc, char **argv);

} // namespace mlir::autopar

#endif // AUTOPAR_DRIVER_DRIVER_H
