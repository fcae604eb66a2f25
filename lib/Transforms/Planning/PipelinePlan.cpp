//===- PipelinePlan.cpp - pipeline stages over slabs of the grid ----------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// In the order it runs:
//   1. the repeated blocks of @main (BlockFolding.h) give the cut points;
//   2. the schedule simulated with unit times gives each stage's
//      microbatches in flight;
//   3. each stage candidate (block count, first/interior/last, microbatches
//      in flight) is extracted into a module of its own and planned on its
//      slab by the intra-stage planner, once per distinct candidate; its
//      price is split into per-microbatch and per-step seconds;
//   4. for every bottleneck bound, a dynamic program over the stages picks
//      the block counts with the least total work under the bound, and the
//      event simulator prices the split; the fastest fitting split wins.
//
//===----------------------------------------------------------------------===//

#include "autopar/Transforms/Planning/PipelinePlan.h"
#include "autopar/Transforms/Planning/PlanReport.h"
#include "autopar/Transforms/Planning/StageSplit.h"

#include "BlockFolding.h"
#include "IntegerProgram.h"
#include "PipelineSimulator.h"
#include "PipelineSplit.h"
#include "Pricing.h"
#include "SearchReport.h"
#include "StageExtraction.h"
#include "StrategyGraph.h"

#include "autopar/Analysis/CostModel.h"
#include "autopar/Dialect/Autopar/IR/Autopar.h"
#include "autopar/Dialect/Autopar/IR/ShardLayout.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <chrono>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <tuple>

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::planning;
namespace json = llvm::json;

StringRef mlir::autopar::stringifyPipelineSchedule(PipelineSchedule schedule) {
  switch (schedule) {
  case PipelineSchedule::GPipe:
    return "gpipe";
  case PipelineSchedule::OneFOneB:
    return "1f1b";
  case PipelineSchedule::Interleaved:
    return "interleaved";
  case PipelineSchedule::ZeroBubbleH1:
    return "zb";
  }
  llvm_unreachable("unknown pipeline schedule");
}

std::optional<PipelineSchedule>
mlir::autopar::symbolizePipelineSchedule(StringRef name) {
  if (name == "gpipe")
    return PipelineSchedule::GPipe;
  if (name == "1f1b")
    return PipelineSchedule::OneFOneB;
  if (name == "interleaved")
    return PipelineSchedule::Interleaved;
  if (name == "zb")
    return PipelineSchedule::ZeroBubbleH1;
  return std::nullopt;
}

FailureOr<PlanPrediction>
mlir::autopar::planStageAutomatically(ModuleOp stage,
                                      AutoPlanOptions &options) {
  FailureOr<AutoPlanResult> result = planAutomatically(stage, options);
  if (failed(result))
    return failure();
  return result->predicted;
}

/// The most simulated events (splits x stages x microbatches) the bound on
/// the splits may cost each time a stage is planned (about a second).
static constexpr double kSplitBoundEvents = 2e6;

namespace {

/// A stage candidate: `blocks` repeated blocks, whether it is the first or
/// last stage (holding the prefix or suffix), its microbatches in flight, and
/// the device classes of its slab (an index into the distinct slab kinds).
using StageKey = std::tuple<unsigned, bool, bool, unsigned, unsigned>;

/// A candidate planned on its slab.
struct StageEval {
  bool planned = false;
  /// Planned by a search with its own microbatches in flight (not a plan
  /// for fewer priced again).
  bool searched = false;
  std::string error;
  OwningOpRef<ModuleOp> module;
  PlanPrediction predicted;
  double forward = 0, backward = 0, perStep = 0;
  /// The options the plan was priced with (the stage planner's view).
  AutoPlanOptions priced;
  /// Bytes per device of the activations it receives from the previous
  /// stage for one microbatch.
  double receivedBytes = 0;
  std::string firstOp, lastOp;
  /// Prices the searched plan again (other microbatches in flight).
  std::unique_ptr<AnnotatedPlanPricer> pricer;
};

} // namespace

struct mlir::autopar::PipelineSearchCache::Impl {
  /// The candidates that differ only in their microbatches in flight are the
  /// same module under different memory rows: they share their
  /// memory-unconstrained solves.
  std::map<std::tuple<unsigned, bool, bool, unsigned>, PlanSearchMemo> memos;
  /// Every candidate on one kind of slab prices the same reshards.
  std::vector<std::unique_ptr<ReshardCostCache>> reshardCaches;
  /// Every candidate evaluated, planned or not.
  std::map<StageKey, std::unique_ptr<StageEval>> evals;
  /// Stage plans searched, priced again with more microbatches in flight,
  /// not searched to the end (`cutByLead` of them not searched at all), and
  /// bounds on the splits taken while the stages were planned.
  unsigned solved = 0, repriced = 0, cutShort = 0, cutByLead = 0;
  unsigned splitBounds = 0;
  /// The configuration the entries belong to: stages, schedule, chunks and
  /// microbatches.
  std::optional<std::tuple<unsigned, PipelineSchedule, unsigned, int64_t>>
      owner;
};

mlir::autopar::PipelineSearchCache::PipelineSearchCache()
    : impl(std::make_unique<Impl>()) {}
mlir::autopar::PipelineSearchCache::~PipelineSearchCache() = default;

/// The report of one chosen stage's plan, as a whole plan's has it: its
/// prediction, memory profile and limit, per-op prices and repeated blocks
/// (priced again from the stage's annotations with the options it was
/// priced with).
static void addStageReport(ModuleOp stage, const AutoPlanOptions &priced,
                           const PlanPrediction &p, PlanMetadata &meta) {
  meta.extra["predicted"] =
      json::Object{{"step_time_s", p.stepTime},
                   {"compute_s", p.computeTime},
                   {"comm_s", p.commTime},
                   {"peak_memory_bytes", p.peakMemoryBytes},
                   {"peak_at", p.peakAt}};
  json::Array profile;
  for (const auto &[node, bytes] : p.memoryProfile)
    profile.push_back(json::Array{node, bytes});
  meta.extra["memory_profile"] = std::move(profile);
  meta.extra["memory"] =
      json::Object{{"limit_bytes", priced.cluster.memoryBytes},
                   {"peak_bytes", p.peakMemoryBytes},
                   {"peak_at", p.peakAt},
                   {"binding", p.memoryBinds}};
  // The links the stage's grid axes map to (a fixed configuration's view of
  // the slab has its own axes).
  meta.extra["cluster"] = clusterToJson(priced.cluster);
  AutoPlanOptions options = priced;
  options.searchRecompute = false;
  options.recompute = p.recompute;
  options.progress = nullptr;
  // The stage was priced from these annotations already, so describing them
  // does not fail unless the IR changed since; the report then says why its
  // ops have no prices.
  std::string why;
  ScopedDiagnosticHandler capture(stage.getContext(), [&](Diagnostic &d) {
    if (why.empty())
      why = d.str();
    return success();
  });
  FailureOr<json::Array> blocks =
      describeAnnotatedPlan(stage, options, meta.opDetails);
  if (succeeded(blocks))
    meta.extra["search"] =
        json::Object{{"repeated_blocks", std::move(*blocks)}};
  else
    meta.extra["report_error"] = "the stage's ops could not be priced: " + why;
}

/// Copies the compute ops at program positions `positions` (ascending) of
/// `graph` into a module of its own (extractStageModule): values used by
/// later stages are not returned, their layout is the stage plan's choice.
/// `received` gets the arguments other stages produce.
static OwningOpRef<ModuleOp> extractStage(const StrategyGraph &graph,
                                          ArrayRef<unsigned> positions,
                                          SmallVectorImpl<Value> &received) {
  SmallVector<Operation *> ops;
  for (unsigned pos : positions)
    ops.push_back(graph.nodes[graph.sequence[pos]].op);
  SmallVector<Value> external, results;
  OwningOpRef<ModuleOp> module =
      extractStageModule(graph.func, ops, /*exports=*/{}, external, results);
  for (Value v : external)
    if (!isa<BlockArgument>(v))
      received.push_back(v);
  return module;
}

/// Bytes of `type` with floats in the plan's precision.
static double pricedBytes(RankedTensorType type, PlanPrecision precision) {
  Type element = type.getElementType();
  int64_t bytes = getElementBytes(element);
  if (isa<FloatType>(element) && precision != PlanPrecision::Model)
    bytes = precision == PlanPrecision::F32 ? 4 : 2;
  return double(type.getNumElements()) * double(bytes);
}

/// `E` for the prefix, `t` per block, `L` for the suffix, stages separated by
/// `|` (Megatron-Core's --pipeline-model-parallel-layout).
static std::string formatLayout(ArrayRef<PipelineStage> stages) {
  std::string text;
  for (auto [i, s] : llvm::enumerate(stages)) {
    if (i)
      text += "|";
    if (s.hasPrefix)
      text += "E";
    if (s.numBlocks == 1)
      text += "t";
    else if (s.numBlocks > 1)
      text += "t*" + std::to_string(s.numBlocks);
    if (s.hasSuffix)
      text += "L";
  }
  return text;
}

/// The `stage_list` entry of plan.json for stage (or virtual stage)
/// `index`: `busy` and `finish` are its device's in the simulated step.
static json::Object stageEntry(const PipelineStage &st, unsigned index,
                               double busy, double finish) {
  return json::Object{
      {"index", index},
      {"blocks", json::Array{st.firstBlock, st.firstBlock + st.numBlocks}},
      {"prefix", st.hasPrefix},
      {"suffix", st.hasSuffix},
      {"first_op", st.firstOp},
      {"last_op", st.lastOp},
      {"slab", json::Array{st.slabBegin, st.slabEnd}},
      {"grid", json::Array(st.grid)},
      {"forward_s", st.forward},
      {"backward_s", st.backward},
      {"per_step_s", st.perStep},
      {"transfer_s", st.transfer},
      {"in_flight", st.inFlight},
      {"busy_s", busy},
      {"finish_s", finish},
      {"step_time_s", st.predicted.stepTime},
      {"peak_memory_bytes", st.predicted.peakMemoryBytes},
      {"peak_at", st.predicted.peakAt},
      {"recompute", stringifyRecomputeSpec(st.predicted.recompute)},
      {"plan", st.plan}};
}

FailureOr<PipelinePlanResult>
mlir::autopar::planPipeline(ModuleOp module, const AutoPlanOptions &options,
                            const PipelineConfig &config,
                            StagePlanner planStage) {
  auto startTime = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         startTime)
        .count();
  };
  auto func = module.lookupSymbol<func::FuncOp>("main");
  if (!func)
    return module.emitError() << "expected a function @main to plan";
  Location loc = func.getLoc();
  unsigned p = config.stages;
  bool training = options.mode == PlanMode::Training;
  int64_t m = training ? options.microbatches : 1;
  ArrayRef<int64_t> grid = options.gridShape;
  if (p < 2)
    return emitError(loc) << "a pipeline needs at least 2 stages, got " << p;
  if (grid.empty() || grid[0] % p != 0)
    return emitError(loc) << "pipeline stages take slabs of grid axis 0: " << p
                          << " stages do not divide axis 0 of the grid "
                          << formatGridShape(grid);
  bool interleaved = config.schedule == PipelineSchedule::Interleaved;
  unsigned v = interleaved ? config.chunks : 1;
  if (interleaved && v < 2)
    return emitError(loc) << "the interleaved schedule needs at least 2 "
                             "model chunks per device, got "
                          << v;
  if (!interleaved && v != 1)
    return emitError(loc) << "only the interleaved schedule has model chunks ("
                          << v << " requested with "
                          << stringifyPipelineSchedule(config.schedule) << ")";
  if (!training && config.schedule != PipelineSchedule::GPipe)
    return emitError(loc) << "an inference pipeline runs forwards only: use "
                             "the gpipe schedule, not "
                          << stringifyPipelineSchedule(config.schedule);

  // The schedule with unit times, checked before the program is built (a
  // microbatch count the schedule cannot run fails at once).
  PipelineProblem unit;
  unit.schedule = config.schedule;
  unit.stages = p;
  unit.microbatches = unsigned(m);
  unit.chunks = v;
  unit.forwardOnly = !training;
  unit.forward.assign(p * v, 1.0);
  unit.transfer.assign(p * v, 0.0);
  if (training)
    unit.backward.assign(p * v, kBackwardComputeFactor);
  if (config.schedule == PipelineSchedule::ZeroBubbleH1) {
    unit.backward.assign(p, 1.0);
    unit.weightGrad.assign(p, 1.0);
  }
  if (std::string bad = checkPipelineProblem(unit); !bad.empty())
    return emitError(loc) << "pipeline schedule: " << bad;

  SmallVector<int64_t> slabGrid(grid.begin(), grid.end());
  slabGrid[0] = grid[0] / p;
  int64_t slabDevices = 1;
  for (int64_t size : slabGrid)
    slabDevices *= size;
  const AxisLink *link =
      options.cluster.axes.empty() ? nullptr : &options.cluster.axes[0];
  int64_t slabRows = slabGrid[0];

  // The devices of each slab: with device classes, the classes its rows
  // span, combined into the slowest and smallest (ClusterSpec::
  // getAxis0Rows); slabs of the same classes share their stage plans.
  bool heterogeneous = options.cluster.hasDeviceClasses();
  if (std::string error;
      failed(checkDeviceClasses(options.cluster, grid, error)))
    return emitError(loc) << error;
  std::vector<ClusterSpec> slabKinds;
  std::vector<unsigned> kindOf(p, 0);
  {
    std::map<std::pair<unsigned, unsigned>, unsigned> kindIndex;
    for (unsigned d = 0; d < p; ++d) {
      int64_t begin = d * slabRows, end = (d + 1) * slabRows;
      std::pair<unsigned, unsigned> span =
          heterogeneous ? options.cluster.getClassSpan(begin, end)
                        : std::pair<unsigned, unsigned>{0, 0};
      auto [it, inserted] = kindIndex.try_emplace(span, slabKinds.size());
      if (inserted)
        slabKinds.push_back(options.cluster.getAxis0Rows(begin, end));
      kindOf[d] = it->second;
    }
  }
  // 1. Cut points, from the program on the first kind of slab (its
  // compute floors are the bounds' below).
  AutoPlanOptions graphOptions = options;
  graphOptions.gridShape = slabGrid;
  graphOptions.cluster = slabKinds[0];
  StrategyGraph graph(func, graphOptions);
  if (failed(graph.build()))
    return failure();
  FailureOr<CutPoints> cutPoints = findCutPoints(graph, p, loc);
  if (failed(cutPoints))
    return failure();
  CutPoints cuts = *cutPoints;
  unsigned numBlocks = cuts.blocks;
  // Megatron-LM's rule: the interleaved schedule cuts the blocks evenly into
  // P x v virtual stages.
  if (interleaved && numBlocks % (p * v) != 0)
    return emitError(loc) << "the interleaved schedule cuts the " << numBlocks
                          << " repeated blocks evenly into " << p
                          << " stages x " << v << " chunks = " << p * v
                          << " virtual stages, and " << p * v
                          << " does not divide " << numBlocks;

  // 2. Microbatches in flight per stage: the schedule with unit times
  // (checked before the program is built above).
  PipelineResult unitRun = simulatePipeline(unit);
  std::vector<unsigned> inFlight(p, 1);
  if (training)
    for (unsigned s = 0; s < p; ++s)
      inFlight[s] = std::max(1u, unitRun.peakInFlight[s]);

  auto limitOf = [&](unsigned d) { return slabKinds[kindOf[d]].memoryBytes; };

  // Compute floors, for the bounds with the bubble in them (only under a
  // finite cutoff, which they sharpen). Per kind of slab, the least forward
  // seconds of the compute ops at program positions [0, pos) on that slab
  // (StrategyGraph::getComputeFloor: each op's FLOP term under its fastest
  // strategy, with no communication), scaled down by 1e-9 against rounding:
  // a stage of positions [a, b) has a forward of at least F = floor[b] -
  // floor[a] per microbatch, a backward of at least 2F (input and weight
  // gradients; with ZB-H1 at least F each) whatever its plan and
  // recomputation. `leastFloor` is the least over the kinds.
  bool bounded = config.boundOnly || config.probe ||
                 (config.stepCutoff >= 0 && std::isfinite(config.stepCutoff));
  // Whether a bound of `seconds` reaches the cutoff (none: never).
  auto reaches = [&](double seconds) {
    return config.stepCutoff >= 0 &&
           seconds > config.stepCutoff * (1 + 1e-6) + 1e-12;
  };
  // With boundOnly, the result holds nothing but the bound.
  auto boundResult = [&](double bound) {
    PipelinePlanResult result;
    result.stepLowerBound = bound;
    result.searchTimeSeconds = elapsed();
    return result;
  };
  std::vector<std::vector<double>> floors;
  std::vector<double> leastFloor;
  double leastOverhead = std::numeric_limits<double>::infinity();
  for (const ClusterSpec &kind : slabKinds)
    leastOverhead = std::min(leastOverhead, kind.stepOverhead);
  if (bounded) {
    for (auto [index, kind] : llvm::enumerate(slabKinds)) {
      AutoPlanOptions kindOptions = graphOptions;
      kindOptions.cluster = kind;
      std::optional<StrategyGraph> other;
      if (index > 0) {
        other.emplace(func, kindOptions);
        if (failed(other->build()))
          return failure();
      }
      const StrategyGraph &slab = index > 0 ? *other : graph;
      std::vector<double> prefix(slab.sequence.size() + 1, 0.0);
      for (auto [pos, node] : llvm::enumerate(slab.sequence))
        prefix[pos + 1] = prefix[pos] + slab.getComputeFloor(node) * (1 - 1e-9);
      if (leastFloor.empty())
        leastFloor = prefix;
      for (size_t pos = 0; pos < prefix.size(); ++pos)
        leastFloor[pos] = std::min(leastFloor[pos], prefix[pos]);
      floors.push_back(std::move(prefix));
    }
  }
  // A pipeline problem with each virtual stage's floors: `range(i)` gives
  // virtual stage i's program positions and `floorOf(i)` its prefix sums.
  auto floorProblem =
      [&](llvm::function_ref<std::pair<unsigned, unsigned>(unsigned)> range,
          llvm::function_ref<const std::vector<double> &(unsigned)> floorOf) {
        PipelineProblem pb = unit;
        for (unsigned i = 0; i < p * v; ++i) {
          auto [begin, end] = range(i);
          const std::vector<double> &prefix = floorOf(i);
          double f = end > begin ? prefix[end] - prefix[begin] : 0.0;
          pb.forward[i] = f;
          if (!training)
            continue;
          bool zb = config.schedule == PipelineSchedule::ZeroBubbleH1;
          pb.backward[i] = zb ? f : kBackwardComputeFactor * f;
          if (zb)
            pb.weightGrad[i] = f;
        }
        return pb;
      };

  // 3. Stage candidates, planned once each (and kept from one call to the
  // next with a cache).
  PipelineSearchCache ownCache;
  PipelineSearchCache::Impl &state =
      config.cache ? *config.cache->impl : *ownCache.impl;
  {
    std::tuple<unsigned, PipelineSchedule, unsigned, int64_t> owner{
        p, config.schedule, v, m};
    if (state.owner && *state.owner != owner)
      return emitError(loc) << "internal error: a pipeline search cache is "
                               "used with another configuration";
    state.owner = owner;
  }
  std::map<StageKey, std::unique_ptr<StageEval>> &evals = state.evals;
  unsigned &solved = state.solved;
  unsigned &repriced = state.repriced;
  // Stage plans not searched to the end: none is faster than the cutoff
  // (`cutByLead` of them not searched at all: their lead reaches it).
  unsigned &cutShort = state.cutShort, &cutByLead = state.cutByLead;
  unsigned &splitBounds = state.splitBounds;
  bool cutoff = config.stepCutoff >= 0;
  auto cutoffError = [&]() {
    return emitError(loc) << kNoPlanUnderCutoff
                          << describeCutoff(config.stepCutoff) << " with " << p
                          << " pipeline stages: ";
  };
  auto &memos = state.memos;
  auto &reshardCaches = state.reshardCaches;
  if (reshardCaches.empty())
    for (const ClusterSpec &kind : slabKinds)
      reshardCaches.push_back(
          std::make_unique<ReshardCostCache>(slabGrid, kind));
  auto memoStats = [&] {
    std::tuple<unsigned, unsigned, unsigned> stats{0, 0, 0};
    for (const auto &[key, memo] : memos) {
      std::get<0>(stats) += memo.reused;
      std::get<1>(stats) += memo.pruned;
      std::get<2>(stats) += memo.bounded;
    }
    return stats;
  };
  // `lead`: a lower bound on what any pipeline holding the candidate adds
  // to its own step (getMakespanLead with the other stages' floors), so
  // that it is searched under the cutoff less the lead.
  auto plan = [&](unsigned k, bool first, bool last, unsigned copies,
                  unsigned kind, double lead) -> StageEval & {
    StageKey key{k, first, last, copies, kind};
    auto it = evals.find(key);
    if (it != evals.end())
      return *it->second;
    auto eval = std::make_unique<StageEval>();
    StageEval &e = *eval;
    evals.emplace(key, std::move(eval));
    // Its lead alone reaches the cutoff: no pipeline holding it is faster.
    if (bounded && reaches(lead)) {
      e.error = (kNoPlanUnderCutoff + describeCutoff(config.stepCutoff) +
                 llvm::formatv(": any pipeline holding the stage adds at "
                               "least {0:e3} s to its own step",
                               lead)
                     .str())
                    .str();
      ++cutShort;
      ++cutByLead;
      return e;
    }
    // A canonical position: identical blocks make every position alike.
    unsigned firstBlock = first ? 0 : last ? numBlocks - k : 1;
    if (!first && !last && firstBlock + k > numBlocks - 1) {
      e.error = "no interior position holds " + std::to_string(k) + " blocks";
      return e;
    }
    SmallVector<unsigned> positions;
    unsigned begin = first ? 0 : cuts.blockBegin(firstBlock);
    unsigned end = last ? cuts.numOps : cuts.blockBegin(firstBlock + k);
    for (unsigned pos = begin; pos < end; ++pos)
      positions.push_back(pos);
    SmallVector<Value> received;
    e.module = extractStage(graph, positions, received);
    e.firstOp = graph.nodes[graph.sequence[begin]].name;
    e.lastOp = graph.nodes[graph.sequence[end - 1]].name;
    for (Value v : received)
      e.receivedBytes +=
          pricedBytes(cast<RankedTensorType>(v.getType()), options.precision) /
          double(slabDevices);
    AutoPlanOptions stageOptions = options;
    stageOptions.gridShape = slabGrid;
    stageOptions.activationCopies = copies;
    stageOptions.cluster = slabKinds[kind];
    // With interleaving, each chunk plans within its share of the device's
    // memory (the device holds the sum of its chunks' peaks).
    if (interleaved && stageOptions.cluster.memoryBytes > 0)
      stageOptions.cluster.memoryBytes /= int64_t(v);
    stageOptions.singleBlockStage = k == 1;
    stageOptions.progress = nullptr;
    stageOptions.stepCutoff =
        config.stepCutoff < 0 ? -1.0 : std::max(0.0, config.stepCutoff - lead);
    stageOptions.memo = &memos[{k, first, last, kind}];
    stageOptions.reshardCache = reshardCaches[kind].get();
    if (options.progress)
      *options.progress << llvm::formatv(
          "autopar: [{0:f1} s] planning a {1} stage of {2} blocks on grid "
          "{3} ({4} microbatches in flight){5}\n",
          elapsed(),
          first  ? "first"
          : last ? "last"
                 : "middle",
          k, formatGridShape(slabGrid), copies,
          heterogeneous ? " of class " + slabKinds[kind].className
                        : std::string());
    std::string why;
    FailureOr<PlanPrediction> planned = failure();
    {
      ScopedDiagnosticHandler quiet(module.getContext(), [&](Diagnostic &d) {
        if (d.getSeverity() == DiagnosticSeverity::Error && why.empty())
          why = d.str();
        return success();
      });
      planned = planStage(*e.module, stageOptions);
    }
    ++solved;
    if (failed(planned)) {
      e.error = why.empty() ? "the stage could not be planned" : why;
      if (StringRef(e.error).starts_with(kNoPlanUnderCutoff))
        ++cutShort;
      return e;
    }
    e.predicted = *planned;
    AutoPlanOptions at = stageOptions;
    at.searchRecompute = false;
    at.recompute = planned->recompute;
    FailureOr<std::unique_ptr<AnnotatedPlanPricer>> pricer =
        AnnotatedPlanPricer::create(*e.module, at);
    if (failed(pricer)) {
      e.error = "internal error: the stage plan could not be priced again";
      return e;
    }
    e.pricer = std::move(*pricer);
    if (!training) {
      e.forward = planned->stepTime;
    } else {
      // The price is linear in the microbatches: per-microbatch work plus
      // the once-per-step gradient reductions.
      PlanPrediction one = e.pricer->predict(1, copies);
      PlanPrediction two = e.pricer->predict(2, copies);
      double perMicrobatch = two.stepTime - one.stepTime;
      e.perStep = one.stepTime - perMicrobatch;
      double predicted = double(m) * perMicrobatch + e.perStep;
      if (std::fabs(predicted - planned->stepTime) >
          1e-6 * planned->stepTime + 1e-12) {
        e.error = llvm::formatv("internal error: the stage's price is not "
                                "linear in its microbatches ({0} s at {1}, "
                                "{2} s extrapolated)",
                                planned->stepTime, m, predicted)
                      .str();
        return e;
      }
      double recompute = one.recomputeTime;
      e.forward = (perMicrobatch - recompute) / (1 + kBackwardComputeFactor);
      e.backward = perMicrobatch - e.forward;
    }
    e.priced = stageOptions;
    e.planned = true;
    e.searched = true;
    return e;
  };
  // A stage holding c microbatches: a plan searched with fewer, priced
  // again with c, when it still fits (holding more only removes plans, so
  // the plan optimal for fewer is then optimal for c too); otherwise a plan
  // searched with c. Nothing is searched for a count no stage holds: the
  // stages are evaluated in increasing order of their microbatches in
  // flight, so that the plans for fewer are there to try.
  auto evaluateWith = [&](unsigned k, bool first, bool last, unsigned copies,
                          unsigned kind, double lead) -> StageEval & {
    StageKey key{k, first, last, copies, kind};
    if (auto it = evals.find(key); it != evals.end())
      return *it->second;
    // The plans searched for the same stage with fewer microbatches, fewest
    // first (its plan is the fastest of them).
    StageEval *fits = nullptr;
    FailureOr<PlanPrediction> again = failure();
    for (auto &[other, eval] : evals) {
      auto [ok, ofirst, olast, ocopies, okind] = other;
      if (ok != k || ofirst != first || olast != last || okind != kind ||
          ocopies >= copies || !eval->planned || !eval->searched)
        continue;
      again = eval->pricer->predict(eval->priced.microbatches, copies);
      if (again->fits) {
        fits = eval.get();
        break;
      }
    }
    if (!fits)
      return plan(k, first, last, copies, kind, lead);
    StageEval &base = *fits;
    AutoPlanOptions at = base.priced;
    at.activationCopies = copies;
    at.searchRecompute = false;
    at.recompute = base.predicted.recompute;
    auto eval = std::make_unique<StageEval>();
    StageEval &e = *eval;
    e.planned = true;
    e.module = base.module->clone();
    e.predicted = *again;
    e.predicted.memoryBinds = base.predicted.memoryBinds;
    e.forward = base.forward;
    e.backward = base.backward;
    e.perStep = base.perStep;
    e.priced = at;
    e.receivedBytes = base.receivedBytes;
    e.firstOp = base.firstOp;
    e.lastOp = base.lastOp;
    ++repriced;
    return *evals.emplace(key, std::move(eval)).first->second;
  };
  auto evaluate = [&](unsigned k, unsigned s, double lead) -> StageEval & {
    return evaluateWith(k, s == 0, s + 1 == p, inFlight[s], kindOf[s], lead);
  };
  auto receive = [&](const StageEval &e) {
    double bytes = e.receivedBytes;
    return link && link->bandwidth > 0 && bytes > 0
               ? link->latency + bytes / link->bandwidth
               : 0.0;
  };
  if (interleaved) {
    // Megatron's interleaved 1F1B: P x v virtual stages of k blocks each,
    // virtual stage i on device i % P (chunk i / P), planned on that
    // device's slab with the microbatches it holds at once (the unit
    // simulation's peak per virtual stage) and 1/v of the device's memory.
    // A device's memory is the sum of its chunks' peaks: an upper bound, as
    // if every chunk peaked at once.
    unsigned n = p * v, k = numBlocks / n;
    auto copiesOf = [&](unsigned i) {
      return std::max(1u, unitRun.peakInFlightPerVStage[i]);
    };
    // Under a finite cutoff, the bounds with the bubble in them: no step
    // is below the busiest device's fill, work and drain with every chunk
    // at its floor, and each chunk is searched under the cutoff less its
    // lead (the least over the chunks of its kind, first or last: see
    // below for the non-interleaved stages).
    std::vector<double> lead(n, 0.0);
    // Every chunk at its compute floor, and the bound with it.
    PipelineProblem floorPb = unit;
    double floorBound = 0;
    if (bounded) {
      floorPb = floorProblem(
          [&](unsigned i) -> std::pair<unsigned, unsigned> {
            return {i == 0 ? 0 : cuts.blockBegin(i * k),
                    i + 1 == n ? cuts.numOps : cuts.blockBegin((i + 1) * k)};
          },
          [&](unsigned i) -> const std::vector<double> & {
            return floors[kindOf[i % p]];
          });
      for (unsigned d = 0; d < p; ++d)
        floorBound = std::max(floorBound, getMakespanLowerBound(floorPb, d));
      floorBound += leastOverhead;
      if (config.boundOnly)
        return boundResult(floorBound);
      if (reaches(floorBound))
        return cutoffError()
               << "no step is below " << floorBound
               << " s (the fill, work and drain of the busiest device "
                  "with every chunk at its compute floor)";
      for (unsigned i = 0; i < n; ++i)
        lead[i] = getMakespanLead(floorPb, i);
      for (unsigned i = 0; i < n; ++i)
        for (unsigned j = 0; j < n; ++j)
          if ((i == 0) == (j == 0) && (i + 1 == n) == (j + 1 == n) &&
              kindOf[i % p] == kindOf[j % p])
            lead[i] = std::min(lead[i], getMakespanLead(floorPb, j));
    }
    std::vector<StageEval *> chunk(n, nullptr);
    // The step with the chunks planned so far at their own times (forward,
    // backward, per-step reductions, and the transfer into a planned chunk)
    // and the others at their compute floors. Each device runs its ops in an
    // order fixed by p, v and m alone, and each op starts at the latest of
    // its device's previous op's end and its inputs' arrivals: every op's
    // end is a max-plus expression of the times, so the simulated makespan
    // only grows with them (PipelineSimulatorTest checks it). The floors
    // and the missing transfers and reductions are at most what the chunks
    // will have, so no step of this pipeline is below this one.
    auto partialStep = [&]() {
      PipelineProblem pb = floorPb;
      std::vector<double> reductions(p, 0.0);
      for (unsigned i = 0; i < n; ++i) {
        if (!chunk[i])
          continue;
        pb.forward[i] = chunk[i]->forward;
        pb.backward[i] = chunk[i]->backward;
        reductions[i % p] += chunk[i]->perStep;
        if (i > 0)
          pb.transfer[i - 1] = receive(*chunk[i]);
      }
      return simulatePipeline(pb).makespan +
             *std::max_element(reductions.begin(), reductions.end());
    };
    // Bounds taken while the chunks are planned cost a simulation each:
    // after the first chunk, and after each chunk that took a search.
    bool boundChunks =
        bounded && double(n) * double(m) * 2 <= kSplitBoundEvents;
    // The first chunk first (it holds the prefix and fills and drains every
    // other device), then the others in increasing order of their
    // microbatches in flight, so that a plan searched with fewer is there
    // to be priced again for more (evaluateWith).
    std::vector<unsigned> chunkOrder(n);
    std::iota(chunkOrder.begin(), chunkOrder.end(), 0u);
    std::stable_sort(chunkOrder.begin(), chunkOrder.end(),
                     [&](unsigned a, unsigned b) {
                       if ((a == 0) != (b == 0))
                         return a == 0;
                       return copiesOf(a) < copiesOf(b);
                     });
    for (auto [index, i] : llvm::enumerate(chunkOrder)) {
      unsigned solvedBefore = solved;
      chunk[i] = &evaluateWith(k, i == 0, i + 1 == n, copiesOf(i),
                               kindOf[i % p], lead[i]);
      // A chunk's own step bounds the pipeline's from below.
      if (cutoff && !chunk[i]->planned)
        return cutoffError() << "virtual stage " << i << " has none ("
                             << chunk[i]->error << ")";
      // A probe stops at the first chunk that took a search (not one
      // planned by an earlier call), unless it is the last.
      bool probe = config.probe && solved != solvedBefore && index + 1 < n;
      if (probe && !chunk[i]->planned)
        return emitError(loc)
               << "virtual stage " << i << " of the interleaved schedule (" << k
               << " blocks on grid " << formatGridShape(slabGrid)
               << ") could not be planned: " << chunk[i]->error;
      if (!chunk[i]->planned || index + 1 == n ||
          !(probe || (boundChunks && (index == 0 || solved != solvedBefore))))
        continue;
      ++splitBounds;
      double partial = partialStep();
      if (reaches(partial))
        return cutoffError()
               << "with " << index + 1 << " of the " << n
               << " virtual stages planned and the others at their compute "
                  "floors, no step is below "
               << partial << " s";
      if (probe)
        return boundResult(std::max(floorBound, partial));
    }
    for (unsigned i = 0; i < n; ++i)
      if (!chunk[i]->planned)
        return emitError(loc)
               << "virtual stage " << i << " of the interleaved schedule (" << k
               << " blocks on grid " << formatGridShape(slabGrid)
               << ") could not be planned: " << chunk[i]->error;
    PipelineProblem problem = unit;
    for (unsigned i = 0; i < n; ++i) {
      problem.forward[i] = chunk[i]->forward;
      problem.backward[i] = chunk[i]->backward;
      problem.transfer[i] = i + 1 < n ? receive(*chunk[i + 1]) : 0;
    }
    PipelineResult run = simulatePipeline(problem);
    double work = 0, serial = 0, perStep = 0;
    std::vector<int64_t> devicePeak(p, 0);
    for (unsigned d = 0; d < p; ++d) {
      double busy = 0, reductions = 0;
      for (unsigned c = 0; c < v; ++c) {
        const StageEval &e = *chunk[c * p + d];
        busy += (e.forward + e.backward) * double(m);
        reductions += e.perStep;
        devicePeak[d] += e.predicted.peakMemoryBytes;
      }
      work = std::max(work, busy);
      perStep = std::max(perStep, reductions);
    }
    for (unsigned i = 0; i < n; ++i)
      serial +=
          (chunk[i]->forward + chunk[i]->backward + 2 * problem.transfer[i]) *
          double(m);
    if (run.makespan < work * (1 - 1e-9) || run.makespan > serial * (1 + 1e-9))
      return emitError(loc)
             << "internal error: the pipeline simulator priced an interleaved "
                "step at "
             << run.makespan << " s, outside [" << work << ", " << serial
             << "] s";
    if (cutoff && !std::isinf(config.stepCutoff) &&
        run.makespan + perStep > config.stepCutoff * (1 + 1e-6) + 1e-12)
      return cutoffError() << "the interleaved schedule takes "
                           << run.makespan + perStep << " s";
    PipelinePlanResult result;
    PlanPrediction &total = result.predicted;
    total.stepTime = run.makespan + perStep;
    result.bubbleFraction = run.bubbleFraction;
    unsigned peakDevice = 0, busiest = 0;
    for (unsigned d = 0; d < p; ++d) {
      if (devicePeak[d] > devicePeak[peakDevice])
        peakDevice = d;
      if (run.busy[d] > run.busy[busiest])
        busiest = d;
    }
    total.peakMemoryBytes = devicePeak[peakDevice];
    total.peakAt = "device row " + std::to_string(peakDevice) + " (" +
                   std::to_string(v) + " chunks)";
    for (unsigned c = 0; c < v; ++c) {
      const PlanPrediction &at = chunk[c * p + peakDevice]->predicted;
      total.parameterStateBytes += at.parameterStateBytes;
      total.activationBytes += at.activationBytes;
      const PlanPrediction &busy = chunk[c * p + busiest]->predicted;
      total.computeTime += busy.computeTime;
      total.commTime += busy.commTime;
      total.recomputeTime += busy.recomputeTime;
    }
    total.recompute = chunk[busiest]->predicted.recompute;
    // Each device row against its own class's memory.
    for (unsigned d = 0; d < p; ++d) {
      int64_t limit = limitOf(d);
      if (limit <= 0 || devicePeak[d] <= limit)
        continue;
      total.fits = false;
      InFlightDiagnostic diag = emitError(loc)
                                << "the interleaved schedule with " << p
                                << " stages x " << v
                                << " chunks does not fit: device row " << d;
      if (heterogeneous)
        diag << " (class " << slabKinds[kindOf[d]].className << ")";
      return diag << " holds " << devicePeak[d] << " bytes ("
                  << formatByteSize(devicePeak[d]) << ") of " << limit
                  << " per device";
    }
    json::Array stageList;
    for (unsigned i = 0; i < n; ++i) {
      const StageEval &e = *chunk[i];
      unsigned d = i % p;
      PipelineStage st;
      st.firstBlock = i * k;
      st.numBlocks = k;
      st.hasPrefix = i == 0;
      st.hasSuffix = i + 1 == n;
      st.firstOp = e.firstOp;
      st.lastOp = e.lastOp;
      st.slabBegin = d * slabRows;
      st.slabEnd = (d + 1) * slabRows;
      st.grid = slabGrid;
      st.forward = e.forward;
      st.backward = e.backward;
      st.perStep = e.perStep;
      st.transfer = problem.transfer[i];
      st.inFlight = std::max(1u, unitRun.peakInFlightPerVStage[i]);
      st.predicted = e.predicted;
      PlanMetadata meta;
      meta.strategy = "auto";
      meta.mode = stringifyPlanMode(options.mode).str();
      addStageReport(*e.module, e.priced, e.predicted, meta);
      st.plan = buildPlanJson(*e.module, meta);
      json::Object entry = stageEntry(st, i, run.busy[d], run.finish[d]);
      entry["memory_limit_bytes"] = limitOf(d);
      if (heterogeneous)
        entry["device_class"] = slabKinds[kindOf[d]].className;
      entry["device"] = d;
      entry["chunk"] = i / p;
      entry["device_peak_memory_bytes"] = devicePeak[d];
      stageList.push_back(std::move(entry));
      result.stages.push_back(std::move(st));
    }
    result.layout = formatLayout(result.stages);
    result.searchTimeSeconds = elapsed();
    result.report = json::Object{
        {"stages", p},
        {"chunks", v},
        {"schedule", "interleaved"},
        {"microbatches", m},
        {"bubble_fraction", result.bubbleFraction},
        {"makespan_s", run.makespan},
        {"layout", result.layout},
        {"repeated_blocks", numBlocks},
        {"block_range", json::Array{k, k}},
        {"stage_plans_solved", solved},
        {"stage_plans_repriced", repriced},
        {"stage_plans_cut_short", cutShort},
        {"stage_plans_cut_by_bubble", cutByLead},
        {"split_bounds_with_stages_planned", splitBounds},
        {"unconstrained_solves_reused", std::get<0>(memoStats())},
        {"constrained_solves_pruned", std::get<1>(memoStats())},
        {"constrained_solves_bounded", std::get<2>(memoStats())},
        {"splits_simulated", 1},
        {"split_search", "none: the interleaved schedule cuts the blocks "
                         "evenly (Megatron-LM's rule)"},
        {"search_time_s", result.searchTimeSeconds},
        {"space",
         llvm::formatv("{0} virtual stages of {1} blocks, virtual stage i on "
                       "device row i mod {2} (a slab of {3} rows of grid axis "
                       "0), each planned by the intra-stage search; a "
                       "device's memory is the sum of its {4} chunks' peaks",
                       n, k, p, slabRows, v)
             .str()},
        {"stage_list", std::move(stageList)}};
    json::Object schedule = pipelineScheduleJson(problem, run);
    if (json::Value *events = schedule.get("events"))
      result.report["events"] = std::move(*events);
    if (options.progress)
      *options.progress << llvm::formatv(
          "autopar: [{0:f1} s] interleaved pipeline of {1} stages x {2} "
          "chunks ({3}): step {4:e3} s, bubble {5:p}, peak {6} per device\n",
          elapsed(), p, v, result.layout, total.stepTime, result.bubbleFraction,
          formatByteSize(total.peakMemoryBytes));
    return result;
  }

  // The block counts tried: within `blockSlack` of an even split; with
  // device classes, within `blockSlack` of each stage's share in proportion
  // to its slab's matmul rate, or to its memory.
  unsigned kMin = numBlocks, kMax = 1;
  auto widen = [&](double share) {
    double lo = std::floor(share + 1e-9), hi = std::ceil(share - 1e-9);
    kMin = std::min<unsigned>(
        kMin, lo > config.blockSlack ? unsigned(lo) - config.blockSlack : 1u);
    kMax = std::max<unsigned>(kMax, unsigned(hi) + config.blockSlack);
  };
  widen(double(numBlocks) / p);
  if (heterogeneous) {
    std::string dtype = options.precision == PlanPrecision::Model
                            ? std::string()
                            : stringifyPlanPrecision(options.precision).str();
    auto rateOf = [&](unsigned s) {
      return slabKinds[kindOf[s]].getFlops(OpClass::MatMul, dtype);
    };
    double rates = 0, memory = 0;
    for (unsigned s = 0; s < p; ++s) {
      rates += rateOf(s);
      memory += double(limitOf(s));
    }
    for (unsigned s = 0; s < p; ++s) {
      widen(numBlocks * rateOf(s) / rates);
      if (memory > 0)
        widen(numBlocks * double(limitOf(s)) / memory);
    }
  }
  kMin = std::max(kMin, 1u);
  kMax = std::min(kMax, numBlocks - (p - 1));
  // Calls `each(begin, end)` with the program positions [begin, end) of
  // stage s holding k blocks, once per number of blocks before it that a
  // split can have (from the fewest to the most the other stages allow).
  auto forEachPlacement =
      [&](unsigned s, unsigned k,
          llvm::function_ref<void(unsigned begin, unsigned end)> each) {
        long long lo = std::max<long long>((long long)s * kMin,
                                           (long long)numBlocks - k -
                                               (long long)(p - 1 - s) * kMax);
        long long hi = std::min<long long>((long long)s * kMax,
                                           (long long)numBlocks - k -
                                               (long long)(p - 1 - s) * kMin);
        for (long long before = lo; before <= hi; ++before)
          each(s == 0 ? 0 : cuts.blockBegin(unsigned(before)),
               s + 1 == p ? cuts.numOps
                          : cuts.blockBegin(unsigned(before) + k));
      };
  // Under a finite cutoff, the bounds with the bubble in them. For stage s
  // with k blocks, the least over the splits holding it of its lead
  // (`lead`) or of its device's makespan bound, the other stages at their
  // floors.
  auto splitBound = [&](unsigned s, unsigned k, bool lead) {
    double least = std::numeric_limits<double>::infinity();
    forEachPlacement(s, k, [&](unsigned begin, unsigned end) {
      PipelineProblem pb = floorProblem(
          [&](unsigned i) -> std::pair<unsigned, unsigned> {
            if (i == s)
              return {begin, end};
            if (i == 0)
              return {0, begin};
            if (i == s + 1)
              return {end, cuts.numOps};
            return {0, 0};
          },
          [&](unsigned i) -> const std::vector<double> & {
            return i == s ? floors[kindOf[s]] : leastFloor;
          });
      least = std::min(least, lead ? getMakespanLead(pb, s)
                                   : getMakespanLowerBound(pb, s));
    });
    return least;
  };
  // The least forward floor of stage s with k blocks over the splits that
  // can hold it, for the bound on the splits while the stages are planned.
  auto stageFloor = [&](unsigned s, unsigned k) {
    const std::vector<double> &prefix = floors[kindOf[s]];
    double least = std::numeric_limits<double>::infinity();
    forEachPlacement(s, k, [&](unsigned begin, unsigned end) {
      least = std::min(least, prefix[end] - prefix[begin]);
    });
    return least;
  };
  // The lead each candidate is searched with: the least over the stage
  // positions of the same block count, first or last, and kind of slab,
  // whatever their microbatches in flight. Sharing it with the positions
  // that hold more keeps the plan searched for the fewest in flight there
  // to be priced again for the others (evaluateWith): a tighter cutoff
  // there would leave each of them to a search of its own.
  std::vector<std::vector<double>> leadAt(p,
                                          std::vector<double>(kMax + 1, 0.0));
  double floorBound = 0;
  if (bounded) {
    // No step is below the least, over the splits, of any stage's device
    // bound plus the least per-step overhead.
    for (unsigned s = 0; s < p; ++s) {
      double least = std::numeric_limits<double>::infinity();
      for (unsigned k = kMin; k <= kMax; ++k) {
        least = std::min(least, splitBound(s, k, false));
        leadAt[s][k] = splitBound(s, k, true);
      }
      floorBound = std::max(floorBound, least);
    }
    floorBound += leastOverhead;
    if (config.boundOnly)
      return boundResult(floorBound);
    if (reaches(floorBound))
      return cutoffError()
             << "no split's step is below " << floorBound
             << " s (the fill, work and drain of a stage's device with "
                "every stage at its compute floor)";
    std::vector<std::vector<double>> keyed = leadAt;
    for (unsigned s = 0; s < p; ++s)
      for (unsigned t = 0; t < p; ++t)
        if ((s == 0) == (t == 0) && (s + 1 == p) == (t + 1 == p) &&
            kindOf[s] == kindOf[t])
          for (unsigned k = kMin; k <= kMax; ++k)
            keyed[s][k] = std::min(keyed[s][k], leadAt[t][k]);
    leadAt = std::move(keyed);
  }
  // Every candidate of every stage position.
  std::vector<std::vector<StageEval *>> table(
      p, std::vector<StageEval *>(kMax + 1, nullptr));
  // The first stage first: its forward fills and its backward drains every
  // other device's step, so the bounds below are tightest with it planned
  // (it holds the prefix, no other position shares its candidates); then
  // the others in increasing order of their microbatches in flight.
  std::vector<unsigned> order(p);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](unsigned a, unsigned b) {
    if ((a == 0) != (b == 0))
      return a == 0;
    return inFlight[a] < inFlight[b];
  });
  // The splits over the stages' candidates; a stage not planned yet (only
  // while the stages are planned, under a finite cutoff) at its compute
  // floor, with no transfer and no per-step time.
  SplitProblem split;
  split.stages = p;
  split.blocks = numBlocks;
  split.kMin = kMin;
  split.kMax = kMax;
  split.schedule = unit;
  split.cost = [&](unsigned s, unsigned k) {
    StageCost c;
    if (!table[s][k]) {
      assert(bounded && "a stage priced before it was planned");
      double f = stageFloor(s, k);
      c.feasible = true;
      c.forward = f;
      c.backward = training ? kBackwardComputeFactor * f : 0;
      return c;
    }
    const StageEval &e = *table[s][k];
    c.feasible = e.planned && e.predicted.fits;
    c.forward = e.forward;
    c.backward = training ? e.backward : 0;
    c.perStep = e.perStep;
    c.receive = receive(e);
    return c;
  };
  // The bound on the splits with the stages planned so far: a split's step
  // only grows with its stages' times under a schedule of fixed per-device
  // order (GPipe, 1F1B: the simulated makespan is a max-plus function of
  // them; ZB-H1 places its weight gradients by time, so it is left out),
  // so the best split with the stages not planned yet at their floors is
  // no slower than the best split at the end. Only where every split is
  // simulated (the dynamic program is no bound) and the simulations stay
  // cheap.
  unsigned long splitsToBound = 0;
  if (bounded && config.schedule != PipelineSchedule::ZeroBubbleH1) {
    unsigned long splits = countSplits(split);
    if (splits <= split.exhaustiveLimit &&
        double(splits) * p * double(m) <= kSplitBoundEvents)
      splitsToBound = splits;
  }
  // The last stage's lead over the splits holding it, with the stages
  // planned so far at their own times and the others at their floors (its
  // candidates are its own, so a tighter lead holds for every use of them).
  auto tightenLastLead = [&]() {
    unsigned last = p - 1;
    std::vector<double> least(kMax + 1,
                              std::numeric_limits<double>::infinity());
    std::vector<unsigned> blocks(p, 0);
    std::function<void(unsigned, unsigned)> each = [&](unsigned s,
                                                       unsigned used) {
      if (s == p) {
        if (used != numBlocks)
          return;
        PipelineProblem pb = unit;
        for (unsigned i = 0; i < p; ++i) {
          StageCost c = split.cost(i, blocks[i]);
          if (i != last && !c.feasible)
            return;
          pb.forward[i] = c.forward;
          if (training)
            pb.backward[i] = c.backward;
          if (i > 0)
            pb.transfer[i - 1] = c.receive;
        }
        unsigned k = blocks[last];
        least[k] = std::min(least[k], getMakespanLead(pb, last));
        return;
      }
      for (unsigned k = kMin; k <= kMax && used + k <= numBlocks; ++k) {
        blocks[s] = k;
        each(s + 1, used + k);
      }
    };
    each(0, 0);
    for (unsigned k = kMin; k <= kMax; ++k)
      leadAt[last][k] = std::max(leadAt[last][k], least[k]);
  };
  for (auto [index, s] : llvm::enumerate(order)) {
    unsigned solvedBefore = solved;
    if (splitsToBound && index > 0 && s + 1 == p)
      tightenLastLead();
    bool any = false;
    for (unsigned k = kMin; k <= kMax; ++k) {
      table[s][k] = &evaluate(k, s, leadAt[s][k]);
      any |= table[s][k]->planned && table[s][k]->predicted.fits;
    }
    // Under a cutoff, a stage with no plan ends the search: its step bounds
    // any pipeline's from below (without one, every stage is planned for
    // the diagnostic).
    if (cutoff && !any)
      return cutoffError() << "stage " << s << " has none with " << kMin
                           << " to " << kMax << " blocks ("
                           << table[s][kMin]->error << ")";
    // A probe stops after the first stage position that took a search (not
    // planned by an earlier call), unless it is the last, with the bound
    // below if there is one (the floor bound otherwise).
    bool probe =
        config.probe && solved != solvedBefore && index + 1 < order.size();
    if (probe && !any)
      return emitError(loc)
             << "stage " << s << " has no plan that fits with " << kMin
             << " to " << kMax << " blocks (" << table[s][kMin]->error << ")";
    if (!splitsToBound || index + 1 == order.size()) {
      if (probe)
        return boundResult(floorBound);
      continue;
    }
    ++splitBounds;
    std::optional<SplitResult> partial = searchSplit(split);
    if (!partial || reaches(partial->step)) {
      if (!partial && !cutoff)
        return emitError(loc)
               << "no split of the " << numBlocks << " repeated blocks into "
               << p << " pipeline stages has a plan that fits for every stage";
      InFlightDiagnostic diag = cutoffError();
      diag << "with " << index + 1 << " of the " << p
           << " stages planned and the others at their compute floors, ";
      if (!partial)
        return diag << "no split has a plan for every stage";
      return diag << "no split's step is below " << partial->step << " s";
    }
    if (probe)
      return boundResult(std::max(floorBound, partial->step));
  }
  for (const auto &[key, e] : evals)
    if (!e->planned && StringRef(e->error).starts_with("internal error"))
      return emitError(loc) << e->error;

  // 4. The block counts (PipelineSplit.h), each split simulated.
  std::optional<SplitResult> best = searchSplit(split);
  if (best) {
    // The simulator against the bounds of any schedule: no faster than the
    // busiest stage's work, no slower than running every stage in turn.
    double work = 0, serial = 0;
    for (unsigned s = 0; s < p; ++s) {
      StageCost c = split.cost(s, best->blocks[s]);
      double transfer =
          s + 1 < p ? split.cost(s + 1, best->blocks[s + 1]).receive : 0;
      work = std::max(work, (c.forward + c.backward) * double(m));
      serial += (c.forward + c.backward + 2 * transfer) * double(m);
    }
    if (best->run.makespan < work * (1 - 1e-9) ||
        best->run.makespan > serial * (1 + 1e-9))
      return emitError(loc)
             << "internal error: the pipeline simulator priced a step at "
             << best->run.makespan << " s, outside [" << work << ", " << serial
             << "] s";
  }
  unsigned simulated = best ? best->simulated : 0;
  if (cutoff && !best)
    return cutoffError() << "no split has a plan for every stage";
  if (cutoff && !std::isinf(config.stepCutoff) &&
      best->step > config.stepCutoff * (1 + 1e-6) + 1e-12)
    return cutoffError() << "the best split takes " << best->step << " s";
  if (!best) {
    InFlightDiagnostic diag =
        emitError(loc) << "no split of the " << numBlocks
                       << " repeated blocks into " << p
                       << " pipeline stages of " << kMin << " to " << kMax
                       << " blocks fits in memory on slabs of grid "
                       << formatGridShape(slabGrid);
    int64_t smallest = -1;
    std::string why;
    for (const auto &[key, e] : evals) {
      if (e->planned &&
          (smallest < 0 || e->predicted.peakMemoryBytes < smallest))
        smallest = e->predicted.peakMemoryBytes;
      if (!e->planned && why.empty())
        why = e->error;
    }
    // The stages no block count fits, each against its own class's limit.
    std::string unfit;
    llvm::raw_string_ostream os(unfit);
    for (unsigned s = 0; s < p; ++s) {
      bool fits = false;
      for (unsigned k = kMin; k <= kMax; ++k)
        fits |= table[s][k]->planned && table[s][k]->predicted.fits;
      if (fits)
        continue;
      // The fewest blocks hold the least.
      const StageEval *fewest = table[s][kMin];
      os << "; stage " << s << " (rows [" << s * slabRows << ", "
         << (s + 1) * slabRows << ") of axis 0";
      if (heterogeneous)
        os << ", class " << slabKinds[kindOf[s]].className;
      os << ", limit " << limitOf(s) << " bytes) fits with no block count";
      if (fewest->planned)
        os << ": with " << kMin << " its peak is "
           << fewest->predicted.peakMemoryBytes << " bytes ("
           << formatByteSize(fewest->predicted.peakMemoryBytes) << ")";
      else
        os << ": " << fewest->error;
    }
    bool named = !unfit.empty();
    if (smallest >= 0 && !named)
      diag << "; the smallest stage peak reached is " << smallest << " bytes ("
           << formatByteSize(smallest) << ")";
    diag << unfit;
    if (!why.empty() && !named)
      diag << "; a stage failed: " << why;
    return failure();
  }

  // The result and its report.
  PipelinePlanResult result;
  result.predicted.stepTime = best->step;
  result.bubbleFraction = best->run.bubbleFraction;
  json::Array stageList;
  unsigned nextBlock = 0;
  double busiest = -1;
  for (unsigned s = 0; s < p; ++s) {
    StageEval *e = table[s][best->blocks[s]];
    PipelineStage st;
    st.firstBlock = nextBlock;
    st.numBlocks = best->blocks[s];
    nextBlock += st.numBlocks;
    st.hasPrefix = s == 0;
    st.hasSuffix = s + 1 == p;
    st.firstOp = e->firstOp;
    st.lastOp = e->lastOp;
    st.slabBegin = s * slabRows;
    st.slabEnd = (s + 1) * slabRows;
    st.grid = slabGrid;
    st.forward = e->forward;
    st.backward = e->backward;
    st.perStep = e->perStep;
    st.transfer = s + 1 < p ? receive(*table[s + 1][best->blocks[s + 1]]) : 0;
    st.inFlight = inFlight[s];
    st.predicted = e->predicted;
    PlanMetadata meta;
    meta.strategy = "auto";
    meta.mode = stringifyPlanMode(options.mode).str();
    addStageReport(*e->module, e->priced, e->predicted, meta);
    st.plan = buildPlanJson(*e->module, meta);
    PlanPrediction &total = result.predicted;
    if (e->predicted.peakMemoryBytes > total.peakMemoryBytes) {
      total.peakMemoryBytes = e->predicted.peakMemoryBytes;
      total.peakAt = "stage " + std::to_string(s) + ": " + e->predicted.peakAt;
      total.parameterStateBytes = e->predicted.parameterStateBytes;
      total.activationBytes = e->predicted.activationBytes;
    }
    if (best->run.busy[s] > busiest) {
      busiest = best->run.busy[s];
      total.computeTime = e->predicted.computeTime;
      total.commTime = e->predicted.commTime;
      total.recompute = e->predicted.recompute;
      total.recomputeTime = e->predicted.recomputeTime;
    }
    json::Object entry =
        stageEntry(st, s, best->run.busy[s], best->run.finish[s]);
    entry["memory_limit_bytes"] = limitOf(s);
    if (heterogeneous)
      entry["device_class"] = slabKinds[kindOf[s]].className;
    stageList.push_back(std::move(entry));
    result.stages.push_back(std::move(st));
  }
  // Each stage against its own slab's memory (its plan was searched within
  // it; a split is feasible only when every stage fits).
  result.predicted.fits = true;
  for (unsigned s = 0; s < p; ++s) {
    int64_t limit = limitOf(s);
    if (limit > 0 && result.stages[s].predicted.peakMemoryBytes > limit)
      return emitError(loc)
             << "internal error: stage " << s << " was chosen, and its peak of "
             << result.stages[s].predicted.peakMemoryBytes
             << " bytes exceeds its limit of " << limit;
  }
  result.layout = formatLayout(result.stages);
  result.searchTimeSeconds = elapsed();
  result.report = json::Object{
      {"stages", p},
      {"schedule", stringifyPipelineSchedule(config.schedule)},
      {"microbatches", m},
      {"bubble_fraction", result.bubbleFraction},
      {"makespan_s", best->run.makespan},
      {"layout", result.layout},
      {"repeated_blocks", numBlocks},
      {"block_range", json::Array{kMin, kMax}},
      {"stage_plans_solved", solved},
      {"stage_plans_repriced", repriced},
      {"stage_plans_cut_short", cutShort},
      {"stage_plans_cut_by_bubble", cutByLead},
      {"split_bounds_with_stages_planned", splitBounds},
      {"unconstrained_solves_reused", std::get<0>(memoStats())},
      {"constrained_solves_pruned", std::get<1>(memoStats())},
      {"constrained_solves_bounded", std::get<2>(memoStats())},
      {"splits_simulated", simulated},
      {"split_search", best->exhaustive
                           ? "exhaustive: every split simulated"
                           : "dynamic program per bound on the busiest "
                             "stage, each proposal simulated"},
      {"search_time_s", result.searchTimeSeconds},
      {"space",
       llvm::formatv("stages cut between repeated blocks, {0} to {1} blocks "
                     "each, the first also holding the ops before the "
                     "blocks and the last those after; each stage on a slab "
                     "of {2} rows of grid axis 0, planned by the intra-stage "
                     "search{3}",
                     kMin, kMax, slabRows,
                     heterogeneous
                         ? "; each slab priced with its device class (a slab "
                           "spanning classes with the slowest rates and "
                           "smallest memory of those it spans), the block "
                           "counts within the slack of each slab's share by "
                           "matmul rate and by memory"
                         : "")
           .str()},
      {"stage_list", std::move(stageList)}};
  // The simulated schedule, for the plan's picture.
  json::Object schedule = pipelineScheduleJson(best->problem, best->run);
  if (json::Value *events = schedule.get("events"))
    result.report["events"] = std::move(*events);
  if (options.progress)
    *options.progress << llvm::formatv(
        "autopar: [{0:f1} s] pipeline of {1} stages ({2}): step {3:e3} s, "
        "bubble {4:p}, peak {5} per device; {6} stage plans searched, {10} "
        "priced again with more microbatches in flight ({8} unconstrained "
        "solves reused, {9} constrained solves pruned, {11} constrained "
        "solves decided by a bound from fewer microbatches in flight), {7} "
        "splits simulated\n",
        elapsed(), p, result.layout, result.predicted.stepTime,
        result.bubbleFraction, formatByteSize(result.predicted.peakMemoryBytes),
        solved, simulated, std::get<0>(memoStats()), std::get<1>(memoStats()),
        repriced, std::get<2>(memoStats()));
  return result;
}

namespace {
/// The (microbatch count, stage count) search shared by chooseStageCount
/// (one candidate) and chooseMicrobatchesAndStages.
struct PairSearch {
  /// One candidate's state.
  struct Candidate {
    ModuleOp module;
    AutoPlanOptions options, quietOptions;
    /// Pipeline counts to try (the divisors of axis 0 up to the blocks, the
    /// most first).
    SmallVector<unsigned> counts;
    std::map<unsigned, json::Object> entries;
    std::map<unsigned, double> bounds, probed;
    std::set<unsigned> stalled;
    std::map<unsigned, std::unique_ptr<PipelineSearchCache>> caches;
    std::string lastError;
    bool pruned = false;
    /// The least cutoff one of its counts was cut under.
    double leastCutoff = std::numeric_limits<double>::infinity();
    std::optional<unsigned> best;
    double bestStep = std::numeric_limits<double>::infinity();
  };
  /// A deque: a Candidate holds caches that cannot be copied.
  std::deque<Candidate> candidates;
  PipelineConfig base;
  /// The best step of any pair (or the caller's cutoff), and its pair.
  double bestStep = std::numeric_limits<double>::infinity();
  std::optional<std::pair<size_t, unsigned>> best;
  std::optional<PipelinePlanResult> bestPipeline;
  std::chrono::steady_clock::time_point startTime =
      std::chrono::steady_clock::now();
  unsigned decided = 0;

  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         startTime)
        .count();
  }
  void run();

private:
  /// Runs `search` with the errors it emits captured into `error`; returns
  /// its wall seconds.
  double captured(ModuleOp module, std::string &error,
                  llvm::function_ref<void()> search);
  /// Records pair (c, count)'s outcome under `cutoff`: its prediction, or
  /// why it has none.
  void record(size_t c, unsigned count, double cutoff, double seconds,
              std::optional<PlanPrediction> predicted,
              std::optional<PipelinePlanResult> pipelined,
              const std::string &error);
  void announce(size_t c, unsigned count, double cutoff);
};
} // namespace

double PairSearch::captured(ModuleOp module, std::string &error,
                            llvm::function_ref<void()> search) {
  auto countStart = std::chrono::steady_clock::now();
  ScopedDiagnosticHandler capture(module.getContext(), [&](Diagnostic &d) {
    if (d.getSeverity() == DiagnosticSeverity::Error && error.empty())
      error = d.str();
    return success();
  });
  search();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                       countStart)
      .count();
}

void PairSearch::record(size_t c, unsigned count, double cutoff, double seconds,
                        std::optional<PlanPrediction> predicted,
                        std::optional<PipelinePlanResult> pipelined,
                        const std::string &error) {
  Candidate &cand = candidates[c];
  json::Object &entry = cand.entries[count];
  entry["stages"] = count;
  entry["search_time_s"] =
      seconds + entry.getNumber("search_time_s").value_or(0.0);
  if (!std::isinf(cutoff))
    entry["cutoff_s"] = cutoff;
  if (!predicted) {
    if (!std::isinf(cutoff) && StringRef(error).contains(kNoPlanUnderCutoff)) {
      entry["pruned"] = error;
      cand.pruned = true;
      cand.leastCutoff = std::min(cand.leastCutoff, cutoff);
    } else {
      entry["error"] = error;
      cand.lastError = error;
    }
    return;
  }
  entry["step_time_s"] = predicted->stepTime;
  entry["peak_memory_bytes"] = predicted->peakMemoryBytes;
  entry["fits"] = predicted->fits;
  if (predicted->fits && predicted->stepTime < cand.bestStep) {
    cand.bestStep = predicted->stepTime;
    cand.best = count;
  }
  if (predicted->fits && predicted->stepTime < bestStep) {
    bestStep = predicted->stepTime;
    best = std::make_pair(c, count);
    bestPipeline = std::move(pipelined);
  }
}

void PairSearch::announce(size_t c, unsigned count, double cutoff) {
  const AutoPlanOptions &options = candidates[c].options;
  if (options.progress)
    *options.progress << llvm::formatv(
        "autopar: [{0:f1} s] trying {1} pipeline stage{2}{3}{4}\n", elapsed(),
        count, count == 1 ? "" : "s",
        candidates.size() > 1
            ? llvm::formatv(" with {0} microbatches", options.microbatches)
                  .str()
            : std::string(),
        std::isinf(cutoff)
            ? std::string()
            : llvm::formatv(" (plans under {0:e3} s)", cutoff).str());
}

void PairSearch::run() {
  // The counts tried: 1 and the divisors of axis 0 up to the repeated
  // blocks (a stage holds at least one).
  for (Candidate &cand : candidates) {
    cand.quietOptions = cand.options;
    cand.quietOptions.progress = nullptr;
    ArrayRef<int64_t> grid = cand.options.gridShape;
    std::optional<unsigned> blocks;
    {
      ScopedDiagnosticHandler quiet(cand.module.getContext(),
                                    [](Diagnostic &) { return success(); });
      if (FailureOr<unsigned> n = countPipelineBlocks(cand.module);
          succeeded(n))
        blocks = *n;
    }
    for (int64_t count = grid.empty() ? 1 : grid[0]; count > 1; --count)
      if (grid[0] % count == 0 && (!blocks || uint64_t(count) <= *blocks))
        cand.counts.push_back(unsigned(count));
  }
  // No pipeline first: its step is the first cutoff, under which the bounds
  // with the bubble in them drop pipelines of few microbatches before any
  // of their stages is planned (measured on Table 1's row 4: 46 s of CPU
  // instead of 122 s searching the most stages first). With several
  // microbatch counts, each count's plan without stages in the candidates'
  // order, each under the best step so far (the reverse order, the smallest
  // microbatches first, took more time on Table 1's row 1: the largest
  // microbatches' memory-constrained solves are not cut by the smaller
  // ones' steps).
  for (auto [c, cand] : llvm::enumerate(candidates)) {
    double cutoff = bestStep;
    announce(c, 1, cutoff);
    std::string error;
    std::optional<PlanPrediction> predicted;
    double seconds = captured(cand.module, error, [&] {
      OwningOpRef<ModuleOp> copy = cand.module.clone();
      AutoPlanOptions one = cand.quietOptions;
      one.stepCutoff = cutoff;
      FailureOr<AutoPlanResult> r = planAutomatically(*copy, one);
      if (succeeded(r))
        predicted = r->predicted;
    });
    record(c, 1, cutoff, seconds, predicted, std::nullopt, error);
  }
  // Then the pipelines, in increasing order of their step bound with every
  // stage at its compute floor (PipelineConfig::boundOnly; ties: the most
  // stages first, whose stage plans are the smallest programs, then the
  // candidates' order): the pair most likely to win comes first, and its
  // step is the cutoff of the pairs after it. A count whose bound fails
  // (the grid or the blocks do not divide) fails the same way when
  // searched, so it is not searched.
  for (auto [c, cand] : llvm::enumerate(candidates)) {
    for (unsigned count : cand.counts) {
      std::string error;
      std::optional<double> bound;
      double seconds = captured(cand.module, error, [&] {
        PipelineConfig config = base;
        config.stages = count;
        config.boundOnly = true;
        config.probe = false;
        config.cache = nullptr;
        FailureOr<PipelinePlanResult> r =
            planPipeline(cand.module, cand.quietOptions, config,
                         [](ModuleOp, AutoPlanOptions &) {
                           return FailureOr<PlanPrediction>(failure());
                         });
        if (succeeded(r))
          bound = r->stepLowerBound;
      });
      if (!bound) {
        record(c, count, std::numeric_limits<double>::infinity(), seconds,
               std::nullopt, std::nullopt, error);
        continue;
      }
      cand.bounds[count] = *bound;
      cand.entries[count]["step_lower_bound_s"] = *bound;
      cand.entries[count]["search_time_s"] = seconds;
    }
  }
  // Best first: the pending pair of the least bound (ties: the most stages
  // first, then the candidates' order) is probed (PipelineConfig::probe:
  // planned up to its next stage position that takes a search, under the
  // best step so far; its bound becomes the one with the stages planned at
  // their own times and the others at their floors, if larger) and goes
  // back among the others, until a probe plans its last position (the
  // pair's full result) or no longer raises its bound (then it is searched
  // to the end). Each probe goes on from the stages planned before
  // (PipelineSearchCache). So a pair whose floors hide slow stages (memory
  // binding in fewer, larger stages) waits behind the others, and once a
  // step is found, every pair whose bound reaches it is cut. A pair that is
  // the last pending, or comes before any plan is found, is searched
  // without probes, as is one of ZB-H1. The bounds only order the search
  // and cut pairs that cannot win: the choice is the one a search of every
  // pair in full makes.
  using Pair = std::pair<size_t, unsigned>;
  SmallVector<Pair> pending;
  for (auto [c, cand] : llvm::enumerate(candidates))
    for (const auto &[count, bound] : cand.bounds)
      pending.push_back({c, count});
  auto keyOf = [&](Pair pair) {
    Candidate &cand = candidates[pair.first];
    auto it = cand.probed.find(pair.second);
    return it == cand.probed.end()
               ? cand.bounds[pair.second]
               : std::max(cand.bounds[pair.second], it->second);
  };
  auto before = [&](Pair a, Pair b) {
    double ka = keyOf(a), kb = keyOf(b);
    if (ka != kb)
      return ka < kb;
    if (a.second != b.second)
      return a.second > b.second;
    return a.first < b.first;
  };
  while (!pending.empty()) {
    auto next = llvm::min_element(pending, before);
    auto [c, count] = *next;
    Candidate &cand = candidates[c];
    // Before a plan is found, any plan that fits is wanted (an infinite
    // cutoff: a count none fits stops at its first stage with no plan,
    // without naming the smallest peak).
    double cutoff = bestStep;
    double key = keyOf(*next);
    // planPipeline's own tests on its bounds, without building it again:
    // this pair, and every pending one (their bounds are no smaller).
    if (!std::isinf(cutoff) && key > cutoff * (1 + 1e-6) + 1e-12) {
      llvm::stable_sort(pending, before);
      for (Pair other : pending) {
        Candidate &oc = candidates[other.first];
        unsigned ocount = other.second;
        announce(other.first, ocount, cutoff);
        std::string error =
            oc.probed.count(ocount) &&
                    oc.probed[ocount] > oc.bounds[ocount] * (1 + 1e-6) + 1e-12
                ? llvm::formatv(
                      "{0}{1} with {2} pipeline stages: with the stages its "
                      "probes planned and the others at their compute "
                      "floors, no step is below {3:e6} s",
                      kNoPlanUnderCutoff, describeCutoff(cutoff), ocount,
                      keyOf(other))
                      .str()
                : llvm::formatv(
                      "{0}{1} with {2} pipeline stages: no step is below "
                      "{3:e6} s (the fill, work and drain of the busiest "
                      "device with every stage at its compute floor)",
                      kNoPlanUnderCutoff, describeCutoff(cutoff), ocount,
                      keyOf(other))
                      .str();
        oc.entries[ocount]["order"] = decided++;
        record(other.first, ocount, cutoff, 0, std::nullopt, std::nullopt,
               error);
      }
      break;
    }
    std::string error;
    std::unique_ptr<PipelineSearchCache> &cache = cand.caches[count];
    if (!cache)
      cache = std::make_unique<PipelineSearchCache>();
    // Probed while there is a cutoff and another pair to weigh it against,
    // and while its probes raise its bound (a probe that cannot bound the
    // splits gives the floors' bound again); ZB-H1's step is not monotone
    // in the stages' times, so it has no bound with stages planned.
    bool probe = !std::isinf(cutoff) && pending.size() > 1 &&
                 !cand.stalled.count(count) &&
                 base.schedule != PipelineSchedule::ZeroBubbleH1;
    if (probe && cand.options.progress)
      *cand.options.progress << llvm::formatv(
          "autopar: [{0:f1} s] probing {1} pipeline stages{2} (plans under "
          "{3:e3} s)\n",
          elapsed(), count,
          candidates.size() > 1 ? llvm::formatv(" with {0} microbatches",
                                                cand.options.microbatches)
                                      .str()
                                : std::string(),
          cutoff);
    if (!probe)
      announce(c, count, cutoff);
    std::optional<double> bound;
    std::optional<PlanPrediction> predicted;
    std::optional<PipelinePlanResult> pipelined;
    double seconds = captured(cand.module, error, [&] {
      OwningOpRef<ModuleOp> copy = cand.module.clone();
      PipelineConfig config = base;
      config.stages = count;
      config.stepCutoff = cutoff;
      config.probe = probe;
      config.cache = cache.get();
      FailureOr<PipelinePlanResult> r =
          planPipeline(*copy, cand.quietOptions, config,
                       [](ModuleOp stage, AutoPlanOptions &o) {
                         return planStageAutomatically(stage, o);
                       });
      if (failed(r))
        return;
      // A probe stopped short gives a bound and no stages.
      if (probe && r->stages.empty()) {
        bound = r->stepLowerBound;
        return;
      }
      predicted = r->predicted;
      pipelined = std::move(*r);
    });
    if (bound) {
      if (*bound <= key * (1 + 1e-9))
        cand.stalled.insert(count);
      cand.probed[count] =
          std::max(cand.probed.count(count) ? cand.probed[count] : 0.0, *bound);
      json::Object &entry = cand.entries[count];
      entry["step_lower_bound_probed_s"] = cand.probed[count];
      entry["probes"] = entry.getInteger("probes").value_or(0) + 1;
      entry["search_time_s"] =
          seconds + entry.getNumber("search_time_s").value_or(0.0);
      continue;
    }
    if (probe)
      cand.entries[count]["probes"] =
          cand.entries[count].getInteger("probes").value_or(0) + 1;
    pending.erase(next);
    cand.entries[count]["order"] = decided++;
    record(c, count, cutoff, seconds, predicted, std::move(pipelined), error);
    cand.caches.erase(count);
  }
}

FailureOr<MicrobatchChoice> mlir::autopar::chooseMicrobatchesAndStages(
    ArrayRef<MicrobatchCandidate> candidates, const PipelineConfig &base) {
  assert(!candidates.empty() && "expected a microbatch count to search");
  PairSearch search;
  search.base = base;
  if (base.stepCutoff >= 0)
    search.bestStep = base.stepCutoff;
  for (const MicrobatchCandidate &candidate : candidates) {
    PairSearch::Candidate &cand = search.candidates.emplace_back();
    cand.module = candidate.module;
    cand.options = candidate.options;
  }
  search.run();
  MicrobatchChoice result;
  for (PairSearch::Candidate &cand : search.candidates) {
    MicrobatchOutcome &outcome = result.outcomes.emplace_back();
    outcome.cutoff = cand.leastCutoff;
    for (auto &[count, entry] : cand.entries) {
      outcome.searchTimeSeconds += entry.getNumber("search_time_s").value_or(0);
      outcome.tried.push_back(std::move(entry));
    }
    if (cand.best) {
      outcome.stepTime = cand.bestStep;
      outcome.stages = *cand.best;
    } else if (cand.pruned) {
      outcome.pruned = true;
      outcome.error = (Twine(kNoPlanUnderCutoff) + " with any pipeline stage "
                                                   "count")
                          .str();
    } else {
      outcome.error = cand.lastError;
    }
  }
  if (!search.best) {
    ModuleOp module = candidates.front().module;
    auto func = module.lookupSymbol<func::FuncOp>("main");
    Location loc = func ? func.getLoc() : module.getLoc();
    if (base.stepCutoff >= 0 && std::isfinite(base.stepCutoff))
      return emitError(loc)
             << kNoPlanUnderCutoff << describeCutoff(base.stepCutoff)
             << " with any pipeline stage count (1 and the divisors of grid "
                "axis 0)";
    std::string lastError;
    for (const PairSearch::Candidate &cand : search.candidates)
      if (!cand.lastError.empty())
        lastError = cand.lastError;
    return emitError(loc)
           << "no pipeline stage count (1 and the divisors of grid axis 0) "
              "gives a plan that fits; with the most tried: "
           << lastError;
  }
  result.candidate = search.best->first;
  StageCountChoice &choice = result.choice;
  choice.stages = search.best->second;
  choice.stepTime = search.bestStep;
  if (choice.stages > 1)
    choice.pipeline = std::move(search.bestPipeline);
  choice.searchTimeSeconds = search.elapsed();
  return result;
}

FailureOr<StageCountChoice>
mlir::autopar::chooseStageCount(ModuleOp module, const AutoPlanOptions &options,
                                const PipelineConfig &base,
                                json::Array &tried) {
  MicrobatchCandidate candidate{module, options};
  FailureOr<MicrobatchChoice> result =
      chooseMicrobatchesAndStages(candidate, base);
  if (failed(result))
    return failure();
  for (json::Value &entry : result->outcomes.front().tried)
    tried.push_back(std::move(entry));
  return std::move(result->choice);
}
