//===- Plan.cpp - `autopar plan` and the planning stage of compile --------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// `autopar plan MODEL.onnx --grid SHAPE [--cluster FILE] [--mode M]
// [--batch N] -o plan.json` runs only the planner: the model's weights need
// no data (shapes suffice), nothing is generated. `autopar compile --plan
// auto` shares planModule() and then partitions.
//
//===----------------------------------------------------------------------===//

#include "DriverInternal.h"

#include "autopar/Dialect/Autopar/IR/ShardLayout.h"
#include "autopar/Pipelines/Pipelines.h"
#include "autopar/Transforms/Autodiff/Trainable.h"
#include "autopar/Transforms/Passes.h"
#include "autopar/Transforms/Planning/AutoPlan.h"
#include "autopar/Transforms/Planning/PipelinePlan.h"
#include "autopar/Transforms/Planning/PlanReport.h"
#include "autopar/Transforms/Planning/TrainingLoss.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <deque>
#include <limits>
#include <set>

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::driver;
namespace json = llvm::json;

FailureOr<std::optional<ClusterSpec>>
driver::resolveCluster(MLIRContext &ctx, StringRef path, ArrayRef<int64_t> grid,
                       bool required) {
  std::string file = path.str();
  bool explicitPath = !file.empty();
  if (!explicitPath) {
    file = getDefaultClusterPath();
    if (!llvm::sys::fs::exists(file)) {
      if (!required)
        return std::optional<ClusterSpec>();
      emitDriverError(ctx)
          << "no cluster description: pass --cluster FILE.json or run "
             "'autopar calibrate' once (it writes "
          << file << ")";
      return failure();
    }
  }
  std::string error;
  FailureOr<ClusterSpec> spec = readClusterFile(file, grid, error);
  if (failed(spec)) {
    // A calibrated description for another grid only disables predictions
    // where none are needed.
    if (!explicitPath && !required)
      return std::optional<ClusterSpec>();
    emitDriverError(ctx) << error;
    if (!explicitPath)
      printNote("that is the calibrated description of this machine; pass "
                "--cluster FILE.json for another grid, or recalibrate with "
                "'autopar calibrate --grid " +
                formatGridShape(grid) + "'");
    return failure();
  }
  return std::optional<ClusterSpec>(std::move(*spec));
}

FailureOr<FixedConfig> driver::parseFixedConfig(StringRef text,
                                                std::string &error) {
  FixedConfig config;
  config.text = text.str();
  SmallVector<StringRef> entries;
  text.split(entries, ',');
  std::set<std::string> seen;
  auto positive = [&](StringRef key, StringRef value,
                      int64_t &out) -> LogicalResult {
    unsigned long long v;
    if (value.getAsInteger(10, v) || v == 0) {
      error = "--fixed: " + key.str() + " must be a positive integer, got '" +
              value.str() + "'";
      return failure();
    }
    out = int64_t(v);
    return success();
  };
  for (StringRef entry : entries) {
    auto [key, value] = entry.trim().split('=');
    key = key.trim();
    value = value.trim();
    if (!entry.contains('=')) {
      error = "--fixed: expected key=value, got '" + entry.str() + "'";
      return failure();
    }
    if (!seen.insert(key.str()).second) {
      error = "--fixed: '" + key.str() + "' given twice";
      return failure();
    }
    if (key == "tp") {
      if (failed(positive(key, value, config.tp)))
        return failure();
    } else if (key == "pp") {
      if (failed(positive(key, value, config.pp)))
        return failure();
    } else if (key == "dp") {
      if (failed(positive(key, value, config.dp)))
        return failure();
    } else if (key == "micro_batch") {
      if (failed(positive(key, value, config.microBatch)))
        return failure();
    } else if (key == "recompute") {
      std::optional<RecomputeSpec> spec = parseRecomputeSpec(value);
      if (!spec) {
        error = "--fixed: recompute must be none, selective, full or full:K, "
                "got '" +
                value.str() + "'";
        return failure();
      }
      config.recompute = *spec;
    } else if (key == "schedule") {
      auto [kind, chunks] = value.split(':');
      if (kind == "1f1b" && !value.contains(':')) {
        config.schedule = "1f1b";
      } else if (kind == "zb" && !value.contains(':')) {
        config.schedule = "zb";
      } else if (kind == "interleaved" && value.contains(':')) {
        config.schedule = "interleaved";
        if (failed(positive("schedule interleaved:V", chunks, config.chunks)))
          return failure();
      } else {
        error = "--fixed: schedule must be 1f1b, interleaved:V or zb, got '" +
                value.str() + "'";
        return failure();
      }
    } else {
      error = "--fixed: unknown key '" + key.str() +
              "' (expected tp, pp, dp, micro_batch, recompute, schedule)";
      return failure();
    }
  }
  for (StringRef key : {"tp", "pp", "dp", "micro_batch"})
    if (!seen.count(key.str())) {
      error = "--fixed: missing " + key.str() +
              " (tp=T,pp=P,dp=D,micro_batch=b[,recompute=..][,schedule=..])";
      return failure();
    }
  return config;
}

FailureOr<std::pair<SmallVector<int64_t>, std::optional<ClusterSpec>>>
driver::getFixedGridView(const FixedConfig &config, ArrayRef<int64_t> grid,
                         const std::optional<ClusterSpec> &cluster,
                         std::string &error) {
  int64_t n = 1;
  for (int64_t size : grid)
    n *= size;
  if (config.tp * config.pp * config.dp != n) {
    error = llvm::formatv("--fixed: tp*pp*dp = {0}*{1}*{2} = {3}, but the "
                          "grid {4} has {5} devices",
                          config.tp, config.pp, config.dp,
                          config.tp * config.pp * config.dp,
                          formatGridShape(grid), n)
                .str();
    return failure();
  }
  int64_t last = grid.back();
  if (config.tp > 1 && config.tp != n && last % config.tp != 0) {
    error = llvm::formatv("--fixed: tp={0} must divide the last grid axis "
                          "({1} devices): tensor parallelism takes the "
                          "innermost tp devices of it",
                          config.tp, last)
                .str();
    return failure();
  }
  SmallVector<int64_t> view;
  if (config.tp == 1)
    view.assign(grid.begin(), grid.end());
  else if (config.tp == n)
    view = {n};
  else
    view = {n / config.tp, config.tp};
  std::optional<ClusterSpec> viewCluster = cluster;
  if (cluster && view != SmallVector<int64_t>(grid)) {
    // The tensor axis runs on the last axis's links; the data axis spans
    // every other axis and the rest of the last one, at its slowest link.
    AxisLink dataLink{std::numeric_limits<double>::infinity(), 0};
    for (auto [axis, size] : llvm::enumerate(grid)) {
      bool spans = axis + 1 < grid.size() ? size > 1 : size / config.tp > 1;
      if (!spans)
        continue;
      dataLink.bandwidth =
          std::min(dataLink.bandwidth, cluster->axes[axis].bandwidth);
      dataLink.latency =
          std::max(dataLink.latency, cluster->axes[axis].latency);
    }
    viewCluster->axes.clear();
    if (view.size() == 2)
      viewCluster->axes.push_back(dataLink);
    viewCluster->axes.push_back(cluster->axes.back());
  }
  return std::make_pair(view, viewCluster);
}

/// The memory per device over program order: `[node, bytes]` per liveness
/// point.
/// Runs `fn` with the context's diagnostics captured: the first error's
/// message is stored in `error` (if it is still empty), nothing is printed.
template <typename Fn>
static auto withFirstError(MLIRContext &ctx, std::string &error, Fn &&fn) {
  ScopedDiagnosticHandler capture(&ctx, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error && error.empty())
      error = diag.str();
    return success();
  });
  return fn();
}

static json::Array memoryProfileJson(const PlanPrediction &p) {
  json::Array points;
  for (const auto &[node, bytes] : p.memoryProfile)
    points.push_back(json::Array{node, bytes});
  return points;
}

static json::Object predictionJson(const PlanPrediction &p) {
  json::Object o{{"step_time_s", p.stepTime},
                 {"compute_s", p.computeTime},
                 {"comm_s", p.commTime},
                 {"peak_memory_bytes", p.peakMemoryBytes},
                 {"peak_at", p.peakAt}};
  if (p.stepOverhead > 0)
    o["step_overhead_s"] = p.stepOverhead;
  return o;
}

/// plan.json's `baselines`: each baseline's prediction, whether it fits, or
/// why it cannot run.
static json::Object
baselinesJson(const std::map<std::string, PlanPrediction> &priced) {
  json::Object baselines;
  for (const auto &[name, p] : priced) {
    if (!p.valid) {
      baselines[name] = json::Object{
          {"valid", false}, {"reason", p.invalidReason}, {"fits", false}};
      continue;
    }
    json::Object b = predictionJson(p);
    b["fits"] = p.fits;
    b["valid"] = true;
    baselines[name] = std::move(b);
  }
  return baselines;
}

/// Prices the replicated, data and tensor plans on copies of `module`
/// (unannotated), each annotated by the plan pipeline users run. A baseline
/// that cannot run on this grid (a batch that does not divide over the
/// devices) is reported as such, not as an error. `splitOptimizer`: each is
/// priced after the distributed optimizer's split, as a compiled step runs
/// it.
static FailureOr<std::map<std::string, PlanPrediction>>
priceBaselines(MLIRContext &ctx, ModuleOp module,
               const AutoPlanOptions &options, bool splitOptimizer = false) {
  std::map<std::string, PlanPrediction> baselines;
  for (StringRef baseline : {"replicated", "data", "tensor"}) {
    OwningOpRef<ModuleOp> copy = module.clone();
    PassManager pm(&ctx, ModuleOp::getOperationName());
    PlanPipelineOptions pipeline;
    pipeline.grid = formatGridShape(options.gridShape);
    pipeline.plan = baseline.str();
    buildPlanPipeline(pm, pipeline);
    if (splitOptimizer)
      pm.addPass(createShardOptimizerStatePass());
    std::string firstError;
    LogicalResult ran =
        withFirstError(ctx, firstError, [&] { return pm.run(*copy); });
    PlanPrediction p;
    if (failed(ran)) {
      p.valid = false;
      p.fits = false;
      p.invalidReason =
          firstError.empty() ? "the plan cannot be built" : firstError;
      baselines[baseline.str()] = p;
      continue;
    }
    FailureOr<PlanPrediction> priced = predictAnnotatedPlan(*copy, options);
    if (failed(priced))
      return failure();
    baselines[baseline.str()] = *priced;
  }
  return baselines;
}

/// The planner's options for `autopar plan`'s flags.
static AutoPlanOptions
makePlanOptions(ArrayRef<int64_t> grid,
                const std::optional<ClusterSpec> &cluster, PlanMode mode,
                const PlanSearchOptions &search) {
  AutoPlanOptions options;
  options.gridShape.assign(grid.begin(), grid.end());
  options.mode = mode;
  options.foldRepeatedBlocks = search.fold;
  options.timeLimitSeconds = search.timeLimitSeconds;
  options.precision = search.precision;
  // `plan --mode training` counts the sharded state of a forward graph;
  // a compiled step's search prices autopar-shard-optimizer-state's split.
  options.shardOptimizerState =
      search.shardOptimizer || search.shardOptimizerUpdates;
  options.frozenWeights = search.frozenWeights;
  options.microbatches = search.microbatches;
  options.recompute = search.recompute;
  options.searchRecompute = search.searchRecompute;
  options.singleBlockStage = search.singleBlockStage;
  if (cluster)
    options.cluster = *cluster;
  return options;
}

LogicalResult driver::planModule(MLIRContext &ctx, ModuleOp module,
                                 ArrayRef<int64_t> grid, StringRef plan,
                                 const std::optional<ClusterSpec> &cluster,
                                 PlanMode mode, bool quiet, PlanMetadata &meta,
                                 const PlanSearchOptions &search) {
  meta.strategy = plan.str();
  meta.mode = stringifyPlanMode(mode).str();
  if (mode == PlanMode::Training)
    meta.extra["note"] = "training plans are priced, not executed, until "
                         "training steps can run";
  std::string gridText = formatGridShape(grid);
  bool sawError = false;
  ScopedDiagnosticHandler errorWatcher(&ctx, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error)
      sawError = true;
    return failure();
  });
  PassManager pm(&ctx, ModuleOp::getOperationName());
  AutoPlanOptions options = makePlanOptions(grid, cluster, mode, search);
  options.searchRecompute = search.searchRecompute && plan == "auto";
  if (search.precision != PlanPrecision::Model)
    meta.extra["precision"] = stringifyPlanPrecision(search.precision);
  if (search.shardOptimizer)
    meta.extra["optimizer"] = "sharded over each weight's replicas";
  if (plan == "auto") {
    assert(cluster && "automatic planning needs a cluster");
    options.progress = quiet ? nullptr : &llvm::errs();
    OwningOpRef<ModuleOp> pristine = module.clone();
    FailureOr<AutoPlanResult> result = planAutomatically(module, options);
    if (failed(result)) {
      if (!sawError)
        emitDriverError(ctx) << "planning failed";
      return failure();
    }
    // The baselines are priced with the recomputation the search chose.
    if (!quiet)
      llvm::errs() << "autopar: pricing the replicated, data and tensor "
                      "baselines\n";
    AutoPlanOptions baselineOptions = options;
    baselineOptions.searchRecompute = false;
    baselineOptions.recompute = result->predicted.recompute;
    FailureOr<std::map<std::string, PlanPrediction>> priced = priceBaselines(
        ctx, *pristine, baselineOptions, search.shardOptimizerUpdates);
    if (failed(priced)) {
      if (!sawError)
        emitDriverError(ctx) << "pricing the baselines failed";
      return failure();
    }
    meta.searchTimeSeconds = result->searchTimeSeconds;
    meta.extra["predicted"] = predictionJson(result->predicted);
    meta.extra["memory_profile"] = memoryProfileJson(result->predicted);
    meta.extra["baselines"] = baselinesJson(*priced);
    for (auto &kv : result->report)
      meta.extra[kv.first] = std::move(kv.second);
    meta.opDetails = std::move(result->opDetails);
    pm.addPass(createVerifyShardedPass());
  } else {
    PlanPipelineOptions pipeline;
    pipeline.grid = gridText;
    pipeline.plan = plan.str();
    buildPlanPipeline(pm, pipeline);
  }
  if (search.shardOptimizerUpdates) {
    pm.addPass(createShardOptimizerStatePass());
    pm.addPass(createVerifyShardedPass());
    meta.extra["optimizer"] =
        "each weight's optimizer state and update split over its replicas "
        "(autopar-shard-optimizer-state)";
  }
  if (failed(pm.run(module))) {
    if (!sawError)
      emitDriverError(ctx) << "the planning stage failed";
    return failure();
  }
  if ((plan != "auto" || search.shardOptimizerUpdates) && cluster) {
    FailureOr<PlanPrediction> p = predictAnnotatedPlan(module, options);
    if (failed(p))
      return failure();
    meta.extra["predicted"] = predictionJson(*p);
    meta.extra["memory_profile"] = memoryProfileJson(*p);
    if (mode == PlanMode::Training)
      meta.extra["recompute"] =
          json::Object{{"setting", stringifyRecomputeSpec(p->recompute)},
                       {"searched", false},
                       {"recompute_s", p->recomputeTime}};
  }
  if (cluster) {
    json::Value c = clusterToJson(*cluster);
    if (json::Object *o = c.getAsObject())
      (*o)["source"] = cluster->source;
    meta.extra["cluster"] = std::move(c);
  }
  return success();
}

/// Plans `module` as a pipeline of `config.stages` stages over `grid`:
/// each stage searched on its slab, or, with `fixed`, each stage given the
/// fixed configuration's data or tensor plan on its slab. The plan file
/// holds the stages, each with its own plan. `searched` is the pipeline a
/// stage-count search already found with these options (not searched again).
static LogicalResult planPipelineModule(
    MLIRContext &ctx, ModuleOp module, ArrayRef<int64_t> grid,
    const std::optional<ClusterSpec> &cluster, PlanMode mode, bool quiet,
    PlanMetadata &meta, const PlanSearchOptions &search,
    const PipelineConfig &config, const std::optional<FixedConfig> &fixed,
    std::optional<PipelinePlanResult> searched = std::nullopt) {
  assert(cluster && "pipeline planning needs a cluster");
  meta.strategy = fixed ? "fixed" : "auto";
  meta.mode = stringifyPlanMode(mode).str();
  if (mode == PlanMode::Training)
    meta.extra["note"] = "training plans are priced, not executed, until "
                         "training steps can run";
  AutoPlanOptions options = makePlanOptions(grid, cluster, mode, search);
  options.searchRecompute = search.searchRecompute && !fixed;
  options.progress = quiet ? nullptr : &llvm::errs();
  if (search.precision != PlanPrecision::Model)
    meta.extra["precision"] = stringifyPlanPrecision(search.precision);
  if (search.shardOptimizer)
    meta.extra["optimizer"] = "sharded over each weight's replicas";
  auto fixedStage =
      [&](ModuleOp stage,
          AutoPlanOptions &stageOptions) -> FailureOr<PlanPrediction> {
    FixedConfig slab = *fixed;
    slab.pp = 1;
    std::string error;
    auto view = getFixedGridView(slab, stageOptions.gridShape,
                                 stageOptions.cluster, error);
    if (failed(view))
      return emitError(stage.getLoc()) << error;
    PlanMetadata scratch;
    PlanSearchOptions stageSearch = search;
    stageSearch.searchRecompute = false;
    stageSearch.singleBlockStage = stageOptions.singleBlockStage;
    if (failed(planModule(ctx, stage, view->first,
                          fixed->tp == 1 ? "data" : "tensor", view->second,
                          mode, /*quiet=*/true, scratch, stageSearch)))
      return failure();
    stageOptions.gridShape = view->first;
    stageOptions.cluster = *view->second;
    return predictAnnotatedPlan(stage, stageOptions);
  };
  auto searchStage = [&](ModuleOp stage, AutoPlanOptions &stageOptions) {
    return planStageAutomatically(stage, stageOptions);
  };
  FailureOr<PipelinePlanResult> result =
      searched ? FailureOr<PipelinePlanResult>(std::move(*searched))
      : fixed  ? planPipeline(module, options, config, fixedStage)
               : planPipeline(module, options, config, searchStage);
  if (failed(result))
    return failure();
  meta.searchTimeSeconds = result->searchTimeSeconds;
  // An automatic pipeline is compared with the plans without stages on the
  // whole grid, priced with the busiest stage's recomputation.
  if (!fixed) {
    if (!quiet)
      llvm::errs() << "autopar: pricing the replicated, data and tensor "
                      "baselines\n";
    AutoPlanOptions baselineOptions = options;
    baselineOptions.searchRecompute = false;
    baselineOptions.recompute = result->predicted.recompute;
    baselineOptions.progress = nullptr;
    FailureOr<std::map<std::string, PlanPrediction>> priced =
        priceBaselines(ctx, module, baselineOptions);
    if (failed(priced)) {
      emitDriverError(ctx) << "pricing the baselines failed";
      return failure();
    }
    meta.extra["baselines"] = baselinesJson(*priced);
  }
  json::Object predicted = predictionJson(result->predicted);
  predicted["fits"] = result->predicted.fits;
  meta.extra["predicted"] = std::move(predicted);
  meta.extra["pipeline"] = std::move(result->report);
  if (mode == PlanMode::Training)
    meta.extra["recompute"] = json::Object{
        {"setting", stringifyRecomputeSpec(result->predicted.recompute)},
        {"searched", options.searchRecompute},
        {"recompute_s", result->predicted.recomputeTime},
        {"note", "per stage in pipeline.stage_list; this is the busiest "
                 "stage's"}};
  json::Value c = clusterToJson(*cluster);
  if (json::Object *o = c.getAsObject())
    (*o)["source"] = cluster->source;
  meta.extra["cluster"] = std::move(c);
  return success();
}

FailureOr<json::Value> mlir::autopar::planModel(MLIRContext &ctx,
                                                const PlanRequest &request) {
  const std::string &mode = request.mode;
  const std::string &precision = request.precision;
  const std::string &loss = request.loss;
  const std::string &microbatches = request.microbatches;
  const std::string &recompute = request.recompute;
  const std::string &fixed = request.fixed;
  const std::string &cluster = request.clusterPath;
  bool distributedOptimizer = request.distributedOptimizer;
  bool quiet = request.quiet;
  if (request.modelPath.empty()) {
    emitDriverError(ctx) << "no model given";
    return failure();
  }
  if (request.grid.empty()) {
    emitDriverError(ctx) << "missing --grid (e.g. --grid 2x4)";
    return failure();
  }
  std::string error;
  FailureOr<SmallVector<int64_t>> grid = parseGridShape(request.grid, error);
  if (failed(grid)) {
    emitDriverError(ctx) << error;
    return failure();
  }
  std::optional<PlanMode> planMode = symbolizePlanMode(mode);
  if (!planMode) {
    emitDriverError(ctx) << "unknown --mode '" + mode +
                                "': expected inference or training";
    return failure();
  }
  std::optional<PlanPrecision> planPrecision =
      symbolizePlanPrecision(precision);
  if (!planPrecision) {
    emitDriverError(ctx) << "unknown --precision '" + precision +
                                "': expected f32, f16 or bf16";
    return failure();
  }
  std::optional<LossKind> lossKind;
  if (!loss.empty()) {
    lossKind = symbolizeLossKind(loss);
    if (!lossKind) {
      emitDriverError(ctx) << "unknown --loss '" + loss +
                                  "': expected cross_entropy, mse or output";
      return failure();
    }
    if (*planMode != PlanMode::Training) {
      emitDriverError(ctx) << "--loss needs --mode training";
      return failure();
    }
  }
  // `--microbatches auto` searches the count (powers of two dividing the
  // batch); the count is 1 until the batch is known.
  bool searchMicrobatches = microbatches == "auto";
  FailureOr<uint64_t> microbatchCount = 1;
  if (!searchMicrobatches && !microbatches.empty()) {
    uint64_t count = 0;
    if (StringRef(microbatches).getAsInteger(10, count)) {
      emitDriverError(ctx) << "invalid --microbatches '" << microbatches
                           << "': expected a non-negative integer or auto";
      return failure();
    }
    microbatchCount = count;
  }
  if (searchMicrobatches &&
      (*planMode != PlanMode::Training ||
       (!request.plan.empty() && request.plan != "auto"))) {
    emitDriverError(ctx)
        << "--microbatches auto searches, and needs --mode training and "
           "--plan auto";
    return failure();
  }
  if (*microbatchCount == 0) {
    emitDriverError(ctx) << "--microbatches must be at least 1";
    return failure();
  }
  if (*microbatchCount > 1 && *planMode != PlanMode::Training) {
    emitDriverError(ctx) << "--microbatches needs --mode training";
    return failure();
  }
  if (distributedOptimizer && *planMode != PlanMode::Training) {
    emitDriverError(ctx) << "--distributed-optimizer needs --mode training";
    return failure();
  }
  if (!request.freeze.empty() && *planMode != PlanMode::Training) {
    emitDriverError(ctx) << "--freeze needs --mode training";
    return failure();
  }
  std::string plan = request.plan.empty() ? std::string("auto") : request.plan;
  PlanSearchOptions search;
  search.searchRecompute = *planMode == PlanMode::Training && plan == "auto";
  if (!recompute.empty()) {
    if (*planMode != PlanMode::Training) {
      emitDriverError(ctx) << "--recompute needs --mode training";
      return failure();
    }
    if (recompute == "auto") {
      if (plan != "auto") {
        emitDriverError(ctx)
            << "--recompute auto searches, and needs --plan auto";
        return failure();
      }
    } else if (std::optional<RecomputeSpec> spec =
                   parseRecomputeSpec(recompute)) {
      search.recompute = *spec;
      search.searchRecompute = false;
    } else {
      emitDriverError(ctx)
          << "unknown --recompute '" + recompute +
                 "': expected none, selective, full, full:K or auto";
      return failure();
    }
  }
  std::optional<FixedConfig> fixedConfig;
  if (!fixed.empty()) {
    std::string error;
    FailureOr<FixedConfig> parsed = parseFixedConfig(fixed, error);
    if (failed(parsed)) {
      emitDriverError(ctx) << error;
      return failure();
    }
    fixedConfig = *parsed;
    if (!request.plan.empty()) {
      emitDriverError(ctx)
          << "--fixed and --plan both choose the plan: give one";
      return failure();
    }
    if (!request.microbatches.empty() || !recompute.empty()) {
      emitDriverError(ctx)
          << "--fixed sets the microbatches (micro_batch=b) and the "
             "recomputation (recompute=...) itself: drop --microbatches "
             "and --recompute";
      return failure();
    }
    if (fixedConfig->recompute.kind != RecomputeKind::None &&
        *planMode != PlanMode::Training) {
      emitDriverError(ctx) << "--fixed: recompute needs --mode training";
      return failure();
    }
  }
  bool searchStages = request.stages == "auto";
  uint64_t stageCount = 1;
  if (!request.stages.empty() && !searchStages) {
    StringRef text = request.stages;
    if (text.getAsInteger(10, stageCount) || stageCount == 0) {
      emitDriverError(ctx) << "--stages must be a positive integer or auto, "
                              "got '"
                           << request.stages << "'";
      return failure();
    }
  }
  PipelineConfig pipeline;
  pipeline.stages = unsigned(stageCount);
  pipeline.schedule = *planMode == PlanMode::Training
                          ? PipelineSchedule::OneFOneB
                          : PipelineSchedule::GPipe;
  if (!request.schedule.empty()) {
    auto [scheduleName, chunkText] = StringRef(request.schedule).split(':');
    std::optional<PipelineSchedule> named =
        symbolizePipelineSchedule(scheduleName);
    unsigned chunks = 1;
    bool interleaved = named && *named == PipelineSchedule::Interleaved;
    if (!named ||
        (interleaved && (chunkText.getAsInteger(10, chunks) || chunks < 2)) ||
        (!interleaved && StringRef(request.schedule).contains(':'))) {
      emitDriverError(ctx) << "unknown --schedule '" << request.schedule
                           << "': expected 1f1b, interleaved:V (V >= 2 model "
                              "chunks per device), zb or gpipe";
      return failure();
    }
    pipeline.chunks = chunks;
    if (stageCount < 2 && !searchStages) {
      emitDriverError(ctx) << "--schedule needs --stages 2 or more, or auto";
      return failure();
    }
    pipeline.schedule = *named;
  }
  if (fixedConfig) {
    if (!request.stages.empty() || !request.schedule.empty()) {
      emitDriverError(ctx)
          << "--fixed sets the stages (pp=P) and the schedule "
             "(schedule=...) itself: drop --stages and --schedule";
      return failure();
    }
    pipeline.stages = unsigned(fixedConfig->pp);
    pipeline.schedule =
        fixedConfig->schedule == "zb"            ? PipelineSchedule::ZeroBubbleH1
        : fixedConfig->schedule == "interleaved" ? PipelineSchedule::Interleaved
                                                 : PipelineSchedule::OneFOneB;
    pipeline.chunks = pipeline.schedule == PipelineSchedule::Interleaved
                          ? unsigned(fixedConfig->chunks)
                          : 1;
    if (*planMode != PlanMode::Training) {
      pipeline.schedule = PipelineSchedule::GPipe;
      pipeline.chunks = 1;
    }
  }
  if ((pipeline.stages > 1 || searchStages) && !request.plan.empty() &&
      request.plan != "auto") {
    emitDriverError(ctx)
        << "--stages searches each stage's plan and needs --plan auto";
    return failure();
  }
  if (request.timeLimitSeconds == 0) {
    emitDriverError(ctx) << "--time-limit must be at least 1 s";
    return failure();
  }

  if (plan != "auto" && failed(checkPlanArgument(ctx, plan)))
    return failure();
  FailureOr<std::optional<ClusterSpec>> spec =
      resolveCluster(ctx, cluster, *grid, /*required=*/true);
  if (failed(spec))
    return failure();
  const InputShapes *inputShapes = &request.inputShapes;
  FailureOr<ImportedModel> model =
      importModel(ctx, request.modelPath, *inputShapes,
                  /*requireWeightData=*/false, /*keepFloatInitializers=*/false,
                  /*seed=*/0, /*unmergeHeads=*/hasSeveralDevices(request.grid));
  if (failed(model))
    return failure();

  PlanMetadata meta;
  meta.modelSha256 = model->sha256;
  int64_t m = int64_t(*microbatchCount);
  // The global batch is dimension 0 of the first runtime input.
  auto globalBatch = [&]() -> int64_t {
    auto main = model->module->lookupSymbol<func::FuncOp>("main");
    auto first = main && main.getNumArguments() > 0
                     ? dyn_cast<RankedTensorType>(main.getArgument(0).getType())
                     : RankedTensorType();
    return first && first.getRank() > 0 ? first.getDimSize(0) : -1;
  };
  SmallVector<int64_t> planGrid(*grid);
  std::optional<ClusterSpec> planCluster = *spec;
  if (fixedConfig) {
    std::string error;
    auto view = getFixedGridView(*fixedConfig, *grid, *spec, error);
    if (failed(view)) {
      emitDriverError(ctx) << error;
      return failure();
    }
    int64_t global = globalBatch();
    int64_t perStep = fixedConfig->microBatch * fixedConfig->dp;
    if (global <= 0) {
      emitDriverError(ctx)
          << "--fixed needs a runtime input with a batch dimension";
      return failure();
    }
    if (global % perStep != 0) {
      emitDriverError(ctx)
          << llvm::formatv("--fixed: micro_batch*dp = {0}*{1} = {2} does "
                           "not divide the global batch {3}",
                           fixedConfig->microBatch, fixedConfig->dp, perStep,
                           global)
                 .str();
      return failure();
    }
    m = global / perStep;
    searchMicrobatches = false;
    if (m > 1 && *planMode != PlanMode::Training) {
      emitDriverError(ctx) << llvm::formatv(
                                  "--fixed: micro_batch={0} with dp={1} makes "
                                  "{2} microbatches of the batch {3}, and "
                                  "microbatches need --mode training",
                                  fixedConfig->microBatch, fixedConfig->dp, m,
                                  global)
                                  .str();
      return failure();
    }
    planGrid = view->first;
    planCluster = view->second;
    plan = fixedConfig->tp == 1 ? "data" : "tensor";
    search.recompute = fixedConfig->recompute;
    search.searchRecompute = false;
  }
  search.fold = request.fold;
  search.timeLimitSeconds = double(request.timeLimitSeconds);
  search.precision = *planPrecision;
  search.shardOptimizer = distributedOptimizer;
  search.frozenWeights = request.freeze;
  if (std::string missing =
          findMissingFrozenWeight(*model->module, request.freeze);
      !missing.empty()) {
    emitDriverError(ctx) << "--freeze: the model has no weight named '"
                         << missing << "'";
    return failure();
  }
  if (!request.freeze.empty())
    meta.extra["frozen"] = json::Array(request.freeze);
  json::Array microbatchesTried;
  // `--microbatches auto --stages auto`: the microbatch count and the stage
  // count searched together. Every divisor m of the batch (the microbatch
  // b x d = B / m) is imported at its microbatch, and the (m, stage count)
  // pairs are searched best first (chooseMicrobatchesAndStages): each m's
  // plan without stages, fewest microbatches first, then the pipelines in
  // the order of their bounds, each under the best step of any pair.
  std::optional<StageCountChoice> jointChoice;
  json::Array jointTried;
  double jointSeconds = 0;
  if (searchMicrobatches && searchStages) {
    int64_t global = globalBatch();
    if (global <= 0) {
      emitDriverError(ctx)
          << "--microbatches needs a runtime input with a batch "
             "dimension";
      return failure();
    }
    std::deque<ImportedModel> micros;
    std::vector<MicrobatchCandidate> candidates;
    SmallVector<int64_t> counts;
    for (int64_t candidate = 1; candidate <= global; ++candidate) {
      if (global % candidate != 0)
        continue;
      InputShapes microShapes = *inputShapes;
      microShapes.batch = global / candidate;
      FailureOr<ImportedModel> micro = importModel(
          ctx, request.modelPath, microShapes, /*requireWeightData=*/false);
      if (failed(micro))
        return failure();
      if (lossKind && failed(appendTrainingLoss(*micro->module, *lossKind)))
        return failure();
      micros.push_back(std::move(*micro));
      PlanSearchOptions candidateSearch = search;
      candidateSearch.microbatches = candidate;
      candidates.push_back(
          {*micros.back().module,
           makePlanOptions(*grid, *spec, *planMode, candidateSearch)});
      counts.push_back(candidate);
    }
    if (!quiet)
      llvm::errs() << llvm::formatv(
          "autopar: planning {0} microbatch counts (the divisors of the "
          "batch {1}) with the stage count searched\n",
          counts.size(), global);
    auto jointStart = std::chrono::steady_clock::now();
    std::string error;
    FailureOr<MicrobatchChoice> chosen = withFirstError(ctx, error, [&] {
      return chooseMicrobatchesAndStages(candidates, pipeline);
    });
    jointSeconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - jointStart)
                       .count();
    if (failed(chosen)) {
      emitDriverError(ctx) << "no microbatch count (the divisors of the batch "
                           << global
                           << ") gives a plan that fits with any stage count: "
                           << error;
      return failure();
    }
    for (auto [index, outcome] : llvm::enumerate(chosen->outcomes)) {
      json::Object entry{{"microbatches", counts[index]},
                         {"per_microbatch", global / counts[index]},
                         {"search_time_s", outcome.searchTimeSeconds}};
      // Some stage counts of it were cut under another's plan: its own
      // optimum is at least the least of this and its step.
      if (std::isfinite(outcome.cutoff))
        entry["cutoff_s"] = outcome.cutoff;
      if (outcome.stepTime) {
        entry["stages"] = outcome.stages;
        entry["step_time_s"] = *outcome.stepTime;
      } else if (outcome.pruned) {
        entry["pruned"] = outcome.error;
      } else {
        entry["error"] = outcome.error;
      }
      if (index == chosen->candidate)
        jointTried = std::move(outcome.tried);
      else
        entry["stage_counts"] = std::move(outcome.tried);
      microbatchesTried.push_back(std::move(entry));
    }
    m = counts[chosen->candidate];
    jointChoice = std::move(chosen->choice);
  } else if (searchMicrobatches) {
    // Every power of two m dividing the batch, each planned in full; the
    // fastest plan that fits wins.
    int64_t global = globalBatch();
    if (global <= 0) {
      emitDriverError(ctx)
          << "--microbatches needs a runtime input with a batch "
             "dimension";
      return failure();
    }
    double bestStep = std::numeric_limits<double>::infinity();
    int64_t best = -1;
    std::string lastError;
    for (int64_t candidate = 1; candidate <= global; candidate *= 2) {
      if (global % candidate != 0)
        break;
      if (!quiet)
        llvm::errs() << llvm::formatv(
            "autopar: planning {0} microbatches of {1}\n", candidate,
            global / candidate);
      InputShapes microShapes = *inputShapes;
      microShapes.batch = global / candidate;
      FailureOr<ImportedModel> micro = importModel(
          ctx, request.modelPath, microShapes, /*requireWeightData=*/false);
      if (failed(micro))
        return failure();
      if (lossKind && failed(appendTrainingLoss(*micro->module, *lossKind)))
        return failure();
      PlanSearchOptions candidateSearch = search;
      candidateSearch.microbatches = candidate;
      AutoPlanOptions options =
          makePlanOptions(*grid, *spec, *planMode, candidateSearch);
      std::string error;
      FailureOr<AutoPlanResult> result = withFirstError(ctx, error, [&] {
        return planAutomatically(*micro->module, options);
      });
      json::Object entry{{"microbatches", candidate},
                         {"per_microbatch", global / candidate}};
      if (failed(result)) {
        entry["error"] = error;
        lastError = error;
      } else {
        entry["step_time_s"] = result->predicted.stepTime;
        entry["peak_memory_bytes"] = result->predicted.peakMemoryBytes;
        entry["recompute"] =
            stringifyRecomputeSpec(result->predicted.recompute);
        if (result->predicted.stepTime < bestStep) {
          bestStep = result->predicted.stepTime;
          best = candidate;
        }
      }
      microbatchesTried.push_back(std::move(entry));
    }
    if (best < 0) {
      emitDriverError(ctx)
          << "no microbatch count (powers of two dividing the batch " << global
          << ") gives a plan; with the most: " << lastError;
      return failure();
    }
    m = best;
  }
  if (m > 1) {
    // The model is planned at one microbatch of the global batch.
    int64_t global = globalBatch();
    if (global <= 0) {
      emitDriverError(ctx)
          << "--microbatches needs a runtime input with a batch "
             "dimension";
      return failure();
    }
    if (global % m != 0) {
      emitDriverError(ctx) << "--microbatches " + std::to_string(m) +
                                  " does not divide the global batch " +
                                  std::to_string(global);
      return failure();
    }
    InputShapes microShapes = *inputShapes;
    microShapes.batch = global / m;
    model = importModel(ctx, request.modelPath, microShapes,
                        /*requireWeightData=*/false);
    if (failed(model))
      return failure();
    meta.extra["batch"] = json::Object{{"global", global},
                                       {"microbatches", m},
                                       {"per_microbatch", global / m}};
  }
  if (searchMicrobatches) {
    int64_t global = globalBatch() * m;
    meta.extra["batch"] =
        json::Object{{"global", global},
                     {"microbatches", m},
                     {"per_microbatch", global / m},
                     {"searched", std::move(microbatchesTried)}};
  }
  OwningOpRef<ModuleOp> module = model->module->clone();
  if (lossKind) {
    if (failed(appendTrainingLoss(*module, *lossKind)))
      return failure();
    meta.extra["loss"] = stringifyLossKind(*lossKind);
  }
  search.microbatches = m;
  OwningOpRef<ModuleOp> pristine = module->clone();
  std::optional<PipelinePlanResult> searchedPipeline;
  double stageSearchSeconds = 0;
  if (searchStages) {
    json::Array tried;
    AutoPlanOptions options = makePlanOptions(*grid, *spec, *planMode, search);
    options.progress = quiet ? nullptr : &llvm::errs();
    FailureOr<StageCountChoice> chosen =
        jointChoice ? FailureOr<StageCountChoice>(std::move(*jointChoice))
                    : chooseStageCount(*module, options, pipeline, tried);
    if (failed(chosen))
      return failure();
    if (jointChoice) {
      tried = std::move(jointTried);
      chosen->searchTimeSeconds = jointSeconds;
    }
    pipeline.stages = chosen->stages;
    searchedPipeline = std::move(chosen->pipeline);
    stageSearchSeconds = chosen->searchTimeSeconds;
    meta.extra["stage_search"] = json::Object{
        {"chosen", chosen->stages},
        {"tried", std::move(tried)},
        {"search_time_s", chosen->searchTimeSeconds},
        {"rule",
         "1 and every divisor of grid axis 0 up to the repeated blocks, no "
         "pipeline first, then the pipelines best first by their step "
         "bound (every stage at its compute floor: a device's fill, work "
         "and drain; once probed, with the stages planned), each "
         "probed and then searched with the best step found so far as a "
         "cutoff: a count whose step bound reaches it is not planned "
         "further, and a stage plan is searched under the cutoff less the "
         "fill and drain the other stages' floors add to any pipeline "
         "holding it"}};
  }
  if (pipeline.stages > 1) {
    if (failed(planPipelineModule(ctx, *module, *grid, *spec, *planMode, quiet,
                                  meta, search, pipeline, fixedConfig,
                                  std::move(searchedPipeline))))
      return failure();
  } else if (failed(planModule(ctx, *module, planGrid, plan, planCluster,
                               *planMode, quiet, meta, search))) {
    return failure();
  }
  // The search time of `--stages auto` is the whole stage-count search (and
  // the plan without stages, searched again when it won).
  if (searchStages)
    meta.searchTimeSeconds =
        stageSearchSeconds + (pipeline.stages > 1 ? 0 : meta.searchTimeSeconds);
  if (fixedConfig) {
    // autopar's own plan of the same step (same microbatches), for the
    // comparison: searched on the whole grid, or, when the configuration
    // has pipeline stages, with the same stages and schedule and each
    // stage's plan (and recomputation) searched on its slab.
    if (!quiet)
      llvm::errs() << "autopar: searching autopar's own plan to compare with "
                      "--fixed\n";
    PlanMetadata own;
    PlanSearchOptions ownSearch = search;
    ownSearch.searchRecompute = *planMode == PlanMode::Training;
    ownSearch.recompute = RecomputeSpec();
    std::string ownError;
    LogicalResult planned = withFirstError(ctx, ownError, [&] {
      return pipeline.stages > 1
                 ? planPipelineModule(ctx, *pristine, *grid, *spec, *planMode,
                                      /*quiet=*/true, own, ownSearch, pipeline,
                                      std::nullopt)
                 : planModule(ctx, *pristine, *grid, "auto", *spec, *planMode,
                              /*quiet=*/true, own, ownSearch);
    });
    const json::Object *fixedPred = meta.extra.getObject("predicted");
    double fixedStep = fixedPred->getNumber("step_time_s").value_or(0);
    int64_t fixedPeak = fixedPred->getInteger("peak_memory_bytes").value_or(0);
    // With stages, the view is each stage's slab's.
    SmallVector<int64_t> stageView = planGrid;
    if (fixedConfig->pp > 1) {
      FixedConfig slab = *fixedConfig;
      slab.pp = 1;
      SmallVector<int64_t> slabGrid(*grid);
      slabGrid[0] /= fixedConfig->pp;
      std::string ignored;
      if (auto view = getFixedGridView(slab, slabGrid, *spec, ignored);
          succeeded(view))
        stageView = view->first;
    }
    json::Object report{
        {"config", fixedConfig->text},
        {"tp", fixedConfig->tp},
        {"pp", fixedConfig->pp},
        {"dp", fixedConfig->dp},
        {"micro_batch", fixedConfig->microBatch},
        {"microbatches", m},
        {"recompute", stringifyRecomputeSpec(fixedConfig->recompute)},
        {"schedule", fixedConfig->schedule == "interleaved"
                         ? "interleaved:" + std::to_string(fixedConfig->chunks)
                         : fixedConfig->schedule},
        {"grid_view", json::Array(stageView)},
        // A pipeline checked each stage against its own class's memory.
        {"fits", fixedPred->getBoolean("fits").value_or(
                     planCluster->getUniform().memoryBytes <= 0 ||
                     fixedPeak <= planCluster->getUniform().memoryBytes)}};
    if (fixedConfig->pp == 1)
      report["schedule_note"] = "one pipeline stage: the schedule has no "
                                "bubble to change";
    if (succeeded(planned)) {
      const json::Object *ownPred = own.extra.getObject("predicted");
      double ownStep = ownPred->getNumber("step_time_s").value_or(0);
      const json::Object *ownRecompute = own.extra.getObject("recompute");
      json::Object ownJson{
          {"step_time_s", ownStep},
          {"peak_memory_bytes",
           ownPred->getInteger("peak_memory_bytes").value_or(0)},
          {"grid", json::Array(*grid)}};
      if (ownRecompute)
        ownJson["recompute"] =
            ownRecompute->getString("setting").value_or("none").str();
      if (const json::Object *ownPipe = own.extra.getObject("pipeline"))
        ownJson["pipeline"] = json::Object{
            {"stages", ownPipe->getInteger("stages").value_or(0)},
            {"schedule", ownPipe->getString("schedule").value_or("").str()},
            {"layout", ownPipe->getString("layout").value_or("").str()}};
      report["own_plan"] = std::move(ownJson);
      report["fixed_over_own_plan"] = ownStep > 0 ? fixedStep / ownStep : 0.0;
    } else {
      report["own_plan"] = json::Object{{"error", ownError}};
    }
    meta.strategy = "fixed";
    meta.extra["fixed"] = std::move(report);
  }

  if (json::Object *predicted = meta.extra.getObject("predicted")) {
    // Model FLOP utilization of the predicted step.
    AutoPlanOptions options = makePlanOptions(*grid, *spec, *planMode, search);
    double flops = countModelFlops(*pristine, options);
    double step = predicted->getNumber("step_time_s").value_or(0);
    double peak = getPeakFlops(options);
    int64_t devices = 1;
    for (int64_t size : *grid)
      devices *= size;
    if (flops > 0 && step > 0) {
      double perDevice = flops / (step * double(devices));
      (*predicted)["model_flops"] = flops;
      (*predicted)["model_flops_per_device_s"] = perDevice;
      if (peak > 0)
        (*predicted)["mfu"] = perDevice / peak;
    }
  }
  if (pipeline.stages > 1) {
    // The stages carry their own plans; the whole module has none.
    module = ModuleOp::create(module->getLoc());
    OpBuilder b = OpBuilder::atBlockBegin(module->getBody());
    shard::GridOp::create(b, module->getLoc(), "grid", *grid);
  }
  return buildPlanJson(*module, meta);
}

int driver::planCommand(int argc, char **argv) {
  static llvm::cl::OptionCategory category("autopar plan options");
  static ModelPlanOptions common(category, "device grid: N or AxB[xC...]", "");
  static llvm::cl::opt<std::string> cluster(
      "cluster",
      llvm::cl::desc("cluster description (JSON; default: the calibrated "
                     "description of this machine)"),
      llvm::cl::value_desc("file.json"), llvm::cl::cat(category));
  static llvm::cl::opt<std::string> mode(
      "mode", llvm::cl::desc("inference or training (default: inference)"),
      llvm::cl::init("inference"), llvm::cl::cat(category));
  static llvm::cl::opt<std::string> output(
      "o",
      llvm::cl::desc("plan file to write (plan.txt is written next to "
                     "it); default plan.json"),
      llvm::cl::value_desc("plan.json"), llvm::cl::init("plan.json"),
      llvm::cl::cat(category));
  static llvm::cl::opt<std::string> html(
      "html",
      llvm::cl::desc("also write the plan as one self-contained web page "
                     "(shardings, memory over program order, compute and "
                     "communication per op kind, baselines)"),
      llvm::cl::value_desc("plan.html"), llvm::cl::cat(category));
  static llvm::cl::opt<bool> quiet(
      "quiet", llvm::cl::desc("no progress output"), llvm::cl::cat(category));
  static llvm::cl::opt<std::string> timeLimit(
      "time-limit",
      llvm::cl::desc("seconds the solver may take (default 600); on expiry "
                     "the best plan found is kept and the report states its "
                     "optimality gap"),
      llvm::cl::value_desc("s"), llvm::cl::init("600"),
      llvm::cl::cat(category));
  static llvm::cl::opt<bool> noFold(
      "no-fold",
      llvm::cl::desc("plan every op independently instead of sharing one "
                     "strategy among repeated blocks"),
      llvm::cl::cat(category));
  static llvm::cl::opt<std::string> precision(
      "precision",
      llvm::cl::desc("f32, f16 or bf16: compute, stored activations and "
                     "communication are priced in that type; training keeps "
                     "fp32 master weights, gradients and Adam states "
                     "(default: the model's types)"),
      llvm::cl::value_desc("type"), llvm::cl::init("model"),
      llvm::cl::cat(category));
  static llvm::cl::opt<std::string> loss(
      "loss",
      llvm::cl::desc("training: cross_entropy (over the last output, logits "
                     "[..., V], against an added int64 'labels' input), mse "
                     "(against an added 'target' input of the output's shape) "
                     "or output (the output is the scalar loss); appended for "
                     "planning, so no output is gathered"),
      llvm::cl::value_desc("kind"), llvm::cl::cat(category));
  static llvm::cl::opt<std::string> microbatches(
      "microbatches",
      llvm::cl::desc("training: microbatches accumulated per step (default "
                     "1); the batch (--batch or the model's) is the global "
                     "batch B, the model is planned at B/m, and each weight's "
                     "gradient is reduced once per step; auto: every power "
                     "of two dividing the batch is planned and the fastest "
                     "fitting plan wins"),
      llvm::cl::value_desc("m"), llvm::cl::init("1"), llvm::cl::cat(category));
  static llvm::cl::opt<std::string> recompute(
      "recompute",
      llvm::cl::desc("training: none, selective (attention cores), full (every "
                     "repeated block), full:K (the first K) or auto (default "
                     "with --plan auto: none unless memory binds, then the "
                     "fastest fitting of none, selective and full)"),
      llvm::cl::value_desc("setting"), llvm::cl::cat(category));
  static llvm::cl::opt<std::string> fixed(
      "fixed",
      llvm::cl::desc("price a hand configuration in Megatron's notation, "
                     "tp=T,pp=P,dp=D,micro_batch=b[,recompute=none|selective|"
                     "full][,schedule=1f1b|interleaved:V|zb] (T*P*D = the "
                     "device count; tensor parallelism over the innermost T "
                     "devices of the last axis, data over the rest), and "
                     "compare autopar's own plan with it"),
      llvm::cl::value_desc("config"), llvm::cl::cat(category));
  static llvm::cl::opt<std::string> stages(
      "stages",
      llvm::cl::desc("pipeline stages P (default 1): the model is cut between "
                     "repeated blocks into P stages, each on a slab of grid "
                     "axis 0, each planned on its slab, and the split is "
                     "searched; auto: 1 and every P dividing axis 0 are "
                     "planned and the fastest fitting wins"),
      llvm::cl::value_desc("P"), llvm::cl::init("1"), llvm::cl::cat(category));
  static llvm::cl::opt<std::string> schedule(
      "schedule",
      llvm::cl::desc("pipeline schedule with --stages: 1f1b (default in "
                     "training), interleaved:V (Megatron's interleaved 1F1B, "
                     "V model chunks per device, the blocks cut evenly), zb "
                     "(zero-bubble ZB-H1) or gpipe (inference)"),
      llvm::cl::value_desc("name"), llvm::cl::cat(category));
  static llvm::cl::opt<bool> distributedOptimizer(
      "distributed-optimizer",
      llvm::cl::desc("training: shard fp32 master weights and Adam states "
                     "over each weight's replicas (Megatron's distributed "
                     "optimizer, ZeRO-1)"),
      llvm::cl::cat(category));
  static llvm::cl::list<std::string> freeze(
      "freeze",
      llvm::cl::desc("training: float initializers not to train "
                     "(comma-separated), as compile --freeze: priced as "
                     "buffers, without gradients or optimizer state"),
      llvm::cl::value_desc("name,..."), llvm::cl::CommaSeparated,
      llvm::cl::ZeroOrMore, llvm::cl::cat(category));

  if (std::optional<int> exit = parseCommandLine(
          argc, argv, "plan",
          "find the fastest parallel plan that fits in memory, without "
          "generating code\n\n"
          "  autopar plan MODEL.onnx --grid SHAPE [--cluster FILE.json] "
          "[--mode inference|training] [--batch N] -o plan.json [--html "
          "plan.html]\n\n"
          "The model's weights need no data: shapes are enough. --plan "
          "replicated|data|tensor|FILE prices that plan instead of "
          "searching.\n",
          category, kErrorExitCode))
    return *exit;
  if (common.model.empty()) {
    printError("no model given (autopar plan MODEL.onnx --grid SHAPE -o "
               "plan.json)");
    return kErrorExitCode;
  }
  if (common.grid.getNumOccurrences() == 0) {
    printError("missing --grid (e.g. --grid 2x4)");
    return kErrorExitCode;
  }
  FailureOr<uint64_t> seconds = parseUnsignedOption("time-limit", timeLimit);
  if (failed(seconds))
    return kErrorExitCode;
  FailureOr<InputShapes> inputShapes = common.getInputShapes();
  if (failed(inputShapes))
    return kErrorExitCode;
  PlanRequest request;
  request.modelPath = common.model;
  request.grid = common.grid;
  if (common.plan.getNumOccurrences())
    request.plan = common.plan;
  request.clusterPath = cluster;
  request.mode = mode;
  request.precision = precision;
  request.loss = loss;
  if (microbatches.getNumOccurrences())
    request.microbatches = microbatches;
  request.recompute = recompute;
  request.fixed = fixed;
  if (stages.getNumOccurrences())
    request.stages = stages;
  request.schedule = schedule;
  request.distributedOptimizer = distributedOptimizer;
  request.freeze.assign(freeze.begin(), freeze.end());
  request.fold = !noFold;
  request.timeLimitSeconds = *seconds;
  request.quiet = quiet;
  request.inputShapes = *inputShapes;

  DriverContext context;
  MLIRContext &ctx = context.get();
  FailureOr<json::Value> planJson = planModel(ctx, request);
  if (failed(planJson))
    return kErrorExitCode;
  std::string text = llvm::formatv("{0:2}", *planJson).str() + "\n";
  if (failed(writeFileBytes(ctx, output,
                            ArrayRef<char>(text.data(), text.size()))))
    return kErrorExitCode;
  SmallString<256> txtPath(output.getValue());
  llvm::sys::path::replace_extension(txtPath, "txt");
  std::string human = renderPlanText(*planJson);
  if (failed(writeFileBytes(ctx, txtPath,
                            ArrayRef<char>(human.data(), human.size()))))
    return kErrorExitCode;
  if (!html.empty()) {
    std::string page = renderPlanHtml(*planJson);
    if (failed(writeFileBytes(ctx, html,
                              ArrayRef<char>(page.data(), page.size()))))
      return kErrorExitCode;
  }
  if (!quiet) {
    const json::Object *root = planJson->getAsObject();
    const json::Object *pred = root->getObject("predicted");
    llvm::errs() << llvm::formatv(
        "autopar: wrote {0} and {1}: predicted step {2:e3} s, peak memory "
        "{3} bytes per device\n",
        output.getValue(), txtPath, pred->getNumber("step_time_s").value_or(0),
        pred->getInteger("peak_memory_bytes").value_or(0));
  }
  return 0;
}
