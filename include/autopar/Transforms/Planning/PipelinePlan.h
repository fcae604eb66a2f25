//===- PipelinePlan.h - pipeline stages over slabs of the grid --*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Pipeline parallelism on top of the intra-stage planner: the program is cut
// into P stages at repeated-block boundaries (the first stage also holds what
// precedes the blocks, such as the embedding; the last one what follows, such
// as the head and the loss), each stage runs on a slab of the grid contiguous
// along axis 0, and each stage's plan is found by the intra-stage planner on
// its slab with the activations of its microbatches in flight counted. A
// dynamic program over the stages' block counts, with the bottleneck stage
// enumerated (Alpa's formulation), proposes splits; the event simulator
// (PipelineSimulator) prices each proposal and the fastest fitting one wins.
// Identical stages (same block count, same position class, same microbatches
// in flight, same device classes) are planned once. With device classes in
// the cluster (Cluster.h), each stage is planned and priced with its slab's
// class, within that class's memory, and the block counts tried widen to
// each slab's share by matmul rate and by memory.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_TRANSFORMS_PLANNING_PIPELINEPLAN_H
#define AUTOPAR_TRANSFORMS_PLANNING_PIPELINEPLAN_H

#include "autopar/Transforms/Planning/AutoPlan.h"
#include "autopar/Transforms/Planning/PipelineSchedule.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir::autopar {

/// The stage plans of one pipeline configuration (one module, options, stage
/// count, schedule and chunks), kept from one planPipeline call to the next:
/// a search probed with PipelineConfig::probe goes on from the
/// stages it planned. Every entry holds under any later cutoff no larger than
/// the one it was planned under (a plan found is the stage's optimum; a
/// search that found none under a cutoff finds none under a smaller one), so
/// the calls must come with cutoffs that never grow.
class PipelineSearchCache {
public:
  PipelineSearchCache();
  ~PipelineSearchCache();
  PipelineSearchCache(const PipelineSearchCache &) = delete;
  PipelineSearchCache &operator=(const PipelineSearchCache &) = delete;
  struct Impl;
  std::unique_ptr<Impl> impl;
};

/// `gpipe`, `1f1b`, `interleaved` or `zb`.
StringRef stringifyPipelineSchedule(PipelineSchedule schedule);
std::optional<PipelineSchedule> symbolizePipelineSchedule(StringRef name);

struct PipelineConfig {
  /// P: stages, one per slab of grid axis 0 (P divides it).
  unsigned stages = 2;
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
  /// How many repeated blocks a stage may differ from an even split by.
  unsigned blockSlack = 1;
  /// v: model chunks per device with the interleaved schedule (the blocks
  /// are cut evenly into P x v virtual stages; device d runs chunks d,
  /// d + P, ...); 1 otherwise.
  unsigned chunks = 1;
  /// Only pipelines whose step is below this many seconds are wanted (< 0:
  /// no bound). A pipeline's step is at least a stage's own step (its work
  /// over every microbatch plus its once-per-step reductions) plus its lead:
  /// the fill and drain of its device (the other stages' forwards before
  /// it, and their backwards after it, getMakespanLead), which the other
  /// stages' compute floors bound from below. So a stage plan is searched
  /// under the cutoff less its lead (AutoPlanOptions::stepCutoff), one
  /// whose lead alone reaches the cutoff is not searched, and a pipeline
  /// whose bound with every stage at its floor (getMakespanLowerBound)
  /// reaches it is not planned at all; when no split is left, or the best
  /// one is not below the bound, planPipeline fails with a diagnostic
  /// starting with kNoPlanUnderCutoff.
  double stepCutoff = -1;
  /// Plan no stage: planPipeline stops once it has the pipeline's step
  /// bound with every stage at its compute floor (the fill, work and drain
  /// of the busiest device; PipelinePlanResult::stepLowerBound), after the
  /// checks that would fail the full search.
  bool boundOnly = false;
  /// Plan the stage positions in order (the first stage first; with the
  /// interleaved schedule, the virtual stages) up to the first one that takes
  /// a search (one planned by an earlier call with the same `cache` takes
  /// none), and stop there, unless it is the last, with the pipeline's step
  /// bound with the stages planned at their own times and the others at
  /// their compute floors (PipelinePlanResult::stepLowerBound, no stages;
  /// the floor bound of boundOnly where the splits cannot be bounded). A
  /// cutoff the bound reaches fails as the full search would; a probe that
  /// reaches the last position returns the full result. Used with `cache`,
  /// so that each call goes on from the stages planned before.
  bool probe = false;
  /// Stage plans kept between calls (nullptr: planPipeline keeps its own).
  PipelineSearchCache *cache = nullptr;
};

/// One stage of a chosen pipeline.
struct PipelineStage {
  /// Repeated blocks [firstBlock, firstBlock + numBlocks).
  unsigned firstBlock = 0, numBlocks = 0;
  /// Whether the stage also runs the ops before / after the blocks.
  bool hasPrefix = false, hasSuffix = false;
  /// The ONNX names of its first and last ops.
  std::string firstOp, lastOp;
  /// Rows [slabBegin, slabEnd) of grid axis 0, and the stage's grid.
  int64_t slabBegin = 0, slabEnd = 0;
  SmallVector<int64_t> grid;
  /// Seconds per microbatch (forward; backward including recomputation),
  /// per step (gradient reductions once per step), and of sending one
  /// microbatch's boundary activation to the next stage.
  double forward = 0, backward = 0, perStep = 0, transfer = 0;
  /// Microbatches whose activations the stage holds at once.
  unsigned inFlight = 1;
  /// The stage's own plan, priced on its slab.
  PlanPrediction predicted;
  /// The stage's plan file (buildPlanJson of its annotated module).
  llvm::json::Value plan = nullptr;
};

struct PipelinePlanResult {
  PlanPrediction predicted;
  std::vector<PipelineStage> stages;
  double bubbleFraction = 0;
  /// Megatron-Core's --pipeline-model-parallel-layout, e.g. `Et*3|t*3L`.
  std::string layout;
  double searchTimeSeconds = 0;
  /// No pipeline of this configuration is faster than this many seconds
  /// (every stage at its compute floor, the least step overhead added);
  /// set with PipelineConfig::boundOnly and probe only (0
  /// otherwise).
  double stepLowerBound = 0;
  /// The `pipeline` section of plan.json.
  llvm::json::Object report;
};

/// Plans (and annotates) one stage: `stage` is a module with a function
/// @main; `options` carry the stage's grid and the microbatches it holds. A
/// planner that prices the stage on another view of its slab (a fixed
/// configuration's data x tensor grid) sets `options` to that view. Returns
/// the plan's prediction at `options.microbatches`.
using StagePlanner = llvm::function_ref<FailureOr<PlanPrediction>(
    ModuleOp stage, AutoPlanOptions &options)>;

/// The intra-stage planner that searches (planAutomatically).
FailureOr<PlanPrediction> planStageAutomatically(ModuleOp stage,
                                                 AutoPlanOptions &options);

/// Splits `module` (one microbatch of the step, with its loss in training)
/// into `config.stages` stages over `options.gridShape` and plans each with
/// `planStage`. Fails with a diagnostic when the grid or the model cannot be
/// split (axis 0 not divisible, fewer repeated blocks than stages) or when no
/// split fits in memory. `module` is not changed.
FailureOr<PipelinePlanResult> planPipeline(ModuleOp module,
                                           const AutoPlanOptions &options,
                                           const PipelineConfig &config,
                                           StagePlanner planStage);

/// The outcome of chooseStageCount.
struct StageCountChoice {
  unsigned stages = 1;
  /// The chosen pipeline when `stages` > 1 (planPipeline's result, which the
  /// caller need not search again).
  std::optional<PipelinePlanResult> pipeline;
  /// The chosen plan's predicted step.
  double stepTime = 0;
  /// Seconds the whole stage-count search took.
  double searchTimeSeconds = 0;
};

/// The stage count for `--stages auto`: 1 (no pipeline, planAutomatically)
/// and every count dividing grid axis 0 up to the model's repeated blocks,
/// each planned with `base`'s schedule (its stage count is ignored); the
/// fastest fitting one wins. No pipeline is searched first; then every
/// pipeline count's step bound with each stage at its compute floor is
/// computed without planning a stage (PipelineConfig::boundOnly), and the
/// counts are taken best first, each with the best step found so far as its
/// cutoff (PipelineConfig::stepCutoff): the count of the least bound (ties:
/// the most stages first) is probed (PipelineConfig::probe: planned up to
/// its next stage position that takes a search; its bound becomes the one
/// with the stages planned at their own times, if larger) and goes back
/// among the others, until a probe completes it (or stops raising its
/// bound: it is then searched to the end), each probe going on from the
/// stages planned before. A count whose bound reaches the cutoff is not
/// searched further; a count cut short has no plan faster than one already
/// found, so the choice is the one a search of every count in full makes.
/// `tried` gets one entry per count, in increasing order (its step bound,
/// its bound with the stages its probes planned and how many probes, the
/// order in which it was decided, step, peak, why it failed, or the cutoff
/// it did not beat). With
/// `base.stepCutoff` >= 0 only plans faster than it are wanted (the first
/// count's cutoff; a search over the microbatch count passes its best step
/// so far). Fails with a diagnostic when no count gives a fitting plan
/// (starting with kNoPlanUnderCutoff when none is under `base.stepCutoff`).
FailureOr<StageCountChoice> chooseStageCount(ModuleOp module,
                                             const AutoPlanOptions &options,
                                             const PipelineConfig &base,
                                             llvm::json::Array &tried);

/// One microbatch count of the joint search (chooseMicrobatchesAndStages).
struct MicrobatchCandidate {
  /// One microbatch of the step at this count (with its loss in training).
  ModuleOp module;
  /// The options of the count (`microbatches` is the count).
  AutoPlanOptions options;
};

/// What the joint search decided for one microbatch count.
struct MicrobatchOutcome {
  /// The best plan found with this count (none: every stage count was cut
  /// under a plan of some count, or failed); with `stages`, its stage count.
  std::optional<double> stepTime;
  unsigned stages = 0;
  /// Why the count has no plan: kNoPlanUnderCutoff when a stage count of it
  /// was cut under a cutoff and none fits (`pruned`), any other error
  /// otherwise.
  std::string error;
  bool pruned = false;
  /// The least cutoff a stage count of it was cut under (infinite: none was
  /// cut): the count has no plan faster than the least of this and
  /// `stepTime`, so `stepTime` is its own optimum when it is at most this.
  double cutoff = std::numeric_limits<double>::infinity();
  /// Seconds spent on this count's stage counts (bounds, probes, searches).
  double searchTimeSeconds = 0;
  /// One entry per stage count, as chooseStageCount's `tried`, with the
  /// order in which the joint search decided it among all counts' stage
  /// counts.
  llvm::json::Array tried;
};

/// The outcome of chooseMicrobatchesAndStages.
struct MicrobatchChoice {
  /// The chosen candidate (an index into the candidates).
  size_t candidate = 0;
  StageCountChoice choice;
  /// One per candidate, in their order.
  std::vector<MicrobatchOutcome> outcomes;
};

/// `--microbatches auto --stages auto`: the microbatch count and the stage
/// count searched together, as one best-first search over (microbatch count,
/// stage count) pairs. Each candidate's plan without stages is searched
/// first, in the candidates' order, each under the best step so far; then
/// every pipeline pair's floor bound is taken (PipelineConfig::boundOnly)
/// and the pairs are probed and searched in the order of their bounds, as
/// chooseStageCount does for one candidate, with the best step of any pair
/// as the cutoff of all. A pair whose bound reaches the cutoff has no plan
/// faster than one already found, so the choice is the one a search of every
/// pair in full makes (a tie within the solver's tolerance, 1e-6, may
/// resolve to another pair of the same step). With one candidate it is
/// chooseStageCount. Fails with a diagnostic when no pair gives a plan that
/// fits.
FailureOr<MicrobatchChoice>
chooseMicrobatchesAndStages(ArrayRef<MicrobatchCandidate> candidates,
                            const PipelineConfig &base);

} // namespace mlir::autopar

#endif // AUTOPAR_TRANSFORMS_PLANNING_PIPELINEPLAN_H
