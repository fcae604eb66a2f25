//===- Verify.cpp - autopar verify: partitioned vs one device ---*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements the `verify` subcommand: it compiles a model twice
// (the requested partitioned program and the single-device reference one),
// runs both on the same inputs (given, or random and seeded), compares every
// output and, when the input directory holds reference outputs, compares the
// single-device outputs against them. With `--reference-dir` the
// single-device outputs are kept there and reused by later verifies of the
// same run (ReferenceOutputs.h) instead of compiled and run again.
//
//===----------------------------------------------------------------------===//

#include "DriverInternal.h"

#include "autopar/Dialect/Autopar/IR/Autopar.h"
#include "autopar/Driver/ReferenceOutputs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::driver;

//===----------------------------------------------------------------------===//
// Comparison
//===----------------------------------------------------------------------===//

Tolerance mlir::autopar::getDefaultTolerance(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return {1e-4, 1e-5};
  case DType::F64:
    return {1e-9, 1e-12};
  case DType::I64:
  case DType::I32:
  case DType::I8:
  case DType::U8:
  case DType::Bool:
    return {0, 0};
  }
  llvm_unreachable("unknown dtype");
}

/// Element `index` of `tensor` as a double.
static double getElement(const HostTensor &tensor, int64_t index) {
  const char *data = tensor.data.data();
  auto load = [&](auto zero) {
    decltype(zero) value;
    std::memcpy(&value, data + index * sizeof(value), sizeof(value));
    return static_cast<double>(value);
  };
  switch (tensor.dtype) {
  case DType::F32:
    return load(float());
  case DType::F64:
    return load(double());
  case DType::I64:
    return load(int64_t());
  case DType::I32:
    return load(int32_t());
  case DType::I8:
    return load(int8_t());
  case DType::U8:
    return load(uint8_t());
  case DType::Bool:
    return data[index] != 0 ? 1.0 : 0.0;
  }
  llvm_unreachable("unknown dtype");
}

FailureOr<Comparison> mlir::autopar::compareTensors(MLIRContext &ctx,
                                                    StringRef what,
                                                    const HostTensor &actual,
                                                    const HostTensor &expected,
                                                    Tolerance tolerance) {
  if (actual.dtype != expected.dtype ||
      ArrayRef<int64_t>(actual.shape) != ArrayRef<int64_t>(expected.shape)) {
    emitDriverError(ctx) << what << " is " << getDTypeName(actual.dtype) << " "
                         << formatShape(actual.shape) << ", expected "
                         << getDTypeName(expected.dtype) << " "
                         << formatShape(expected.shape);
    return failure();
  }
  int64_t numElements = expected.getNumElements();
  int64_t numBytes = numElements * getDTypeSize(expected.dtype);
  if (static_cast<int64_t>(actual.data.size()) != numBytes ||
      static_cast<int64_t>(expected.data.size()) != numBytes) {
    emitDriverError(ctx) << what << " holds the wrong number of bytes";
    return failure();
  }
  Comparison result;
  for (int64_t i = 0; i < numElements; ++i) {
    double a = getElement(actual, i);
    double b = getElement(expected, i);
    if (std::isnan(a) || std::isnan(b)) {
      if (std::isnan(a) != std::isnan(b)) {
        result.ok = false;
        result.maxAbsErr = result.maxRelErr = INFINITY;
      }
      continue;
    }
    if (a == b)
      continue;
    // An infinity must be matched exactly: against an infinite expected
    // value the bound atol + rtol * |b| is infinite and would accept
    // anything (a finite value, or the infinity of the other sign).
    if (std::isinf(a) || std::isinf(b)) {
      result.ok = false;
      result.maxAbsErr = result.maxRelErr = INFINITY;
      continue;
    }
    double absErr = std::fabs(a - b);
    result.maxAbsErr = std::max(result.maxAbsErr, absErr);
    double relErr = b != 0 ? absErr / std::fabs(b) : INFINITY;
    result.maxRelErr = std::max(result.maxRelErr, relErr);
    if (!(absErr <= tolerance.atol + tolerance.rtol * std::fabs(b)))
      result.ok = false;
  }
  return result;
}

Tolerance mlir::autopar::getPrecisionTolerance(StringRef precision,
                                               double outputScale) {
  // 8 units of roundoff of the storage type (2^-8 for bf16's 8-bit
  // significand, 2^-11 for f16's 11 bits), relative to each element and, for
  // the absolute part, to the output's scale (its largest magnitude).
  double roundoffs = 8;
  double unit = precision == "bf16"  ? std::ldexp(1.0, -8)
                : precision == "f16" ? std::ldexp(1.0, -11)
                                     : 0;
  if (unit == 0)
    return getDefaultTolerance(DType::F32);
  double rtol = roundoffs * unit;
  return {rtol, rtol * outputScale};
}

/// The largest magnitude of a float tensor's finite elements (0 for other
/// tensors).
static double getOutputScale(const HostTensor &tensor) {
  if (tensor.dtype != DType::F32 && tensor.dtype != DType::F64)
    return 0;
  double scale = 0;
  for (int64_t i = 0, e = tensor.getNumElements(); i < e; ++i) {
    double value = std::fabs(getElement(tensor, i));
    if (std::isfinite(value))
      scale = std::max(scale, value);
  }
  return scale;
}

//===----------------------------------------------------------------------===//
// Random inputs
//===----------------------------------------------------------------------===//

/// Default bound of integer inputs that index nothing.
constexpr int64_t kDefaultIntegerBound = 8;

SmallVector<int64_t> mlir::autopar::getIntegerInputBounds(ModuleOp module) {
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main)
    return {};
  SmallVector<int64_t> bounds;
  for (BlockArgument arg : main.getArguments()) {
    int64_t bound = std::numeric_limits<int64_t>::max();
    SmallVector<Value> worklist = {arg};
    llvm::SmallPtrSet<Operation *, 8> seen;
    while (!worklist.empty()) {
      Value v = worklist.pop_back_val();
      for (OpOperand &use : v.getUses()) {
        Operation *user = use.getOwner();
        if (!seen.insert(user).second)
          continue;
        if (auto gather = dyn_cast<GatherOp>(user)) {
          if (use.getOperandNumber() == 1)
            bound = std::min(bound, gather.getData().getType().getDimSize(
                                        gather.getAxis()));
          continue;
        }
        if (isa<ReshapeOp, TransposeOp, ExpandOp, SliceOp, CastOp, SplitOp,
                ConcatOp>(user))
          llvm::append_range(worklist, user->getResults());
      }
    }
    bounds.push_back(bound == std::numeric_limits<int64_t>::max()
                         ? kDefaultIntegerBound
                         : std::max<int64_t>(bound, 1));
  }
  return bounds;
}

FailureOr<std::vector<HostTensor>>
mlir::autopar::generateRandomInputs(MLIRContext &ctx, const Manifest &manifest,
                                    uint64_t seed,
                                    ArrayRef<int64_t> integerBounds) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int> boolean(0, 1);
  std::vector<HostTensor> tensors;
  for (auto [index, sig] : llvm::enumerate(manifest.inputs)) {
    int64_t bound = index < integerBounds.size() ? integerBounds[index]
                                                 : kDefaultIntegerBound;
    std::uniform_int_distribution<int64_t> integer(0, bound - 1);
    if (llvm::any_of(sig.shape, ShapedType::isDynamic)) {
      emitDriverError(ctx) << "input '" << sig.name
                           << "' has the dynamic shape "
                           << formatShape(sig.shape)
                           << "; give concrete inputs with --inputs DIR";
      return failure();
    }
    HostTensor tensor;
    tensor.dtype = sig.dtype;
    tensor.shape = sig.shape;
    int64_t numElements = tensor.getNumElements();
    tensor.data.resize(numElements * getDTypeSize(sig.dtype));
    char *data = tensor.data.data();
    auto store = [&](int64_t index, auto value) {
      std::memcpy(data + index * sizeof(value), &value, sizeof(value));
    };
    for (int64_t i = 0; i < numElements; ++i) {
      switch (sig.dtype) {
      case DType::F32:
        store(i, static_cast<float>(real(engine)));
        break;
      case DType::F64:
        store(i, real(engine));
        break;
      case DType::I64:
        store(i, static_cast<int64_t>(integer(engine)));
        break;
      case DType::I32:
        store(i, static_cast<int32_t>(integer(engine)));
        break;
      case DType::I8:
        store(i, static_cast<int8_t>(integer(engine)));
        break;
      case DType::U8:
        store(i, static_cast<uint8_t>(integer(engine)));
        break;
      case DType::Bool:
        data[i] = static_cast<char>(boolean(engine));
        break;
      }
    }
    tensors.push_back(std::move(tensor));
  }
  return tensors;
}

//===----------------------------------------------------------------------===//
// autopar verify
//===----------------------------------------------------------------------===//

/// Tolerance for `dtype`: the defaults, overridden by --rtol/--atol.
static Tolerance getTolerance(DType dtype, std::optional<double> rtol,
                              std::optional<double> atol) {
  Tolerance tolerance = getDefaultTolerance(dtype);
  if (rtol)
    tolerance.rtol = *rtol;
  if (atol)
    tolerance.atol = *atol;
  return tolerance;
}

/// `base` (a precision's tolerance), overridden by --rtol/--atol.
static Tolerance getTolerance(DType, std::optional<double> rtol,
                              std::optional<double> atol, Tolerance base) {
  if (rtol)
    base.rtol = *rtol;
  if (atol)
    base.atol = *atol;
  return base;
}

static void printComparison(StringRef kind, StringRef name,
                            const Comparison &comparison) {
  llvm::outs() << kind << " '" << name
               << "': max_abs_err=" << formatError(comparison.maxAbsErr)
               << " max_rel_err=" << formatError(comparison.maxRelErr) << " "
               << (comparison.ok ? "ok" : "MISMATCH") << "\n";
}

/// Prints the plan summary (`plan.txt`) of the program compiled into `dir`.
static LogicalResult printPlanText(MLIRContext &ctx, StringRef dir) {
  FailureOr<std::string> planText = readPlanText(ctx, dir);
  if (failed(planText))
    return failure();
  llvm::outs() << *planText;
  if (!StringRef(*planText).ends_with("\n"))
    llvm::outs() << "\n";
  llvm::outs().flush();
  return success();
}

namespace {
/// `verify --mode training`: the two compiled training steps and how to
/// compare them.
struct TrainingVerification {
  StringRef singleDir, partitionedDir;
  const Manifest *single = nullptr;
  const Manifest *partitioned = nullptr;
  const TrainingStepOptions *training = nullptr;
  /// `--inputs`: input_<i>.pb and target.pb; empty: random data.
  StringRef inputsDir;
  uint64_t seed = 0;
  uint64_t steps = 1;
  unsigned timeoutSeconds = 300;
  std::optional<double> rtol, atol;
  /// `--hostfile`, resolved; empty: this host.
  std::string hostfile;
  /// `--precision` of both programs (f32, bf16, f16).
  StringRef precision = "f32";
  /// The model's initializers: the weights before the first step.
  WeightStore *initial = nullptr;
};
} // namespace

/// `weight - initial` for an f32 weight: what the steps changed.
static FailureOr<HostTensor> getWeightUpdate(MLIRContext &ctx, StringRef name,
                                             const HostTensor &weight,
                                             WeightStore &initial) {
  std::string error;
  FailureOr<ArrayRef<char>> before = initial.getData(name, error);
  if (failed(before)) {
    emitDriverError(ctx) << error;
    return failure();
  }
  if (weight.dtype != DType::F32 || before->size() != weight.data.size()) {
    emitDriverError(ctx) << "weight '" << name
                         << "' is not an f32 tensor of the model's size";
    return failure();
  }
  HostTensor update = weight;
  auto *out = reinterpret_cast<float *>(update.data.data());
  for (int64_t i = 0, e = weight.getNumElements(); i < e; ++i) {
    float start;
    std::memcpy(&start, before->data() + 4 * i, 4);
    out[i] -= start;
  }
  return update;
}

/// The bounds of the random integer inputs of a training step compiled from
/// `module`: the model's inputs' bounds, then, for the cross-entropy loss,
/// the labels' (the classes: the last dimension of the model's first output).
static SmallVector<int64_t> getTrainingInputBounds(ModuleOp module,
                                                   StringRef loss) {
  SmallVector<int64_t> bounds = getIntegerInputBounds(module);
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (loss == "cross_entropy" && main && main.getNumResults() > 0)
    if (auto logits = dyn_cast<RankedTensorType>(main.getResultTypes()[0]))
      if (logits.getRank() > 0 && !logits.isDynamicDim(logits.getRank() - 1))
        bounds.push_back(std::max<int64_t>(logits.getShape().back(), 1));
  return bounds;
}

/// Runs K training steps of both programs on the same data and compares
/// each step's loss and every trained weight after the last step.
static int verifyTraining(MLIRContext &ctx, ModuleOp module,
                          const TrainingVerification &check,
                          ProgressLog &progress) {
  FailureOr<std::vector<HostTensor>> data =
      check.inputsDir.empty()
          ? generateRandomInputs(
                ctx, *check.partitioned, check.seed,
                getTrainingInputBounds(module, check.training->loss))
          : readTrainingData(ctx, check.partitionedDir, *check.partitioned,
                             check.inputsDir);
  if (failed(data))
    return kVerifyErrorExitCode;
  if (failed(printPlanText(ctx, check.partitionedDir)))
    return kVerifyErrorExitCode;

  TrainingRunOptions options;
  options.steps = check.steps;
  options.timeoutSeconds = check.timeoutSeconds;
  options.collectWeights = true;
  options.hostfile = check.hostfile;
  progress.step("verify: " + Twine(check.steps) +
                " training steps on one device");
  FailureOr<TrainingRun> expected =
      runTraining(ctx, check.singleDir, *check.single, *data, options);
  if (failed(expected))
    return kVerifyErrorExitCode;
  progress.step("verify: " + Twine(check.steps) + " training steps on " +
                Twine(check.partitioned->numDevices) + " ranks");
  FailureOr<TrainingRun> actual = runTraining(
      ctx, check.partitionedDir, *check.partitioned, *data, options);
  if (failed(actual))
    return kVerifyErrorExitCode;

  // In bf16 or f16 the forward and backward passes round every activation
  // and gradient, differently in each partitioning: losses and weight
  // updates agree to the precision's tolerance (verify's inference rule: 8
  // units of roundoff relative to each element, and to the largest for the
  // absolute part). The weights are compared by their updates, which carry
  // all of the rounding; the f32 master weights themselves would hide it.
  bool reduced = check.precision != "f32";
  Tolerance tolerance = getTolerance(DType::F32, check.rtol, check.atol);
  bool allOk = true;
  Comparison total;
  for (auto [index, loss] : llvm::enumerate(actual->losses)) {
    double reference = expected->losses[index];
    if (reduced)
      tolerance = getTolerance(
          DType::F32, check.rtol, check.atol,
          getPrecisionTolerance(check.precision, std::fabs(reference)));
    double absErr = std::fabs(loss - reference);
    double relErr = absErr / std::max(std::fabs(reference), 1e-30);
    bool ok = absErr <= tolerance.atol + tolerance.rtol * std::fabs(reference);
    llvm::outs() << "step " << index + 1
                 << " loss=" << llvm::format("%.9g", loss)
                 << " single-device=" << llvm::format("%.9g", reference)
                 << " abs_err=" << formatError(absErr)
                 << " rel_err=" << formatError(relErr) << " "
                 << (ok ? "ok" : "MISMATCH") << "\n";
    allOk &= ok;
    total.maxAbsErr = std::max(total.maxAbsErr, absErr);
    total.maxRelErr = std::max(total.maxRelErr, relErr);
  }
  // Adam divides each gradient by its running magnitude: a gradient at
  // round-off level moves its weight by up to lr per step in either
  // direction, so such weights agree to a fraction of lr, not to f32
  // round-off.
  Tolerance weightTolerance = tolerance;
  if (check.training->optimizer == "adam" && !check.atol)
    weightTolerance.atol =
        std::max(weightTolerance.atol, 0.1 * check.training->learningRate);
  if (actual->weights.size() != expected->weights.size()) {
    emitDriverError(ctx) << "the grid trained " << actual->weights.size()
                         << " weights, one device " << expected->weights.size();
    return kVerifyErrorExitCode;
  }
  for (const auto &[name, reference] : expected->weights) {
    auto it = actual->weights.find(name);
    if (it == actual->weights.end()) {
      emitDriverError(ctx) << "the grid did not train weight '" << name << "'";
      return kVerifyErrorExitCode;
    }
    FailureOr<Comparison> comparison;
    if (reduced && check.initial && check.initial->lookup(name)) {
      FailureOr<HostTensor> actualUpdate =
          getWeightUpdate(ctx, name, it->second, *check.initial);
      FailureOr<HostTensor> expectedUpdate =
          getWeightUpdate(ctx, name, reference, *check.initial);
      if (failed(actualUpdate) || failed(expectedUpdate))
        return kVerifyErrorExitCode;
      Tolerance updateTolerance =
          getTolerance(DType::F32, check.rtol, check.atol,
                       getPrecisionTolerance(check.precision,
                                             getOutputScale(*expectedUpdate)));
      if (check.training->optimizer == "adam" && !check.atol)
        updateTolerance.atol =
            std::max(updateTolerance.atol, 0.1 * check.training->learningRate);
      comparison =
          compareTensors(ctx, "update of weight '" + name + "'", *actualUpdate,
                         *expectedUpdate, updateTolerance);
      if (failed(comparison))
        return kVerifyErrorExitCode;
      printComparison("weight_update", name, *comparison);
    } else {
      comparison = compareTensors(ctx, "weight '" + name + "'", it->second,
                                  reference, weightTolerance);
      if (failed(comparison))
        return kVerifyErrorExitCode;
      printComparison("weight", name, *comparison);
    }
    allOk &= comparison->ok;
    total.maxAbsErr = std::max(total.maxAbsErr, comparison->maxAbsErr);
    total.maxRelErr = std::max(total.maxRelErr, comparison->maxRelErr);
  }
  llvm::outs() << "max_abs_err=" << formatError(total.maxAbsErr)
               << " max_rel_err=" << formatError(total.maxRelErr) << "\n";
  llvm::outs().flush();
  if (!allOk && check.training->optimizer == "adam" &&
      std::fabs(expected->losses.front()) < 1e-6)
    printNote("the loss starts at " +
              Twine(formatError(expected->losses.front())) +
              ": its gradients are round-off, and adam, which divides each "
              "gradient by its magnitude, turns them into updates of about "
              "lr that no two summation orders share (train on data the "
              "model does not already fit)");
  return allOk ? 0 : kVerifyMismatchExitCode;
}

int driver::verifyCommand(int argc, char **argv) {
  static llvm::cl::OptionCategory category("autopar verify options");
  static ModelPlanOptions common(category, "device grid: N or AxB[xC...], e.g. 4 or 2x2", "");
  llvm::cl::opt<std::string> &model = common.model;
  llvm::cl::opt<std::string> &grid = common.grid;
  llvm::cl::opt<std::string> &plan = common.plan;
  static llvm::cl::opt<std::string> inputs(
      "inputs",
      llvm::cl::desc("directory with input_<i>.pb (default: random inputs); "
                     "output_<i>.pb there are compared with the "
                     "single-device outputs; --mode training: also "
                     "target.pb (labels or target), as for train --data"),
      llvm::cl::value_desc("dir"), llvm::cl::cat(category));
  static llvm::cl::opt<std::string> seed(
      "seed",
      llvm::cl::desc("seed of the random inputs and of the random ops "
                     "without a 'seed' attribute (default: 0)"),
      llvm::cl::value_desc("n"), llvm::cl::init("0"), llvm::cl::cat(category));
  static llvm::cl::opt<std::string> rtol(
      "rtol",
      llvm::cl::desc("relative tolerance (default per dtype: f32 1e-4, f64 "
                     "1e-9, integers and bool 0)"),
      llvm::cl::value_desc("r"), llvm::cl::cat(category));
  static llvm::cl::opt<std::string> atol(
      "atol",
      llvm::cl::desc("absolute tolerance (default per dtype: f32 1e-5, f64 "
                     "1e-12, integers and bool 0)"),
      llvm::cl::value_desc("a"), llvm::cl::cat(category));
  static llvm::cl::opt<std::string> cluster(
      "cluster",
      llvm::cl::desc("cluster description for --plan auto (default: the "
                     "calibrated description of this machine)"),
      llvm::cl::value_desc("file.json"), llvm::cl::cat(category));
  static LauncherOptions launcher(category);
  static llvm::cl::opt<std::string> fixed(
      "fixed",
      llvm::cl::desc("a hand configuration instead of --plan, as for "
                     "compile: tp=T,pp=P,dp=D,micro_batch=b (pp > 1: a "
                     "pipeline, one program per stage)"),
      llvm::cl::value_desc("config"), llvm::cl::cat(category));
  static llvm::cl::opt<std::string> precision(
      "precision",
      llvm::cl::desc("f32 (default), bf16 or f16: the precision of the "
                     "partitioned program, compared with the f32 "
                     "single-device program; bf16/f16 float outputs default "
                     "to rtol = 8 units of roundoff and atol = rtol times the "
                     "output's largest magnitude. With --mode training both "
                     "programs train at this precision, and losses and "
                     "weight updates get that tolerance"),
      llvm::cl::value_desc("type"), llvm::cl::init("f32"),
      llvm::cl::cat(category));
  static TrainingFlags trainingFlags(category);
  static llvm::cl::opt<std::string> steps(
      "steps",
      llvm::cl::desc("--mode training: steps run on the grid and on one "
                     "device, each on the same batch (default: 3)"),
      llvm::cl::value_desc("N"), llvm::cl::init("3"), llvm::cl::cat(category));
  static llvm::cl::opt<std::string> timeout(
      "timeout",
      llvm::cl::desc("seconds before each job is killed (default: 300)"),
      llvm::cl::value_desc("s"), llvm::cl::init("300"),
      llvm::cl::cat(category));
  static llvm::cl::opt<std::string> referenceDir(
      "reference-dir",
      llvm::cl::desc("keep the single-device outputs in this directory: the "
                     "first verify writes them, later verifies of the same "
                     "single-device run (autopar and runner executables, "
                     "model, weights, inputs, seed, input shapes, threads) "
                     "read them instead of compiling and running that "
                     "program again; a reference written for another run is "
                     "an error naming what differs"),
      llvm::cl::value_desc("dir"), llvm::cl::cat(category));

  if (std::optional<int> exit = parseCommandLine(
          argc, argv, "verify",
          "compare a partitioned model with the single-device run\n\n"
          "  autopar verify MODEL.onnx --grid SHAPE [--plan P] [--inputs DIR] "
          "[--seed N] [--rtol R] [--atol A] [--precision f32|bf16|f16] "
          "[--timeout S] [--cluster FILE] "
          "[--input-shape NAME=8x128] [--batch N] [--hostfile FILE] "
          "[--reference-dir DIR]\n"
          "  autopar verify MODEL.onnx --mode training --loss L "
          "[--optimizer sgd|adam] [--lr X] [--steps K] --grid SHAPE "
          "[--plan P | --fixed CONFIG] [--inputs DIR]\n\n"
          "Prints the plan, one line per output, then 'max_abs_err=... "
          "max_rel_err=...'; with reference outputs (output_N.pb) in --inputs, "
          "a 'reference' line per output for each program. An element "
          "matches when |a - b| <= atol + rtol * |b| (b: single-device or "
          "reference value). With --mode training, K training "
          "steps on the grid are compared with K steps on one device: one "
          "line per step (its loss) and per trained weight after the last "
          "step; with adam, a weight's atol is at least lr / 10 (a gradient "
          "at round-off level moves a weight by up to lr). Exit code 0: "
          "match, 1: mismatch, 2: error.\n",
          category, kVerifyErrorExitCode))
    return *exit;
  if (model.empty()) {
    printError("no model given (autopar verify MODEL.onnx --grid SHAPE)");
    return kVerifyErrorExitCode;
  }
  if (grid.getNumOccurrences() == 0) {
    printError("missing --grid (e.g. --grid 2 or --grid 2x2)");
    return kVerifyErrorExitCode;
  }
  FailureOr<uint64_t> timeoutSeconds = parseUnsignedOption("timeout", timeout);
  FailureOr<uint64_t> seedValue = parseUnsignedOption("seed", seed);
  if (failed(timeoutSeconds) || failed(seedValue))
    return kVerifyErrorExitCode;
  if (*timeoutSeconds == 0 || *timeoutSeconds > UINT32_MAX) {
    printError("--timeout must be between 1 and " + Twine(UINT32_MAX) + " s");
    return kVerifyErrorExitCode;
  }
  FailureOr<std::optional<TrainingStepOptions>> training = trainingFlags.get();
  FailureOr<uint64_t> stepCount = parseUnsignedOption("steps", steps);
  if (failed(training) || failed(stepCount))
    return kVerifyErrorExitCode;
  if (*stepCount == 0 || *stepCount > 100000) {
    printError("--steps must be between 1 and 100000, got '" + steps + "'");
    return kVerifyErrorExitCode;
  }
  if (steps.getNumOccurrences() && !*training) {
    printError("--steps needs --mode training");
    return kVerifyErrorExitCode;
  }
  if (!referenceDir.empty() && *training) {
    printError("--reference-dir keeps the outputs of an inference program; "
               "it does not combine with --mode training");
    return kVerifyErrorExitCode;
  }
  std::optional<double> rtolOverride, atolOverride;
  if (rtol.getNumOccurrences()) {
    FailureOr<double> value = parseToleranceOption("rtol", rtol);
    if (failed(value))
      return kVerifyErrorExitCode;
    rtolOverride = *value;
  }
  if (atol.getNumOccurrences()) {
    FailureOr<double> value = parseToleranceOption("atol", atol);
    if (failed(value))
      return kVerifyErrorExitCode;
    atolOverride = *value;
  }

  DriverContext context;
  MLIRContext &ctx = context.get();
  std::string error;
  if (failed(parseGridShape(grid, error))) {
    printError(error);
    return kVerifyErrorExitCode;
  }
  if (failed(checkPlanArgument(ctx, plan)))
    return kVerifyErrorExitCode;
  if (!fixed.empty() && plan.getNumOccurrences()) {
    printError("--fixed and --plan both choose the plan: give one");
    return kVerifyErrorExitCode;
  }
  if (!inputs.empty() && !llvm::sys::fs::is_directory(inputs)) {
    printError("input directory '" + inputs + "' does not exist");
    return kVerifyErrorExitCode;
  }
  FailureOr<InputShapes> inputShapes = common.getInputShapes();
  if (failed(inputShapes))
    return kVerifyErrorExitCode;
  // A training step keeps every float initializer a parameter.
  FailureOr<ImportedModel> imported =
      importModel(ctx, model, *inputShapes, /*requireWeightData=*/true,
                  /*keepFloatInitializers=*/training->has_value(), *seedValue,
                  /*unmergeHeads=*/hasSeveralDevices(grid));
  if (failed(imported))
    return kVerifyErrorExitCode;

  TempDirectory tempDir;
  if (failed(tempDir.create(ctx, "autopar-verify")))
    return kVerifyErrorExitCode;
  SmallString<256> singleDir(tempDir.get()), partitionedDir(tempDir.get());
  llvm::sys::path::append(singleDir, "single");
  llvm::sys::path::append(partitionedDir, "partitioned");

  CompileOptions singleOptions;
  singleOptions.grid = "1";
  singleOptions.plan = "replicated";
  singleOptions.outDir = singleDir.str().str();
  singleOptions.inputShapes = *inputShapes;
  singleOptions.training = *training;
  singleOptions.modelPath = model;
  // A training step is checked against one device at its own precision
  // (an inference program against f32).
  if (*training)
    singleOptions.precision = precision;
  CompileOptions partitionedOptions;
  partitionedOptions.grid = grid;
  partitionedOptions.plan = plan;
  partitionedOptions.fixed = fixed;
  partitionedOptions.modelPath = model;
  partitionedOptions.clusterPath = cluster;
  partitionedOptions.quiet = true;
  partitionedOptions.outDir = partitionedDir.str().str();
  partitionedOptions.inputShapes = *inputShapes;
  partitionedOptions.precision = precision;
  partitionedOptions.training = *training;
  // The compiles' own stages are not reported: one line per step here.
  singleOptions.quiet = true;
  ProgressLog progress;
  progress.step("verify: compiling the program for grid " + grid);
  FailureOr<Manifest> partitioned =
      compileModel(ctx, *imported, partitionedOptions);
  if (failed(partitioned))
    return kVerifyErrorExitCode;
  // The single-device program, compiled unless --reference-dir has its
  // outputs.
  FailureOr<Manifest> single = failure();
  auto compileSingle = [&] {
    progress.step("verify: compiling the single-device program");
    single = compileModel(ctx, *imported, singleOptions);
    return success(succeeded(single));
  };
  if (*training) {
    if (failed(compileSingle()))
      return kVerifyErrorExitCode;
    TrainingVerification check;
    check.singleDir = singleDir;
    check.partitionedDir = partitionedDir;
    check.single = &*single;
    check.partitioned = &*partitioned;
    check.training = &**training;
    check.inputsDir = inputs;
    check.seed = *seedValue;
    check.steps = *stepCount;
    check.timeoutSeconds = static_cast<unsigned>(*timeoutSeconds);
    check.rtol = rtolOverride;
    check.atol = atolOverride;
    RunOptions launch;
    if (failed(launcher.apply(launch)))
      return kVerifyErrorExitCode;
    check.hostfile = launch.hostfile;
    check.precision = precision;
    check.initial = imported->weights.get();
    return verifyTraining(ctx, *imported->module, check, progress);
  }
  FailureOr<std::vector<HostTensor>> inputTensors =
      inputs.empty() ? generateRandomInputs(
                           ctx, *partitioned, *seedValue,
                           getIntegerInputBounds(*imported->module))
                     : readInputTensors(ctx, *partitioned, inputs);
  if (failed(inputTensors))
    return kVerifyErrorExitCode;
  if (failed(printPlanText(ctx, partitionedDir)))
    return kVerifyErrorExitCode;
  RunOptions runOptions;
  runOptions.timeoutSeconds = *timeoutSeconds;
  if (failed(launcher.apply(runOptions)))
    return kVerifyErrorExitCode;

  // The single-device outputs: from the reference directory when it holds
  // those of this run, else computed (and written there).
  std::optional<ReferenceKey> referenceKey;
  std::optional<std::vector<HostTensor>> expected;
  if (!referenceDir.empty()) {
    progress.step("verify: checking the reference directory " + referenceDir);
    FailureOr<std::string> runner = findRunner(ctx);
    if (failed(runner))
      return kVerifyErrorExitCode;
    ReferenceRunDescription description;
    description.compile = &singleOptions;
    description.seed = *seedValue;
    description.unmergeHeads = hasSeveralDevices(grid);
    description.run = &runOptions;
    description.inputSignatures = partitioned->inputs;
    description.inputs = *inputTensors;
    FailureOr<ReferenceKey> key =
        computeReferenceKey(ctx, *imported, description, *runner);
    if (failed(key))
      return kVerifyErrorExitCode;
    FailureOr<std::optional<std::vector<HostTensor>>> kept =
        readReferenceOutputs(ctx, referenceDir, *key, partitioned->outputs);
    if (failed(kept))
      return kVerifyErrorExitCode;
    referenceKey = std::move(*key);
    expected = std::move(*kept);
  }
  bool reused = expected.has_value();
  if (!reused) {
    if (failed(compileSingle()))
      return kVerifyErrorExitCode;
    progress.step("verify: running the single-device program");
    FailureOr<std::vector<HostTensor>> outputs =
        runCompiledProgram(ctx, singleDir, *single, *inputTensors, runOptions);
    if (failed(outputs))
      return kVerifyErrorExitCode;
    if (referenceKey &&
        failed(writeReferenceOutputs(ctx, referenceDir, *referenceKey,
                                     single->outputs, *outputs)))
      return kVerifyErrorExitCode;
    expected = std::move(*outputs);
  }
  if (!referenceDir.empty())
    llvm::outs() << "single-device outputs: "
                 << (reused ? "read from" : "written to") << " '"
                 << referenceDir << "'\n";
  progress.step("verify: running on " + Twine(partitioned->numDevices) +
                " ranks");
  FailureOr<std::vector<HostTensor>> actual = runCompiledProgram(
      ctx, partitionedDir, *partitioned, *inputTensors, runOptions);
  if (failed(actual))
    return kVerifyErrorExitCode;

  // The partitioned program's tolerance against `expected`: the dtype's, or
  // at a lower precision its roundoff relative to `expected`'s scale.
  auto partitionedTolerance = [&](DType dtype, const HostTensor &expected) {
    Tolerance tolerance = getTolerance(dtype, rtolOverride, atolOverride);
    if (precision != "f32" && dtype == DType::F32)
      tolerance = getTolerance(
          dtype, rtolOverride, atolOverride,
          getPrecisionTolerance(precision, getOutputScale(expected)));
    return tolerance;
  };
  bool allOk = true;
  Comparison total;
  for (auto [index, sig] : llvm::enumerate(partitioned->outputs)) {
    FailureOr<Comparison> comparison = compareTensors(
        ctx, "output '" + sig.name + "'", (*actual)[index], (*expected)[index],
        partitionedTolerance(sig.dtype, (*expected)[index]));
    if (failed(comparison))
      return kVerifyErrorExitCode;
    printComparison("output", sig.name, *comparison);
    allOk &= comparison->ok;
    total.maxAbsErr = std::max(total.maxAbsErr, comparison->maxAbsErr);
    total.maxRelErr = std::max(total.maxRelErr, comparison->maxRelErr);
  }

  // Reference outputs stored next to the inputs (ONNX test-data layout):
  // each program is compared with them, the single-device one at the
  // reference tolerance and the partitioned one at its own (a partitioned
  // result within the tolerance of the single-device one, itself within the
  // reference's, could otherwise miss the reference by both).
  if (!inputs.empty()) {
    for (auto [index, sig] : llvm::enumerate(partitioned->outputs)) {
      SmallString<256> path(inputs);
      llvm::sys::path::append(path, "output_" + std::to_string(index) + ".pb");
      if (!llvm::sys::fs::exists(path))
        continue;
      FailureOr<HostTensor> reference = readTensorProtoFile(path, error);
      if (failed(reference)) {
        printError("cannot read reference output '" + path + "': " + error);
        return kVerifyErrorExitCode;
      }
      FailureOr<Comparison> comparison = compareTensors(
          ctx, "reference output '" + sig.name + "' (" + path.str().str() + ")",
          (*expected)[index], *reference,
          getTolerance(sig.dtype, rtolOverride, atolOverride));
      if (failed(comparison))
        return kVerifyErrorExitCode;
      printComparison("reference", sig.name, *comparison);
      allOk &= comparison->ok;
      FailureOr<Comparison> partitionedComparison =
          compareTensors(ctx,
                         "reference output '" + sig.name + "' (" +
                             path.str().str() + ") of the partitioned program",
                         (*actual)[index], *reference,
                         partitionedTolerance(sig.dtype, *reference));
      if (failed(partitionedComparison))
        return kVerifyErrorExitCode;
      printComparison("partitioned_reference", sig.name,
                      *partitionedComparison);
      allOk &= partitionedComparison->ok;
    }
  }

  llvm::outs() << "max_abs_err=" << formatError(total.maxAbsErr)
               << " max_rel_err=" << formatError(total.maxRelErr) << "\n";
  llvm::outs().flush();
  return allOk ? 0 : kVerifyMismatchExitCode;
}
