//===- Calibrate.cpp - autopar calibrate: measuring this machine -*- C++
//-*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements `autopar calibrate`: it measures the FLOP rate of each
// op class and the memory bandwidth by compiling and running micro models of
// each class on one device (the ordinary compile pipeline and runner), times
// the runtime's collectives over every axis of a grid of local ranks
// (`autopar-runner --bench-collectives`), fits each axis's latency and
// bandwidth, and writes the cluster description (Cluster.h) that planning
// prices against. docs/calibration.md describes what is measured.
//
//===----------------------------------------------------------------------===//

#include "DriverInternal.h"

#include "autopar/Analysis/Cluster.h"
#include "autopar/Analysis/CostModel.h"
#include "autopar/Analysis/RelativeFit.h"
#include "autopar/Analysis/ShardingRule.h"
#include "autopar/Dialect/Autopar/IR/ShardLayout.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <thread>
#include <unistd.h>

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::driver;

namespace {

/// Seconds before a micro model run or the collective bench is stopped.
constexpr unsigned kJobTimeoutSeconds = 120;

std::string joinPath(StringRef dir, const Twine &name) {
  SmallString<256> path(dir);
  llvm::sys::path::append(path, name);
  return path.str().str();
}

//===----------------------------------------------------------------------===//
// Micro models
//===----------------------------------------------------------------------===//

/// Deterministic f32 values in (0.5, 1.5), so that sums, exponentials and
/// products of the micro models stay finite.
std::vector<float> getCalibrationValues(int64_t count) {
  std::vector<float> values(count);
  for (int64_t i = 0; i < count; ++i)
    values[i] = 0.5f + static_cast<float>((i * 7919) % 1000) / 1000.0f;
  return values;
}

/// The weights of a micro model (f32, values of getCalibrationValues): the
/// parameters of its contractions are weights, as a model's are, so that
/// they are compiled as a model's (a contraction's weight is packed once, at
/// compile time, into the weight files; a runtime operand is packed on
/// every call).
class CalibrationWeights : public WeightStore {
public:
  explicit CalibrationWeights(SmallVector<Weight> weights)
      : weights(std::move(weights)) {}
  ArrayRef<Weight> getWeights() const override { return weights; }
  FailureOr<ArrayRef<char>> getData(StringRef name,
                                    std::string &error) override {
    const Weight *weight = lookup(name);
    if (!weight) {
      error = ("the calibration model has no weight '" + name + "'").str();
      return failure();
    }
    std::vector<char> &bytes = data[weight->name];
    if (bytes.empty()) {
      int64_t count = 1;
      for (int64_t size : weight->shape)
        count *= size;
      std::vector<float> values = getCalibrationValues(count);
      const char *begin = reinterpret_cast<const char *>(values.data());
      bytes.assign(begin, begin + values.size() * sizeof(float));
    }
    return ArrayRef<char>(bytes);
  }

private:
  SmallVector<Weight> weights;
  std::map<std::string, std::vector<char>> data;
};

/// One micro model: `@main` in MLIR text, of f32 inputs of `inputShapes`
/// and f32 weights (`autopar.weight "<name>"`) of `weightShapes`, with
/// `numResults` results.
struct MicroModel {
  OpClass opClass;
  std::string source;
  SmallVector<SmallVector<int64_t>> inputShapes;
  SmallVector<std::pair<std::string, SmallVector<int64_t>>> weightShapes = {};
  unsigned numResults = 1;
};

std::string tensorType(ArrayRef<int64_t> shape) {
  std::string text = "tensor<";
  for (int64_t size : shape)
    text += std::to_string(size) + "x";
  return text + "f32>";
}

/// `@main(args)` applying `count` ops in a chain to its first argument `%x`
/// (of type `type`, also the type of the result); `op(in, i)` is the text of
/// op `i` on value `in`. `prologue` holds the lines before the chain (the
/// model's weights).
std::string chain(StringRef args, StringRef type, unsigned count,
                  function_ref<std::string(StringRef in, unsigned i)> op,
                  StringRef prologue = "") {
  std::string text =
      ("func.func @main(" + args + ") -> " + type + " {\n" + prologue).str();
  std::string last = "%x";
  for (unsigned i = 0; i < count; ++i) {
    std::string name = "%v" + std::to_string(i);
    text += "  " + name + " = " + op(last, i) + "\n";
    last = name;
  }
  return text + "  return " + last + " : " + type.str() + "\n}\n";
}

/// The number of ops of the smaller micro model of class `c`; calibration
/// also runs twice as many and prices the difference.
unsigned getBaseCount(OpClass c, bool quick) {
  switch (c) {
  case OpClass::MatMul:
  case OpClass::BatchedMatMul:
    return quick ? 1 : 2;
  case OpClass::Conv:
  case OpClass::DepthwiseConv:
    return quick ? 1 : 2;
  case OpClass::Elementwise:
    return quick ? 4 : 8;
  case OpClass::Reduction:
    return quick ? 2 : 4;
  case OpClass::DataMovement:
    return quick ? 4 : 8;
  }
  llvm_unreachable("unknown op class");
}

/// Shapes of one class measured separately: a class's rate is the total
/// FLOPs (bytes) of its variants over their total time, so that it reflects
/// the mix of sizes models have (large and small planes, square and skinny
/// products), not one favourable shape.
unsigned getNumVariants(OpClass c) {
  switch (c) {
  case OpClass::MatMul:
    return 4;
  case OpClass::BatchedMatMul:
    return 2;
  case OpClass::Conv:
    return 4;
  case OpClass::DepthwiseConv:
    return 3;
  case OpClass::Elementwise:
  case OpClass::Reduction:
    return 2;
  case OpClass::DataMovement:
    return 2;
  }
  llvm_unreachable("unknown op class");
}

/// `count` adds x + c + c ... on `n` floats, every sum also a result of the
/// model: a value with a use besides its consumer is not fused into it
/// (autopar-fuse-elementwise), so each add runs a loop of its own, reading
/// two tensors and writing one (a chain of single-use adds would be one
/// loop, and measure neither the bandwidth nor the per-op overhead).
MicroModel buildUnfusedAdds(int64_t n, unsigned count) {
  std::string t = tensorType({n});
  std::string text = "func.func @main(%x: " + t + ", %c: " + t + ") -> (";
  std::string results, types;
  for (unsigned i = 0; i < count; ++i) {
    types += (i ? ", " : "") + t;
    results += (i ? ", %v" : "%v") + std::to_string(i);
  }
  text += types + ") {\n";
  for (unsigned i = 0; i < count; ++i)
    text += "  %v" + std::to_string(i) + " = autopar.add " +
            (i ? "%v" + std::to_string(i - 1) : std::string("%x")) +
            ", %c : (" + t + ", " + t + ") -> " + t + "\n";
  text += "  return " + results + " : " + types + "\n}\n";
  return {OpClass::Elementwise, text, {{n}, {n}}, {}, count};
}

/// The micro model of class `c`, shape `variant`, with `count` chained ops,
/// sized so that one op takes about a millisecond (`quick`: a fraction of
/// one). Every chain keeps the type of its input and cannot be folded.
MicroModel buildMicroModel(OpClass c, bool quick, unsigned count,
                           unsigned variant) {
  switch (c) {
  case OpClass::MatMul:
  case OpClass::BatchedMatMul: {
    // x @ b @ b ...: [m, k] x [k, k], a weight: square, a skinny
    // projection, a small one (a ViT's at batch 1) and a wide one (a
    // transformer's MLP). Their sizes span 14x, so that the class's fixed
    // time per op and its rate can be told apart (fitClassTime).
    SmallVector<int64_t> x, b;
    if (variant == 0) {
      int64_t n = quick ? 128 : 512;
      x = {n, n};
      b = {n, n};
    } else if (variant == 1) {
      x = {quick ? 256 : 2048, quick ? 64 : 256};
      b = {x[1], x[1]};
    } else if (variant == 2) {
      x = {quick ? 32 : 128, quick ? 96 : 384};
      b = {x[1], x[1]};
    } else {
      x = {quick ? 64 : 256, quick ? 256 : 1024};
      b = {x[1], x[1]};
    }
    std::string t = tensorType(x), tb = tensorType(b);
    auto op = [&](StringRef in, unsigned) {
      return ("autopar.matmul " + in + ", %b : (" + t + ", " + tb + ") -> " + t)
          .str();
    };
    if (c == OpClass::BatchedMatMul) {
      // Attention's products: two activations, one matrix per batch (heads
      // of 64 and of 128 over rows of 128 and 256); sizes 4x apart.
      int64_t batch = quick ? 4 : (variant == 0 ? 32 : 16);
      int64_t rows = quick ? 32 : (variant == 0 ? 128 : 256);
      int64_t d = quick ? (variant == 0 ? 16 : 32) : (variant == 0 ? 64 : 128);
      SmallVector<int64_t> xb = {batch, rows, d}, bb = {batch, d, d};
      std::string tx = tensorType(xb), tbb = tensorType(bb);
      auto batched = [&](StringRef in, unsigned) {
        return ("autopar.matmul " + in + ", %b : (" + tx + ", " + tbb +
                ") -> " + tx)
            .str();
      };
      return {
          c, chain("%x: " + tx + ", %b: " + tbb, tx, count, batched), {xb, bb}};
    }
    return {c,
            chain("%x: " + t, t, count, op,
                  "  %b = autopar.weight \"b\" : " + tb + "\n"),
            {x},
            {{"b", b}}};
  }
  case OpClass::Conv:
  case OpClass::DepthwiseConv: {
    // Convolutions, channels in = out, at the stages of a CNN: 3x3 on wide
    // planes, on small planes, many channels on tiny planes, and a pointwise
    // (1x1); depthwise 3x3 (one group per channel) on a wide plane, a small
    // one and many channels on a tiny one (MobileNet's last stages).
    int64_t n = 1, ch = 64, hw = 56, k = 3, group = 1;
    if (c == OpClass::DepthwiseConv) {
      if (variant == 0)
        n = 1, ch = 32, hw = 56;
      else if (variant == 1)
        n = 4, ch = 64, hw = 16;
      else
        n = 4, ch = 256, hw = 7;
      group = ch;
    } else if (variant == 1) {
      n = 4, ch = 64, hw = 16;
    } else if (variant == 2) {
      n = 4, ch = 256, hw = 4;
    } else if (variant == 3) {
      n = 4, ch = 128, hw = 8, k = 1;
    }
    if (quick) {
      n = 1;
      ch = std::min<int64_t>(ch, 8);
      hw = std::min<int64_t>(hw, 8);
      group = std::min(group, ch);
    }
    int64_t pad = k / 2;
    std::string t = tensorType({n, ch, hw, hw}),
                w = tensorType({ch, ch / group, k, k});
    std::string attrs =
        "{strides = array<i64: 1, 1>, pads = array<i64: " +
        std::to_string(pad) + ", " + std::to_string(pad) + ", " +
        std::to_string(pad) + ", " + std::to_string(pad) +
        ">, dilations = array<i64: 1, 1>, group = " + std::to_string(group) +
        " : i64}";
    return {c,
            chain(
                "%x: " + t, t, count,
                [&](StringRef in, unsigned) {
                  return ("autopar.conv " + in + ", %w " + attrs + " : (" + t +
                          ", " + w + ") -> " + t)
                      .str();
                },
                "  %w = autopar.weight \"w\" : " + w + "\n"),
            {{n, ch, hw, hw}},
            {{"w", {ch, ch / group, k, k}}}};
  }
  case OpClass::Elementwise: {
    // Sums (the memory bandwidth), and a transcendental (erf, as GELU has).
    int64_t n = quick ? (1 << 16) : (variant == 0 ? (1 << 20) : (1 << 18));
    std::string t = tensorType({n});
    if (variant == 1)
      return {
          c,
          chain("%x: " + t, t, count,
                [&](StringRef in, unsigned) {
                  return ("autopar.erf " + in + " : (" + t + ") -> " + t).str();
                }),
          {{n}}};
    return buildUnfusedAdds(n, count);
  }
  case OpClass::Reduction: {
    // Softmaxes and layer norms over the rows.
    int64_t rows = quick ? 64 : 256, cols = quick ? 256 : 1024;
    std::string t = tensorType({rows, cols}), v = tensorType({cols});
    if (variant == 1)
      return {c,
              chain("%x: " + t + ", %s: " + v + ", %b: " + v, t, count,
                    [&](StringRef in, unsigned) {
                      return ("autopar.layer_norm " + in +
                              ", %s, %b {axis = 1 : i64} : (" + t + ", " + v +
                              ", " + v + ") -> " + t)
                          .str();
                    }),
              {{rows, cols}, {cols}, {cols}}};
    return {c,
            chain("%x: " + t, t, count,
                  [&](StringRef in, unsigned) {
                    return ("autopar.softmax " + in + " {axis = 1 : i64} : (" +
                            t + ") -> " + t)
                        .str();
                  }),
            {{rows, cols}}};
  }
  case OpClass::DataMovement: {
    if (variant == 1) {
      // Attention's head transposes, [s, h, d] -> [h, s, d] (rows of d
      // floats move whole), with a reshape between two so that they do not
      // compose: [s, h, d] -> [h, s, d] -> [s, h, d] (reshaped) -> ...
      int64_t s = quick ? 64 : 512, h = quick ? 4 : 16, d = 64;
      std::string shd = tensorType({s, h, d}), hsd = tensorType({h, s, d});
      return {c,
              chain("%x: " + shd, shd, count,
                    [&](StringRef in, unsigned i) {
                      if (i % 2 == 0)
                        return ("autopar.transpose " + in +
                                " {perm = array<i64: 1, 0, 2>} : (" + shd +
                                ") -> " + hsd)
                            .str();
                      return ("autopar.reshape " + in + " : (" + hsd + ") -> " +
                              shd)
                          .str();
                    }),
              {{s, h, d}}};
    }
    // Transposes, with reshapes between them so that no two transposes
    // compose: n x n -> n x n -> n/2 x 2n -> 2n x n/2 -> n x n.
    int64_t n = quick ? 256 : 1024;
    std::string square = tensorType({n, n}), wide = tensorType({n / 2, 2 * n}),
                tall = tensorType({2 * n, n / 2});
    auto transpose = [](StringRef in, StringRef from, StringRef to) {
      return ("autopar.transpose " + in + " {perm = array<i64: 1, 0>} : (" +
              from + ") -> " + to)
          .str();
    };
    auto reshape = [](StringRef in, StringRef from, StringRef to) {
      return ("autopar.reshape " + in + " : (" + from + ") -> " + to).str();
    };
    return {c,
            chain("%x: " + square, square, count,
                  [&](StringRef in, unsigned i) {
                    switch (i % 4) {
                    case 0:
                      return transpose(in, square, square);
                    case 1:
                      return reshape(in, square, wide);
                    case 2:
                      return transpose(in, wide, tall);
                    default:
                      return reshape(in, tall, square);
                    }
                  }),
            {{n, n}}};
  }
  }
  llvm_unreachable("unknown op class");
}

/// Adds on 64 elements, each a loop of its own: ops whose time is all
/// overhead.
MicroModel buildOverheadModel(unsigned count) {
  return buildUnfusedAdds(64, count);
}

/// What one class measured.
struct ClassResult {
  OpClass opClass;
  unsigned numOps = 0;
  OpWork work;
  double seconds = 0;
  /// False when the time is the larger model's whole step (see
  /// measureClass).
  bool differential = true;
};

/// The work of every op of `module`'s @main run whole on one device.
FailureOr<std::pair<OpWork, unsigned>>
getModelWork(MLIRContext &ctx, ModuleOp module, OpClass expected) {
  OpWork total;
  unsigned numOps = 0;
  bool ok = true;
  module.walk([&](Operation *op) {
    // Weights are read before the step (file I/O, not priced as ops).
    if (op->getDialect() != ctx.getLoadedDialect<AutoparDialect>() ||
        isa<WeightOp>(op))
      return;
    FailureOr<ShardingRule> rule = ShardingRule::get(op);
    if (failed(rule) || classifyOp(op) != expected) {
      ok = false;
      return;
    }
    OpWork work = getOpWork(op, *rule, LoopAxes(rule->getNumLoops()), {1});
    // Rates are of the FLOPs the code executes (a Winograd convolution's
    // 4/9), as getComputeTime divides them.
    total.flops += work.getExecutedFlops();
    total.bytes += work.bytes;
    // The model streams rows when every op that moves bytes does.
    if (work.bytes > 0)
      total.streamsRows =
          (numOps == 0 || total.streamsRows) && work.streamsRows;
    ++numOps;
  });
  if (!ok || numOps == 0) {
    emitDriverError(ctx) << "the calibration model of class '"
                         << stringifyOpClass(expected)
                         << "' has an op the cost model cannot price";
    return failure();
  }
  return std::make_pair(total, numOps);
}

/// Reads `autopar-runtime: step_time_s=<s>` from the runner's output.
FailureOr<double> parseStepTime(MLIRContext &ctx, StringRef out) {
  SmallVector<StringRef> lines;
  out.split(lines, '\n');
  for (StringRef line : lines) {
    line = line.trim();
    if (!line.consume_front("autopar-runtime: step_time_s="))
      continue;
    double seconds = 0;
    if (!line.getAsDouble(seconds) && seconds > 0)
      return seconds;
  }
  emitDriverError(ctx) << "the runner printed no step time";
  return failure();
}

/// A micro model, compiled and timed.
struct TimedModel {
  OpWork work;
  unsigned numOps = 0;
  /// The runner's arguments for one job of the compiled model.
  std::vector<std::string> args;
  /// The step time of each round: the median of the job's warm repeats.
  SmallVector<double> roundSeconds;
  /// The fastest round (what the description records).
  double seconds = 0;
};

/// How the micro models are timed: `rounds` rounds, each one runner job of
/// every model with the median of `repeats` warm runs.
struct Timing {
  unsigned repeats = 21;
  unsigned rounds = 6;
};

/// The micro models of one calibration: every model is compiled first, then
/// timed in rounds, each round one runner job of every model in turn, and a
/// model's time is its fastest round.
///
/// A shared VM runs in modes minutes apart (measured here: the same 512 x 512
/// matmul chain at 190-260 and at 330-400 GFLOP/s on two threads, a mode
/// lasting for whole calibrations), and a class's rate is the difference of
/// two models' times (measurePair): models timed back to back each in its own
/// mode gave a 37.7 MFLOP product 652 GFLOP/s, more than the cores' peak.
/// Rounds spread each model's jobs over the whole calibration, and the
/// fastest round of every model is the machine's fast mode, the same for
/// each; bench/prediction_error.py times the models it predicts the same way.
/// The first, cold run of a job (page faults of fresh buffers, lazy symbol
/// binding, the OpenMP runtime's start) never counts: a job of one run
/// measured the 512 x 512 matmul chain 20x slower than warm steps.
class MicroTimer {
public:
  MicroTimer(MLIRContext &ctx, StringRef dir, const Timing &timing,
             int64_t ranks)
      : ctx(ctx), dir(dir.str()), timing(timing), ranks(ranks) {}

  /// Compiles `micro` (replicated on the calibrated grid's ranks) under a
  /// directory `name` of its own; returns its handle.
  FailureOr<unsigned> add(const MicroModel &micro, StringRef name);

  /// Runs the rounds over every model added.
  LogicalResult run(ProgressLog &progress);

  const TimedModel &get(unsigned handle) const { return models[handle]; }
  unsigned getNumModels() const { return models.size(); }
  /// The slowest round over the fastest, median and largest over the models.
  double getMedianSpread() const;
  double getMaxSpread() const;

private:
  MLIRContext &ctx;
  std::string dir;
  Timing timing;
  int64_t ranks;
  std::vector<TimedModel> models;
};

FailureOr<unsigned> MicroTimer::add(const MicroModel &micro, StringRef name) {
  std::string modelDir = joinPath(dir, name);
  TimedModel result;
  ImportedModel model;
  model.module = parseSourceString<ModuleOp>(micro.source, &ctx);
  if (!model.module) {
    emitDriverError(ctx) << "cannot build the calibration model of class '"
                         << stringifyOpClass(micro.opClass) << "'";
    return failure();
  }
  SmallVector<WeightStore::Weight> weights;
  for (const auto &[weightName, shape] : micro.weightShapes)
    weights.push_back({weightName, DType::F32, shape});
  model.weights = std::make_unique<CalibrationWeights>(std::move(weights));
  model.sha256 = computeSha256(micro.source);
  for (size_t i = 0; i < micro.inputShapes.size(); ++i)
    model.inputNames.push_back("x" + std::to_string(i));
  for (unsigned i = 0; i < micro.numResults; ++i)
    model.outputNames.push_back("y" + std::to_string(i));
  FailureOr<std::pair<OpWork, unsigned>> work =
      getModelWork(ctx, *model.module, micro.opClass);
  if (failed(work))
    return failure();
  result.work = work->first;
  result.numOps = work->second;

  CompileOptions options;
  // calibrate reports its own steps, not each micro model's stages.
  options.quiet = true;
  // Every rank runs the whole model (replicated: no communication), each
  // reading its own copy of the weights.
  options.grid = std::to_string(ranks);
  options.plan = "replicated";
  options.outDir = joinPath(modelDir, "program");
  if (failed(compileModel(ctx, model, options)))
    return failure();

  // Inputs of getCalibrationValues.
  std::string inDir = joinPath(modelDir, "in");
  for (auto [index, shape] : llvm::enumerate(micro.inputShapes)) {
    int64_t count = 1;
    for (int64_t size : shape)
      count *= size;
    std::vector<float> values = getCalibrationValues(count);
    ArrayRef<char> bytes(reinterpret_cast<const char *>(values.data()),
                         values.size() * sizeof(float));
    if (failed(writeFileBytes(
            ctx, joinPath(inDir, "input_" + std::to_string(index) + ".bin"),
            bytes)))
      return failure();
  }
  result.args = {"--program",
                 joinPath(options.outDir, "program.so"),
                 "--grid",
                 std::to_string(ranks),
                 "--weights",
                 joinPath(options.outDir, "weights"),
                 "--inputs",
                 inDir,
                 "--outputs",
                 joinPath(modelDir, "out"),
                 "--profile",
                 "--repeats",
                 std::to_string(timing.repeats)};
  models.push_back(std::move(result));
  return static_cast<unsigned>(models.size() - 1);
}

LogicalResult MicroTimer::run(ProgressLog &progress) {
  unsigned rounds = std::max(1u, timing.rounds);
  for (unsigned round = 0; round < rounds; ++round) {
    progress.step("calibrate: round " + Twine(round + 1) + " of " +
                  Twine(rounds) + " over " + Twine(models.size()) +
                  " micro models");
    for (TimedModel &model : models) {
      FailureOr<std::string> out =
          launchRunner(ctx, model.args, ranks, dir, kJobTimeoutSeconds);
      if (failed(out))
        return failure();
      FailureOr<double> seconds = parseStepTime(ctx, *out);
      if (failed(seconds))
        return failure();
      model.roundSeconds.push_back(*seconds);
    }
  }
  for (TimedModel &model : models)
    model.seconds = *llvm::min_element(model.roundSeconds);
  return success();
}

/// Each timed model's slowest round over its fastest, sorted.
static SmallVector<double> getSpreads(ArrayRef<TimedModel> models) {
  SmallVector<double> spreads;
  for (const TimedModel &model : models)
    if (!model.roundSeconds.empty())
      spreads.push_back(*llvm::max_element(model.roundSeconds) /
                        *llvm::min_element(model.roundSeconds));
  llvm::sort(spreads);
  return spreads;
}

double MicroTimer::getMedianSpread() const {
  SmallVector<double> spreads = getSpreads(models);
  return spreads.empty() ? 1.0 : spreads[spreads.size() / 2];
}

double MicroTimer::getMaxSpread() const {
  SmallVector<double> spreads = getSpreads(models);
  return spreads.empty() ? 1.0 : spreads.back();
}

/// Two micro models of one class: `small` and `large` (the same ops, twice
/// as many).
struct MicroPair {
  OpClass opClass;
  unsigned small = 0;
  unsigned large = 0;
};

/// Compiles the two models of a pair into `name`/small and `name`/large.
FailureOr<MicroPair> addPair(MicroTimer &timer, OpClass c,
                             const MicroModel &smallModel,
                             const MicroModel &largeModel, StringRef name) {
  FailureOr<unsigned> small =
      timer.add(smallModel, (Twine(name) + "/small").str());
  if (failed(small))
    return failure();
  FailureOr<unsigned> large =
      timer.add(largeModel, (Twine(name) + "/large").str());
  if (failed(large))
    return failure();
  return MicroPair{c, *small, *large};
}

/// Prices the ops the larger model of a timed pair adds: the difference
/// leaves out reading the inputs and writing the output. When noise on a
/// busy machine swallows the difference, the larger model's time (an upper
/// bound) prices all of its ops.
ClassResult getPairResult(const MicroTimer &timer, const MicroPair &pair) {
  const TimedModel &small = timer.get(pair.small);
  const TimedModel &large = timer.get(pair.large);
  ClassResult result;
  result.opClass = pair.opClass;
  double delta = large.seconds - small.seconds;
  if (delta > 0.1 * large.seconds) {
    result.numOps = large.numOps - small.numOps;
    result.work.flops = large.work.flops - small.work.flops;
    result.work.bytes = large.work.bytes - small.work.bytes;
    result.work.streamsRows = large.work.streamsRows;
    result.seconds = delta;
  } else {
    result.numOps = large.numOps;
    result.work = large.work;
    result.seconds = large.seconds;
    result.differential = false;
  }
  return result;
}

/// Compiles a pair for every shape variant of class `c`.
FailureOr<SmallVector<MicroPair>> addClass(MicroTimer &timer, OpClass c,
                                           bool quick) {
  unsigned base = getBaseCount(c, quick);
  SmallVector<MicroPair> pairs;
  for (unsigned v = 0, e = getNumVariants(c); v < e; ++v) {
    FailureOr<MicroPair> pair =
        addPair(timer, c, buildMicroModel(c, quick, base, v),
                buildMicroModel(c, quick, 2 * base, v),
                (Twine(stringifyOpClass(c)) + "/v" + Twine(v)).str());
    if (failed(pair))
      return failure();
    pairs.push_back(*pair);
  }
  return pairs;
}

/// Every shape variant of a timed class; the per-op overhead is taken out of
/// each time (it is priced separately).
SmallVector<ClassResult> getClassResults(const MicroTimer &timer,
                                         ArrayRef<MicroPair> pairs,
                                         double opOverhead) {
  SmallVector<ClassResult> variants;
  for (const MicroPair &pair : pairs) {
    ClassResult r = getPairResult(timer, pair);
    r.seconds = std::max(r.seconds - r.numOps * opOverhead, 0.1 * r.seconds);
    variants.push_back(r);
  }
  return variants;
}

/// One class over its mix of shapes: as if each variant did the same work
/// (a model spends comparable FLOPs at each scale, as a CNN's stages do), so
/// the class rate is the harmonic mean of the variants' rates, not a rate
/// dominated by the largest (and fastest) shape. Bytes follow the same
/// weighting.
ClassResult sumVariants(ArrayRef<ClassResult> variants) {
  ClassResult total;
  total.opClass = variants.front().opClass;
  double flops = 0;
  for (const ClassResult &r : variants)
    flops = std::max(flops, r.work.flops > 0 ? r.work.flops : r.work.bytes);
  for (const ClassResult &r : variants) {
    double size = r.work.flops > 0 ? r.work.flops : r.work.bytes;
    double scale = size > 0 ? flops / size : 1;
    total.numOps += r.numOps;
    total.work.flops += r.work.flops * scale;
    total.work.bytes += r.work.bytes * scale;
    total.seconds += r.seconds * scale;
    total.differential &= r.differential;
  }
  return total;
}

/// The fit of a class's time per op (fitOpTime) over its variants: the
/// contractions' time is a fixed part per op (packing, the thread team's fork
/// and join, partial register tiles) plus their FLOPs at a rate; one rate
/// alone priced a transformer's large products at the rate of the batched
/// attention products. Nullopt for the other classes, and where the shapes'
/// sizes do not separate the two terms.
std::optional<OpTimeFit> fitClassTime(OpClass c,
                                      ArrayRef<ClassResult> variants) {
  if (c != OpClass::MatMul && c != OpClass::Conv && c != OpClass::DepthwiseConv)
    return std::nullopt;
  SmallVector<OpTimeSample> samples;
  for (const ClassResult &r : variants) {
    if (r.numOps == 0)
      return std::nullopt;
    samples.push_back({r.work.flops / r.numOps, r.seconds / r.numOps});
  }
  return fitOpTime(samples);
}

/// Seconds per op beyond its loop nest: the differential time of a chain of
/// tiny adds (a pair of buildOverheadModel).
double getOpOverhead(const MicroTimer &timer, const MicroPair &pair) {
  ClassResult r = getPairResult(timer, pair);
  return r.differential ? r.seconds / r.numOps : 0.0;
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

/// One timed collective of the bench.
struct CollectiveSample {
  std::string kind;
  int64_t groupSize = 1;
  double bytes = 0;
  double seconds = 0;
};

/// Messages and bytes each device sends in one collective (ring
/// algorithms, as CostModel.h prices them; the point-to-point exchange sends
/// its whole buffer in one message).
std::pair<double, double> getRingVolume(const CollectiveSample &sample) {
  double n = static_cast<double>(sample.groupSize);
  if (sample.kind == "all_reduce")
    return {2 * (n - 1), 2 * (n - 1) / n * sample.bytes};
  if (sample.kind == "sendrecv")
    return {1, sample.bytes};
  return {n - 1, (n - 1) / n * sample.bytes};
}

/// The least-squares fit of one axis.
struct AxisFit {
  AxisLink link;
  size_t numSamples = 0;
  /// Root mean square of the relative residuals.
  double rmsRelativeError = 0;
};

/// Fits seconds = latency * messages + bytes / bandwidth over `samples`,
/// weighting each by 1 / seconds (the sizes span orders of magnitude: an
/// unweighted fit would ignore the small messages that fix the latency).
/// The latency is clamped at 0.
AxisFit fitAxis(ArrayRef<CollectiveSample> samples) {
  SmallVector<TwoTermSample> terms;
  for (const CollectiveSample &s : samples) {
    auto [messages, volume] = getRingVolume(s);
    terms.push_back({messages, volume, s.seconds});
  }
  TwoTermFit fit = fitTwoTermRelative(terms);
  AxisFit axis;
  axis.numSamples = samples.size();
  axis.link.latency = fit.firstCoefficient;
  axis.link.bandwidth =
      fit.secondCoefficient > 0 ? 1 / fit.secondCoefficient : 0;
  axis.rmsRelativeError = fit.rmsRelativeError;
  return axis;
}

/// Reads the bench's JSON: the samples of each axis (by axis number).
FailureOr<std::map<int64_t, SmallVector<CollectiveSample>>>
readBench(MLIRContext &ctx, StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer) {
    emitDriverError(ctx) << "the collective bench wrote no '" << path
                         << "': " << buffer.getError().message();
    return failure();
  }
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse((*buffer)->getBuffer());
  if (!json) {
    emitDriverError(ctx) << "invalid collective bench output '" << path
                         << "': " << llvm::toString(json.takeError());
    return failure();
  }
  std::map<int64_t, SmallVector<CollectiveSample>> axes;
  const llvm::json::Object *root = json->getAsObject();
  const llvm::json::Object *byAxis = root ? root->getObject("axes") : nullptr;
  if (!byAxis) {
    emitDriverError(ctx) << "collective bench output '" << path
                         << "' has no 'axes' object";
    return failure();
  }
  for (const auto &[key, value] : *byAxis) {
    int64_t axis = 0;
    const llvm::json::Array *entries = value.getAsArray();
    if (StringRef(key).getAsInteger(10, axis) || !entries) {
      emitDriverError(ctx) << "collective bench output '" << path
                           << "' has a malformed axis '" << StringRef(key)
                           << "'";
      return failure();
    }
    for (const llvm::json::Value &entry : *entries) {
      const llvm::json::Object *object = entry.getAsObject();
      CollectiveSample sample;
      std::optional<StringRef> kind =
          object ? object->getString("kind") : std::nullopt;
      std::optional<int64_t> group =
          object ? object->getInteger("group_size") : std::nullopt;
      std::optional<double> bytes =
          object ? object->getNumber("bytes") : std::nullopt;
      std::optional<double> seconds =
          object ? object->getNumber("seconds") : std::nullopt;
      if (!kind || !group || !bytes || !seconds) {
        emitDriverError(ctx) << "collective bench output '" << path
                             << "' has a malformed entry on axis " << axis;
        return failure();
      }
      if (*seconds <= 0)
        continue;
      sample.kind = kind->str();
      sample.groupSize = *group;
      sample.bytes = *bytes;
      sample.seconds = *seconds;
      axes[axis].push_back(std::move(sample));
    }
  }
  return axes;
}

//===----------------------------------------------------------------------===//
// Machine
//===----------------------------------------------------------------------===//

/// MemTotal of /proc/meminfo in bytes, or 0.
int64_t readMemTotal() {
  auto buffer = llvm::MemoryBuffer::getFileAsStream("/proc/meminfo");
  if (!buffer)
    return 0;
  SmallVector<StringRef> lines;
  (*buffer)->getBuffer().split(lines, '\n');
  for (StringRef line : lines) {
    if (!line.consume_front("MemTotal:"))
      continue;
    line = line.trim();
    int64_t kib = 0;
    if (line.consume_back("kB") && !line.trim().getAsInteger(10, kib))
      return kib * 1024;
  }
  return 0;
}

/// The size in bytes of one core's cache of `level` (sysfs), or 0.
int64_t readCacheBytes(unsigned level) {
  for (unsigned index = 0; index < 8; ++index) {
    std::string dir =
        "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    auto levelText = llvm::MemoryBuffer::getFileAsStream(dir + "/level");
    auto sizeText = llvm::MemoryBuffer::getFileAsStream(dir + "/size");
    if (!levelText || !sizeText)
      break;
    unsigned found = 0;
    if ((*levelText)->getBuffer().trim().getAsInteger(10, found) ||
        found != level)
      continue;
    StringRef size = (*sizeText)->getBuffer().trim();
    int64_t scale = 1;
    if (size.consume_back("K"))
      scale = 1024;
    else if (size.consume_back("M"))
      scale = 1024 * 1024;
    int64_t value = 0;
    if (size.getAsInteger(10, value) || value <= 0)
      return 0;
    return value * scale;
  }
  return 0;
}

unsigned getNumCores() {
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (online > 0)
    return static_cast<unsigned>(online);
  return std::max(1u, std::thread::hardware_concurrency());
}

std::string formatRate(double value) {
  return llvm::formatv("{0:f2}", value / 1e9).str();
}

} // namespace

//===----------------------------------------------------------------------===//
// autopar calibrate
//===----------------------------------------------------------------------===//

int driver::calibrateCommand(int argc, char **argv) {
  static llvm::cl::OptionCategory category("autopar calibrate options");
  static llvm::cl::opt<std::string> outPath(
      "o",
      llvm::cl::desc("where to write the cluster description (default: "
                     "$AUTOPAR_CLUSTER, else "
                     "$XDG_CONFIG_HOME/autopar/cluster.json, else "
                     "~/.config/autopar/cluster.json)"),
      llvm::cl::value_desc("cluster.json"), llvm::cl::cat(category));
  static llvm::cl::opt<std::string> grid(
      "grid",
      llvm::cl::desc("grid of local ranks the collectives are timed on: N or "
                     "AxB (default: the number of cores)"),
      llvm::cl::value_desc("shape"), llvm::cl::cat(category));
  static llvm::cl::opt<unsigned> rounds(
      "rounds",
      llvm::cl::desc("rounds of runner jobs over the micro models; each "
                     "model's fastest round counts (default 6, 1 with "
                     "--quick)"),
      llvm::cl::value_desc("n"), llvm::cl::cat(category));
  static llvm::cl::opt<bool> quick(
      "quick",
      llvm::cl::desc("smaller models and messages, fewer repeats (seconds "
                     "instead of a minute; for tests)"),
      llvm::cl::cat(category));

  if (std::optional<int> exit = parseCommandLine(
          argc, argv, "calibrate",
          "measure this machine and write its cluster description\n\n"
          "  autopar calibrate [-o cluster.json] [--grid N] [--rounds N] "
          "[--quick]\n\n"
          "Times micro models of every op class on one device and the "
          "runtime's collectives on a grid of local ranks, fits each grid "
          "axis's latency and bandwidth, and writes the JSON that "
          "planning prices plans against.\n",
          category, kErrorExitCode))
    return *exit;

  if (rounds.getNumOccurrences() && rounds == 0) {
    printError("--rounds must be at least 1, got 0");
    return kErrorExitCode;
  }
  unsigned cores = getNumCores();
  std::string gridText = grid.empty() ? std::to_string(cores) : grid.getValue();
  std::string error;
  FailureOr<SmallVector<int64_t>> gridShape = parseGridShape(gridText, error);
  if (failed(gridShape)) {
    printError(error);
    return kErrorExitCode;
  }
  int64_t ranks = 1;
  for (int64_t size : *gridShape)
    ranks *= size;
  if (ranks > static_cast<int64_t>(cores)) {
    printError("calibration needs " + Twine(ranks) +
               " ranks, this machine has " + Twine(cores) + " cores");
    printNote("ranks sharing a core measure the scheduler, not the links; "
              "pass a smaller --grid");
    return kErrorExitCode;
  }
  std::string path = outPath.empty() ? getDefaultClusterPath() : outPath;

  DriverContext context;
  MLIRContext &ctx = context.get();
  TempDirectory workDir;
  if (failed(workDir.create(ctx, "autopar-calibrate")))
    return kErrorExitCode;
  auto startTime = std::chrono::steady_clock::now();

  // Compute: every micro model is compiled first, then all are timed in
  // rounds (MicroTimer).
  Timing timing{quick ? 5u : 21u, rounds.getNumOccurrences()
                                      ? static_cast<unsigned>(rounds)
                                      : (quick ? 1u : 6u)};
  ProgressLog progress;
  progress.step("calibrate: compiling the per-op overhead's micro models for " +
                Twine(ranks) + " rank(s)");
  // Every device of the calibrated grid runs the micro models at once (one
  // rank each, no communication): devices sharing this machine share its
  // memory bandwidth and caches, and are priced as they will run.
  MicroTimer timer(ctx, workDir.get(), timing, ranks);
  unsigned overheadBase = quick ? 16 : 64;
  FailureOr<MicroPair> overheadPair =
      addPair(timer, OpClass::Elementwise, buildOverheadModel(overheadBase),
              buildOverheadModel(2 * overheadBase), "overhead");
  if (failed(overheadPair))
    return kErrorExitCode;
  // The fixed cost of a step: a program of one add on 64 floats, less that
  // add's overhead.
  FailureOr<unsigned> minimal = timer.add(buildUnfusedAdds(64, 1), "step");
  if (failed(minimal))
    return kErrorExitCode;
  SmallVector<SmallVector<MicroPair>> classPairs;
  for (unsigned index = 0; index < kNumOpClasses; ++index) {
    auto c = static_cast<OpClass>(index);
    progress.step("calibrate: compiling " + stringifyOpClass(c) +
                  " micro models (" + Twine(index + 1) + " of " +
                  Twine(kNumOpClasses) + ")");
    FailureOr<SmallVector<MicroPair>> pairs = addClass(timer, c, quick);
    if (failed(pairs))
      return kErrorExitCode;
    classPairs.push_back(std::move(*pairs));
  }
  // The cache: adds whose three tensors take a third of a device's private
  // (level 2) caches, each a loop of its own, priced like the streaming
  // adds. Recorded only when the rate beats the memory's.
  std::optional<MicroPair> cachePair;
  int64_t coresPerDevice = std::max<int64_t>(1, cores / ranks);
  int64_t cacheBytes = readCacheBytes(2) * coresPerDevice;
  if (cacheBytes > 0) {
    int64_t n = std::max<int64_t>(64, cacheBytes / (3 * 3 * 4) / 64 * 64);
    unsigned base = quick ? 8 : 32;
    FailureOr<MicroPair> pair =
        addPair(timer, OpClass::Elementwise, buildUnfusedAdds(n, base),
                buildUnfusedAdds(n, 2 * base), "cache");
    if (failed(pair))
      return kErrorExitCode;
    cachePair = *pair;
  }
  if (failed(timer.run(progress)))
    return kErrorExitCode;

  double opOverhead = getOpOverhead(timer, *overheadPair);
  double stepOverhead = std::max(0.0, timer.get(*minimal).seconds - opOverhead);
  SmallVector<ClassResult> classes, elementwise;
  SmallVector<SmallVector<ClassResult>> classVariants;
  SmallVector<std::optional<OpTimeFit>> classFits;
  for (ArrayRef<MicroPair> pairs : classPairs) {
    SmallVector<ClassResult> variants =
        getClassResults(timer, pairs, opOverhead);
    classes.push_back(sumVariants(variants));
    if (pairs.front().opClass == OpClass::Elementwise)
      elementwise = variants;
    classVariants.push_back(std::move(variants));
  }

  ClusterSpec cluster;
  cluster.memoryBytes = readMemTotal();
  if (cluster.memoryBytes <= 0) {
    printError("cannot read MemTotal from /proc/meminfo");
    return kErrorExitCode;
  }
  cluster.opOverhead = opOverhead;
  cluster.stepOverhead = stepOverhead;
  for (auto [result, variants] : llvm::zip(classes, classVariants)) {
    auto index = static_cast<unsigned>(result.opClass);
    if (result.work.flops > 0)
      cluster.classFlops[index] = result.work.flops / result.seconds;
    std::optional<OpTimeFit> fit = fitClassTime(result.opClass, variants);
    if (fit) {
      cluster.classFlops[index] = fit->rate;
      cluster.classOpSeconds[index] = fit->fixedSeconds;
    }
    classFits.push_back(fit);
    // Roofline: the device's bandwidth from streaming adds, the elementwise
    // FLOP rate from a transcendental; data movement gets its own bandwidth
    // (a transpose streams at a fraction of an add's rate).
    if (result.opClass == OpClass::Elementwise) {
      const ClassResult &stream = elementwise.front();
      const ClassResult &math = elementwise.back();
      cluster.memoryBandwidth = stream.work.bytes / stream.seconds;
      cluster.classFlops[index] = math.work.flops / math.seconds;
    }
    // Data movement's own bandwidth is that of the variants moving single
    // elements (transposes of the innermost dimension): ops moving whole
    // rows are priced at the elementwise bandwidth (OpWork::streamsRows).
    if (result.opClass == OpClass::DataMovement) {
      double bytes = 0, seconds = 0;
      for (const ClassResult &variant : variants) {
        if (variant.work.streamsRows)
          continue;
        bytes += variant.work.bytes;
        seconds += variant.seconds;
      }
      if (bytes > 0 && seconds > 0)
        cluster.classBandwidth[index] = bytes / seconds;
    }
  }
  cluster.flops = cluster.classFlops[static_cast<unsigned>(OpClass::MatMul)];

  std::optional<ClassResult> cached;
  if (cachePair) {
    ClassResult r = getPairResult(timer, *cachePair);
    r.seconds =
        std::max(r.seconds - r.numOps * cluster.opOverhead, 0.1 * r.seconds);
    double bandwidth = r.work.bytes / r.seconds;
    if (r.differential && bandwidth > cluster.memoryBandwidth) {
      cluster.cacheBytes = cacheBytes;
      cluster.cacheBandwidth = bandwidth;
    }
    cached = r;
  }

  // Communication: the runtime's collectives on a grid of local ranks.
  std::map<int64_t, SmallVector<CollectiveSample>> samples;
  if (ranks > 1) {
    progress.step("calibrate: collectives on " + Twine(ranks) + " ranks");
    std::string benchPath = joinPath(workDir.get(), "bench.json");
    std::vector<std::string> args = {
        "--bench-collectives",
        "--grid",
        formatGridShape(*gridShape),
        "--sizes",
        quick ? "1024,65536,524288" : "1024,16384,262144,2097152,8388608",
        "--repeats",
        quick ? "3" : "7",
        "--out",
        benchPath};
    FailureOr<std::string> out =
        launchRunner(ctx, args, ranks, workDir.get(), kJobTimeoutSeconds);
    if (failed(out))
      return kErrorExitCode;
    FailureOr<std::map<int64_t, SmallVector<CollectiveSample>>> bench =
        readBench(ctx, benchPath);
    if (failed(bench))
      return kErrorExitCode;
    samples = std::move(*bench);
  }
  SmallVector<std::optional<AxisFit>> fits;
  for (auto [axis, size] : llvm::enumerate(*gridShape)) {
    auto it = samples.find(static_cast<int64_t>(axis));
    if (size <= 1 || it == samples.end() || it->second.empty()) {
      // No link to measure: moving data is a local copy.
      cluster.axes.push_back({cluster.memoryBandwidth, 0});
      fits.push_back(std::nullopt);
      continue;
    }
    AxisFit fit = fitAxis(it->second);
    if (fit.link.bandwidth <= 0) {
      printError("the collective bench of axis " + Twine(axis) +
                 " gave no usable bandwidth");
      return kErrorExitCode;
    }
    cluster.axes.push_back(fit.link);
    fits.push_back(fit);
  }

  // The description, with how it was measured (ignored by the parser).
  llvm::json::Value json = clusterToJson(cluster);
  std::string note =
      ranks > 1
          ? "collectives timed on " + std::to_string(ranks) +
                " local ranks; every rank shares this machine's memory"
          : "one device: the axis has no link, its bandwidth is the memory "
            "bandwidth and its latency 0";
  json.getAsObject()->try_emplace(
      "calibration",
      llvm::json::Object{{"grid", formatGridShape(*gridShape)},
                         {"cores", static_cast<int64_t>(cores)},
                         {"quick", bool(quick)},
                         {"rounds", static_cast<int64_t>(timing.rounds)},
                         {"autopar_version", getAutoparVersion()},
                         {"note", note}});
  std::string text = llvm::formatv("{0:2}", json).str() + "\n";
  if (failed(
          writeFileBytes(ctx, path, ArrayRef<char>(text.data(), text.size()))))
    return kErrorExitCode;

  // What was measured.
  llvm::raw_ostream &os = llvm::outs();
  os << "calibrated this machine (" << cores << " core"
     << (cores == 1 ? "" : "s") << ", grid " << formatGridShape(*gridShape)
     << ")\n";
  os << llvm::formatv("  {0,-14}{1,5}{2,12}{3,12}{4,10}{5,10}\n", "class",
                      "ops", "MFLOP", "seconds", "GFLOP/s", "GB/s");
  for (const ClassResult &result : classes)
    os << llvm::formatv("  {0,-14}{1,5}{2,12:f2}{3,12:e3}{4,10}{5,10}{6}\n",
                        stringifyOpClass(result.opClass), result.numOps,
                        result.work.flops / 1e6, result.seconds,
                        result.work.flops > 0
                            ? formatRate(result.work.flops / result.seconds)
                            : std::string("-"),
                        formatRate(result.work.bytes / result.seconds),
                        result.differential ? "" : "  (whole step)");
  os << "  shapes (per op):\n";
  for (auto [result, variants, fit] :
       llvm::zip(classes, classVariants, classFits)) {
    if (variants.size() < 2 || result.work.flops <= 0)
      continue;
    os << "    " << stringifyOpClass(result.opClass) << ":";
    for (const ClassResult &v : variants)
      if (v.numOps > 0 && v.seconds > 0)
        os << llvm::formatv(" {0:f1} MFLOP at {1},",
                            v.work.flops / v.numOps / 1e6,
                            formatRate(v.work.flops / v.seconds));
    if (fit)
      os << llvm::formatv(" fit: {0:e3} s + FLOPs / {1} GFLOP/s\n",
                          fit->fixedSeconds, formatRate(fit->rate));
    else
      os << " harmonic mean " << formatRate(result.work.flops / result.seconds)
         << " GFLOP/s\n";
  }
  for (auto [result, variants] : llvm::zip(classes, classVariants)) {
    if (result.opClass != OpClass::DataMovement)
      continue;
    os << "    data_movement:";
    for (const ClassResult &v : variants)
      if (v.seconds > 0)
        os << llvm::formatv(" {0} at {1} GB/s,",
                            v.work.streamsRows ? "rows" : "elements",
                            formatRate(v.work.bytes / v.seconds));
    os << " the class's bandwidth from the elements (rows are priced at the "
          "elementwise bandwidth)\n";
  }
  if (timing.rounds > 1)
    os << llvm::formatv("  rounds: {0}; a model's slowest round was "
                        "{1:f2}x its fastest (median over the {2} models), "
                        "at most {3:f2}x\n",
                        timing.rounds, timer.getMedianSpread(),
                        timer.getNumModels(), timer.getMaxSpread());
  os << llvm::formatv("  per-op overhead {0:e3} s, per-step {1:e3} s\n",
                      cluster.opOverhead, cluster.stepOverhead);
  if (cached)
    os << llvm::formatv("  cache: adds of {0} KiB at {1} GB/s{2}\n",
                        readCacheBytes(2) * coresPerDevice / 1024,
                        formatRate(cached->work.bytes / cached->seconds),
                        cluster.cacheBytes > 0
                            ? ""
                            : " (not above the memory's: not recorded)");
  os << "  peak FLOP rate (matmul) " << formatRate(cluster.flops)
     << " GFLOP/s, memory bandwidth (elementwise) "
     << formatRate(cluster.memoryBandwidth) << " GB/s, memory "
     << llvm::formatv("{0:f1}", cluster.memoryBytes / double(1 << 30))
     << " GiB\n";
  for (auto [axis, fit] : llvm::enumerate(fits)) {
    const AxisLink &link = cluster.axes[axis];
    os << "  axis " << axis << " (" << (*gridShape)[axis] << " device"
       << ((*gridShape)[axis] == 1 ? "" : "s") << "): ";
    if (!fit) {
      os << "no link, bandwidth = memory bandwidth, latency 0\n";
      continue;
    }
    os << llvm::formatv("latency {0:e3} s, bandwidth {1} GB/s (fit of {2} "
                        "measurements, rms relative error {3:f1}%)\n",
                        link.latency, formatRate(link.bandwidth),
                        fit->numSamples, 100 * fit->rmsRelativeError);
  }
  double elapsed = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - startTime)
                       .count();
  os << "wrote '" << path << "' in " << llvm::formatv("{0:f1}", elapsed)
     << " s\n";
  os.flush();
  if (ranks == 1)
    printNote("calibrated on one rank: " + note);
  return 0;
}
