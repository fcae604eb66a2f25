//===- DriverInternal.h - shared pieces of the driver -----------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Declarations shared by the files of lib/Driver and not part of its public
// API: the subcommand entry points, the command-line parsing helper and the
// context with autopar's diagnostic printer.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_LIB_DRIVER_DRIVERINTERNAL_H
#define AUTOPAR_LIB_DRIVER_DRIVERINTERNAL_H

#include "autopar/Analysis/Cluster.h"
#include "autopar/Driver/Driver.h"
#include "autopar/Transforms/Planning/AutoPlan.h"
#include "autopar/Transforms/Planning/PlanReport.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/CommandLine.h"

#include <chrono>
#include <memory>
#include <optional>

namespace mlir::autopar::driver {

/// Exit code of a failed command (`verify` uses 2 for errors, 1 for a
/// mismatch).
constexpr int kErrorExitCode = 1;
constexpr int kVerifyMismatchExitCode = 1;
constexpr int kVerifyErrorExitCode = 2;

/// The subcommands; `argv[0]` is the subcommand name.
int compileCommand(int argc, char **argv);
int runCommand(int argc, char **argv);
int trainCommand(int argc, char **argv);
int verifyCommand(int argc, char **argv);
int importCommand(int argc, char **argv);
int planCommand(int argc, char **argv);
int calibrateCommand(int argc, char **argv);

/// The options every model-taking subcommand shares: the model path, the
/// device grid, the plan and the static shapes of graph inputs. Construct one
/// as a function-local static per subcommand, in that subcommand's option
/// category.
/// The launcher options shared by the commands that start jobs (run,
/// verify; train once it exists).
struct LauncherOptions {
  explicit LauncherOptions(llvm::cl::OptionCategory &category)
      : hostfile("hostfile",
                 llvm::cl::desc("run the ranks across the hosts of an OpenMPI "
                                "hostfile (mpirun --hostfile); the compiled "
                                "directory, the inputs and the outputs must "
                                "be on a filesystem every host sees"),
                 llvm::cl::value_desc("file"), llvm::cl::cat(category)) {}
  llvm::cl::opt<std::string> hostfile;

  /// Checks the options and stores them into `options`; prints an error and
  /// fails on a missing hostfile.
  LogicalResult apply(RunOptions &options) const;
};

struct ModelPlanOptions {
  ModelPlanOptions(llvm::cl::OptionCategory &category, StringRef gridDesc,
                   StringRef gridDefault)
      : model(llvm::cl::Positional, llvm::cl::desc("<model.onnx>"),
              llvm::cl::cat(category)),
        grid("grid", llvm::cl::desc(gridDesc), llvm::cl::value_desc("shape"),
             llvm::cl::init(gridDefault.str()), llvm::cl::cat(category)),
        plan("plan",
             llvm::cl::desc("auto (search; needs a cluster), replicated, data, "
                            "tensor, or a plan.json file "
                            "(default: replicated)"),
             llvm::cl::value_desc("plan"), llvm::cl::init("replicated"),
             llvm::cl::cat(category)),
        inputShape(
            "input-shape",
            llvm::cl::desc("static shape of a graph input, resolving its "
                           "symbolic dimensions (repeatable or "
                           "comma-separated, e.g. ids=8x128,mask=8x128)"),
            llvm::cl::value_desc("name=shape"), llvm::cl::CommaSeparated,
            llvm::cl::ZeroOrMore, llvm::cl::cat(category)),
        batch("batch",
              llvm::cl::desc("the batch: dimension 0 of every runtime input "
                             "(symbolic or static); --input-shape wins over "
                             "it"),
              llvm::cl::value_desc("N"), llvm::cl::cat(category)) {}
  llvm::cl::opt<std::string> model;
  llvm::cl::opt<std::string> grid;
  llvm::cl::opt<std::string> plan;
  llvm::cl::list<std::string> inputShape;
  llvm::cl::opt<std::string> batch;

  /// The parsed `--input-shape` values and `--batch`; prints an `autopar:
  /// error:` line and fails on a malformed or repeated entry or a batch that
  /// is not a positive integer.
  FailureOr<InputShapes> getInputShapes() const;
};

/// The training flags `compile` and `verify` share: `--mode`, `--loss`,
/// `--optimizer`, `--lr`, `--weight-decay` and `--freeze`.
struct TrainingFlags {
  explicit TrainingFlags(llvm::cl::OptionCategory &category);
  llvm::cl::opt<std::string> mode;
  llvm::cl::opt<std::string> loss;
  llvm::cl::opt<std::string> optimizer;
  llvm::cl::opt<std::string> lr;
  llvm::cl::opt<std::string> weightDecay;
  llvm::cl::list<std::string> freeze;
  llvm::cl::opt<bool> distributedOptimizer;

  /// The training step asked for (nullopt: inference). Prints an `autopar:
  /// error:` line and fails on an unknown mode, a missing loss, a learning
  /// rate that is not positive, or training flags without `--mode training`.
  FailureOr<std::optional<TrainingStepOptions>> get() const;
};

/// Prints `autopar: error: <message>` on stderr.
void printError(const Twine &message);
/// Prints `autopar: note: <message>` on stderr.
void printNote(const Twine &message);

/// Parses the options of subcommand `command` (declared in `category`) from
/// `argv` (argv[0] is the subcommand). `--help` prints the options of the
/// subcommand only. Returns the exit code when the command must stop: 0
/// after `--help`, `errorExitCode` after a malformed command line (reported
/// as an `autopar: error:` line).
std::optional<int> parseCommandLine(int argc, char **argv, StringRef command,
                                    StringRef overview,
                                    llvm::cl::OptionCategory &category,
                                    int errorExitCode);

/// An MLIRContext with the driver's dialects and a diagnostic handler that
/// prints `autopar: error: ...` lines (notes and locations as `autopar:
/// note:` lines).
class DriverContext {
public:
  DriverContext();
  DriverContext(const DriverContext &) = delete;
  DriverContext &operator=(const DriverContext &) = delete;
  ~DriverContext();
  MLIRContext &get() { return *context; }

private:
  std::unique_ptr<MLIRContext> context;
  std::unique_ptr<ScopedDiagnosticHandler> handler;
};

/// Progress lines of long work, `autopar: <what> (<elapsed> s)` on stderr,
/// as the plan search prints them: shown when stderr is a terminal or the
/// environment sets AUTOPAR_PROGRESS=1, never when AUTOPAR_PROGRESS=0 or the
/// log is disabled (`--quiet`), so pipes and tests stay quiet by default.
class ProgressLog {
public:
  explicit ProgressLog(bool enabled = true);
  /// Prints `what` with the seconds since the log was made.
  void step(const Twine &what);
  bool isEnabled() const { return enabled; }

private:
  bool enabled;
  std::chrono::steady_clock::time_point start;
};

/// Emits an error without a location on `ctx`.
InFlightDiagnostic emitDriverError(MLIRContext &ctx);

/// Imports `modelPath` with graph inputs of `inputShapes` given static
/// shapes (errors on `ctx`), its fused projections split and, with
/// `unmergeHeads`, its merged batch and heads kept apart
/// (splitFusedProjections).
FailureOr<ImportedModel> importModel(MLIRContext &ctx, StringRef modelPath,
                                     const InputShapes &inputShapes = {},
                                     bool requireWeightData = true,
                                     bool keepFloatInitializers = false,
                                     uint64_t seed = 0,
                                     bool unmergeHeads = true);

/// Whether `grid` (N or AxB...) has more than one device: only then can a
/// plan split attention's heads, so only then does the import keep merged
/// batch and heads apart (autopar-unmerge-heads). An invalid grid counts as
/// several (its error is reported where it is parsed).
bool hasSeveralDevices(StringRef grid);

/// Checks that `plan` is a keyword or names an existing file.
LogicalResult checkPlanArgument(MLIRContext &ctx, StringRef plan);

/// Writes `bytes` to `path`, creating parent directories.
LogicalResult writeFileBytes(MLIRContext &ctx, StringRef path,
                             ArrayRef<char> bytes);

/// A temporary directory, removed on destruction unless the environment
/// variable AUTOPAR_KEEP_RUN_DIR is set.
class TempDirectory {
public:
  TempDirectory() = default;
  TempDirectory(const TempDirectory &) = delete;
  TempDirectory &operator=(const TempDirectory &) = delete;
  ~TempDirectory();
  /// Creates a fresh directory named after `prefix` in the system's
  /// temporary directory.
  LogicalResult create(MLIRContext &ctx, StringRef prefix);
  StringRef get() const { return path; }

private:
  SmallString<128> path;
};

/// Starts `autopar-runner <runnerArgs>` on `numRanks` ranks (under mpirun
/// when more than one or with a `hostfile`, passed to mpirun; a single rank
/// on this host runs directly, a singleton MPI job),
/// with OpenMPI's session files in `runDir`; waits at most `timeoutSeconds`
/// and returns its standard output (its standard error into `stderrText`
/// when given). Errors (the runtime's lines on failure) are emitted on
/// `ctx`. `autopar run`, `verify` and `calibrate` all start jobs here.
/// `onLine`, when given, gets each line of the standard output while the job
/// runs (`train` prints its steps as they end).
FailureOr<std::string>
launchRunner(MLIRContext &ctx, ArrayRef<std::string> runnerArgs,
             int64_t numRanks, StringRef runDir, unsigned timeoutSeconds,
             std::string *stderrText = nullptr, StringRef hostfile = "",
             llvm::function_ref<void(StringRef)> onLine = nullptr);

/// The path of the running `autopar` executable. Fails with an error on
/// `ctx` when its file was removed or replaced since the process started.
FailureOr<std::string> findAutoparExecutable(MLIRContext &ctx);

/// The runner jobs start: `$AUTOPAR_RUNNER` when set (front ends that are
/// not the `autopar` executable, such as the Python package, set it), else
/// the `autopar-runner` next to the running `autopar` executable. Fails with
/// an error on `ctx` when it is not executable.
FailureOr<std::string> findRunner(MLIRContext &ctx);

/// One program of an MPMD job: `autopar-runner <args>` on `ranks` ranks.
struct RunnerApp {
  int64_t ranks = 1;
  std::vector<std::string> args;
};

/// launchRunner for an MPMD job (a pipeline: one app per stage, in stage
/// order, so that stage s gets the world ranks after those of stages < s):
/// one `mpirun` with the apps separated by `:`.
FailureOr<std::string>
launchRunnerApps(MLIRContext &ctx, ArrayRef<RunnerApp> apps, StringRef runDir,
                 unsigned timeoutSeconds, std::string *stderrText = nullptr,
                 StringRef hostfile = "",
                 llvm::function_ref<void(StringRef)> onLine = nullptr);

/// The runner arguments that start stage `stage` of a pipeline compiled into
/// `outDir` (absolute): its program, sub-grid and weights, and its place
/// among the stages. `run` adds the microbatch count and the stage's ports,
/// `train` the stage's microbatch input slices and its state directory.
std::vector<std::string> getStageRunnerArgs(StringRef outDir,
                                            const PipelineManifest &pipeline,
                                            size_t stage);

/// Parses the value of a numeric option (`--timeout`, `--seed`): a
/// non-negative integer. Prints an error naming `option` on failure. Numeric
/// options are read as strings so that every error has autopar's form.
FailureOr<uint64_t> parseUnsignedOption(StringRef option, StringRef text);
/// Parses a non-negative, finite floating-point option value (`--rtol`).
FailureOr<double> parseToleranceOption(StringRef option, StringRef text);

/// Prints the cost model's prediction (`OUTDIR/plan.json`) next to what the
/// runner measured (`run --profile`, `train --profile`).
void printPredictionComparison(StringRef outDir,
                               const ProfileMeasurement &measured);
/// Reads the plan summary (`plan.txt`) of a compiled directory.
FailureOr<std::string> readPlanText(MLIRContext &ctx, StringRef outDir);

/// Parses a dtype name as written by getDTypeName.
std::optional<DType> parseDTypeName(StringRef name);

/// Formats a shape as `8x16` (`?` for dynamic sizes, `scalar` for rank 0).
std::string formatShape(ArrayRef<int64_t> shape);

/// Formats an error value for the verify report (`%.3e`).
std::string formatError(double value);

/// The cluster description for planning on `grid`: the file at `path`, or
/// the calibrated description of this machine (getDefaultClusterPath())
/// when `path` is empty. Without either: an error if `required`, else none.
FailureOr<std::optional<ClusterSpec>> resolveCluster(MLIRContext &ctx,
                                                     StringRef path,
                                                     ArrayRef<int64_t> grid,
                                                     bool required);

/// The planning stage: `plan` is `auto` (the search; needs `cluster`),
/// replicated, data, tensor or a plan file. Annotates `module`, checks the
/// result, and fills `meta` with what plan.json reports (the prediction
/// whenever a cluster is known).
/// How `autopar plan` searches and prices (its flags beyond the plan).
struct PlanSearchOptions {
  bool fold = true;
  double timeLimitSeconds = 600;
  PlanPrecision precision = PlanPrecision::Model;
  bool shardOptimizer = false;
  /// Training: the weights not trained (AutoPlanOptions::frozenWeights).
  std::vector<std::string> frozenWeights;
  int64_t microbatches = 1;
  /// Training: the recomputation priced, or searched.
  RecomputeSpec recompute;
  bool searchRecompute = false;
  /// The module is a pipeline stage of one repeated block
  /// (AutoPlanOptions::singleBlockStage).
  bool singleBlockStage = false;
  /// The module is an executable training step (autopar-differentiate's
  /// output) whose optimizer updates are split over each weight's replicas
  /// once the plan is chosen (autopar-shard-optimizer-state). `--plan auto`
  /// searches with that split priced (AutoPlanOptions::shardOptimizerState),
  /// the baselines are priced with it, and the prediction prices the split
  /// program.
  bool shardOptimizerUpdates = false;
};

/// A hand configuration in Megatron's notation (`--fixed`): tensor, pipeline
/// and data degrees, microbatch size, recomputation and schedule.
struct FixedConfig {
  int64_t tp = 1, pp = 1, dp = 1, microBatch = 1;
  RecomputeSpec recompute;
  /// `1f1b`, `interleaved` (with `chunks` model chunks per device) or `zb`.
  std::string schedule = "1f1b";
  int64_t chunks = 1;
  /// The text it was parsed from.
  std::string text;
};

/// Parses `tp=T,pp=P,dp=D,micro_batch=b[,recompute=none|selective|full]
/// [,schedule=1f1b|interleaved:V|zb]`; on failure `error` says which entry
/// is wrong.
FailureOr<FixedConfig> parseFixedConfig(StringRef text, std::string &error);

/// The grid a fixed configuration runs on: (n/T) x T, tensor parallelism
/// over the innermost T devices of the last axis of `grid` (n when T = n,
/// `grid` itself when T = 1), and the cluster description of that view (the
/// data axis at the slowest link it spans). Fails with `error` when T*P*D is
/// not the device count or T does not divide the last axis.
FailureOr<std::pair<SmallVector<int64_t>, std::optional<ClusterSpec>>>
getFixedGridView(const FixedConfig &config, ArrayRef<int64_t> grid,
                 const std::optional<ClusterSpec> &cluster, std::string &error);

LogicalResult planModule(MLIRContext &ctx, ModuleOp module,
                         ArrayRef<int64_t> grid, StringRef plan,
                         const std::optional<ClusterSpec> &cluster,
                         PlanMode mode, bool quiet, PlanMetadata &meta,
                         const PlanSearchOptions &search = {});

} // namespace mlir::autopar::driver

#endif // AUTOPAR_LIB_DRIVER_DRIVERINTERNAL_H
