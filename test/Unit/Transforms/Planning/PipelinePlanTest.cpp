//===- PipelinePlanTest.cpp - the pruned stage search equals the full one -===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The stage-count search (chooseStageCount) cuts pipelines short with
// bounds that have the bubble in them (getMakespanLead and
// getMakespanLowerBound over the stages' compute floors). On small models,
// for every schedule, microbatch count and link speed, its choice and step
// equal those of every count planned in full without a cutoff; and a
// pipeline searched under a cutoff just above its own step finds that step,
// and under one just below it finds none. The bound with the first stage
// planned (a probe) is at most the step, the search goes on from a probe to
// the same step, and with the interleaved schedule the bound with some
// virtual stages planned cuts a pipeline that the floors alone do not.
//
//===----------------------------------------------------------------------===//

#include "PlanningFixture.h"

#include "autopar/Transforms/Planning/PipelinePlan.h"
#include "autopar/Transforms/Planning/TrainingLoss.h"

#include "mlir/IR/Diagnostics.h"

#include <catch2/catch.hpp>

#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>

using namespace mlir;
using namespace mlir::autopar;

namespace {
/// Eight identical blocks (a projection, a ReLU and a residual), each with
/// its own weight, on a batch of `rows`.
std::string eightBlocks(int64_t rows = 64) {
  std::string act = "tensor<" + std::to_string(rows) + "x256xf32>";
  std::string text =
      "func.func @main(%x: " + act + " loc(\"x\")) -> " + act + " {\n";
  for (int i = 0; i < 8; ++i)
    text += "  %w" + std::to_string(i) + " = autopar.weight \"w" +
            std::to_string(i) + "\" : tensor<256x256xf32>\n";
  std::string in = "%x";
  for (int i = 0; i < 8; ++i) {
    std::string s = std::to_string(i);
    text += "  %p" + s + " = autopar.matmul " + in + ", %w" + s + " : (" + act +
            ", tensor<256x256xf32>) -> " + act + " loc(\"p" + s + "\")\n";
    text += "  %r" + s + " = autopar.relu %p" + s + " : (" + act + ") -> " +
            act + " loc(\"r" + s + "\")\n";
    text += "  %h" + s + " = autopar.add %r" + s + ", " + in + " : (" + act +
            ", " + act + ") -> " + act + " loc(\"h" + s + "\")\n";
    in = "%h" + s;
  }
  text += "  return " + in + " : " + act + "\n}\n";
  return text;
}

/// The eight blocks on 4 devices of 1e12 FLOP/s, trained with a mean
/// squared error, recomputation searched.
struct EightBlocksTraining : testing::PlanningFixture {
  EightBlocksTraining()
      : testing::PlanningFixture(eightBlocks().c_str(), 4, 1e12, 1e-6) {
    REQUIRE(succeeded(appendTrainingLoss(*module, LossKind::MeanSquaredError)));
    options.mode = PlanMode::Training;
    options.searchRecompute = true;
  }
};

/// A step of `options` planned with `stages` stages (1: no pipeline) and no
/// cutoff; nullopt when no plan fits.
std::optional<double> planAlone(ModuleOp module, const AutoPlanOptions &options,
                                PipelineConfig config, unsigned stages,
                                double cutoff = -1) {
  ScopedDiagnosticHandler quiet(module.getContext(),
                                [](Diagnostic &) { return success(); });
  OwningOpRef<ModuleOp> copy = module.clone();
  if (stages == 1) {
    AutoPlanOptions one = options;
    one.stepCutoff = cutoff;
    FailureOr<AutoPlanResult> r = planAutomatically(*copy, one);
    if (failed(r) || !r->predicted.fits)
      return std::nullopt;
    return r->predicted.stepTime;
  }
  config.stages = stages;
  config.stepCutoff = cutoff;
  FailureOr<PipelinePlanResult> r =
      planPipeline(*copy, options, config, planStageAutomatically);
  if (failed(r) || !r->predicted.fits)
    return std::nullopt;
  return r->predicted.stepTime;
}

/// planPipeline of `stages` stages under `cutoff` (< 0: none) with the
/// errors it emits in `error`; nullopt when it fails.
std::optional<PipelinePlanResult> planWithError(ModuleOp module,
                                                const AutoPlanOptions &options,
                                                PipelineConfig config,
                                                unsigned stages, double cutoff,
                                                std::string &error) {
  ScopedDiagnosticHandler capture(module.getContext(), [&](Diagnostic &d) {
    if (d.getSeverity() == DiagnosticSeverity::Error && error.empty())
      error = d.str();
    return success();
  });
  OwningOpRef<ModuleOp> copy = module.clone();
  config.stages = stages;
  config.stepCutoff = cutoff;
  FailureOr<PipelinePlanResult> r =
      planPipeline(*copy, options, config, planStageAutomatically);
  if (failed(r))
    return std::nullopt;
  return std::move(*r);
}

/// The step bound of `stages` stages with every stage at its compute floor
/// (PipelineConfig::boundOnly); nullopt when the count cannot be split.
std::optional<double> boundAlone(ModuleOp module,
                                 const AutoPlanOptions &options,
                                 PipelineConfig config, unsigned stages) {
  ScopedDiagnosticHandler quiet(module.getContext(),
                                [](Diagnostic &) { return success(); });
  config.stages = stages;
  config.boundOnly = true;
  unsigned planned = 0;
  FailureOr<PipelinePlanResult> r =
      planPipeline(module, options, config, [&](ModuleOp, AutoPlanOptions &) {
        ++planned;
        return FailureOr<PlanPrediction>(failure());
      });
  // No stage is planned for a bound.
  CHECK(planned == 0);
  if (failed(r))
    return std::nullopt;
  CHECK(r->stages.empty());
  return r->stepLowerBound;
}
} // namespace

TEST_CASE("the stage-count search with bubble bounds equals the full search",
          "[pipeline-plan]") {
  EightBlocksTraining fx;
  struct Schedule {
    PipelineSchedule schedule;
    unsigned chunks;
  };
  unsigned cases = 0, boundedCuts = 0, splitCuts = 0, probes = 0;
  for (double bandwidth : {1e8, 1e13})
    for (int64_t m : {1, 4, 8})
      for (Schedule s : {Schedule{PipelineSchedule::OneFOneB, 1},
                         Schedule{PipelineSchedule::ZeroBubbleH1, 1},
                         Schedule{PipelineSchedule::Interleaved, 2}}) {
        AutoPlanOptions options = fx.options;
        options.cluster.axes[0].bandwidth = bandwidth;
        options.microbatches = m;
        PipelineConfig base;
        base.schedule = s.schedule;
        base.chunks = s.chunks;
        CAPTURE(bandwidth, m, int(s.schedule));
        // Every count in full.
        std::optional<unsigned> best;
        double bestStep = std::numeric_limits<double>::infinity();
        std::map<unsigned, std::optional<double>> alone;
        for (unsigned count : {1u, 2u, 4u}) {
          alone[count] = planAlone(*fx.module, options, base, count);
          if (alone[count] && *alone[count] < bestStep) {
            bestStep = *alone[count];
            best = count;
          }
        }
        REQUIRE(best);
        // The bounds the search orders the pipelines by are bounds: no
        // pipeline planned in full is faster.
        for (unsigned count : {2u, 4u}) {
          std::optional<double> bound =
              boundAlone(*fx.module, options, base, count);
          if (!bound)
            continue;
          CHECK(*bound > 0);
          if (alone[count])
            CHECK(*bound <= *alone[count] * (1 + 1e-9));
        }
        // The search with its cutoffs and bounds.
        llvm::json::Array tried;
        FailureOr<StageCountChoice> choice = failure();
        {
          ScopedDiagnosticHandler quiet(&fx.ctx,
                                        [](Diagnostic &) { return success(); });
          choice = chooseStageCount(*fx.module, options, base, tried);
        }
        REQUIRE(succeeded(choice));
        double step =
            choice->pipeline ? choice->pipeline->predicted.stepTime : *alone[1];
        CHECK(step == Approx(bestStep).epsilon(1e-9));
        CHECK(*alone[choice->stages] == Approx(bestStep).epsilon(1e-9));
        // Each pipeline under a cutoff just above its step finds it, and
        // under one just below finds nothing.
        for (unsigned count : {2u, 4u}) {
          if (!alone[count])
            continue;
          double own = *alone[count];
          std::optional<double> above =
              planAlone(*fx.module, options, base, count, own * (1 + 1e-4));
          REQUIRE(above);
          CHECK(*above == Approx(own).epsilon(1e-9));
          CHECK_FALSE(
              planAlone(*fx.module, options, base, count, own * (1 - 1e-4)));
        }
        for (const llvm::json::Value &entry : tried)
          if (const llvm::json::Object *o = entry.getAsObject()) {
            if (std::optional<llvm::StringRef> why = o->getString("pruned")) {
              boundedCuts += why->contains("compute floor") ||
                             why->contains("adds at least");
              splitCuts += why->contains("stages planned and the others");
            }
            // Each pipeline count with a plan was ordered by a bound at
            // most its step.
            std::optional<double> bound = o->getNumber("step_lower_bound_s");
            std::optional<int64_t> count = o->getInteger("stages");
            REQUIRE(count);
            // So was a count probed, with some stages planned: at most
            // the step of the count planned alone.
            if (std::optional<double> first =
                    o->getNumber("step_lower_bound_probed_s")) {
              ++probes;
              REQUIRE(bound);
              CHECK(*first >= *bound);
              if (alone[unsigned(*count)])
                CHECK(*first <= *alone[unsigned(*count)] * (1 + 1e-9));
            }
            if (*count > 1 && !o->getString("error"))
              REQUIRE(bound);
            if (std::optional<double> own = o->getNumber("step_time_s"))
              if (bound)
                CHECK(*bound <= *own * (1 + 1e-9));
          }
        ++cases;
      }
  CHECK(cases == 18);
  // The bounds with the bubble in them decided some counts.
  CHECK(boundedCuts > 0);
  // Some by the bound on the splits with some stages planned.
  CHECK(splitCuts > 0);
  // Some counts were probed before their full search.
  CHECK(probes > 0);
}

TEST_CASE("a probe bounds the step and the search goes on from it",
          "[pipeline-plan]") {
  EightBlocksTraining fx;
  unsigned interleavedCuts = 0, raised = 0, cases = 0;
  for (double bandwidth : {1e8, 1e13})
    for (int64_t m : {4, 8})
      for (unsigned chunks : {1u, 2u})
        for (unsigned count : {2u, 4u}) {
          AutoPlanOptions options = fx.options;
          options.cluster.axes[0].bandwidth = bandwidth;
          options.microbatches = m;
          PipelineConfig base;
          base.schedule = chunks > 1 ? PipelineSchedule::Interleaved
                                     : PipelineSchedule::OneFOneB;
          base.chunks = chunks;
          CAPTURE(bandwidth, m, chunks, count);
          std::optional<double> own =
              planAlone(*fx.module, options, base, count);
          std::optional<double> floor =
              boundAlone(*fx.module, options, base, count);
          if (!own || !floor)
            continue;
          ++cases;
          // The probe under no cutoff: a bound at most the step, at least
          // the floors' bound.
          PipelineSearchCache cache;
          PipelineConfig probe = base;
          probe.probe = true;
          probe.cache = &cache;
          std::string error;
          std::optional<PipelinePlanResult> probed =
              planWithError(*fx.module, options, probe, count, -1, error);
          REQUIRE(probed);
          CHECK(probed->stages.empty());
          double first = probed->stepLowerBound;
          CHECK(first >= *floor);
          CHECK(first <= *own * (1 + 1e-9));
          raised += first > *floor * (1 + 1e-6);
          // Probes again, each going on from the last, until one completes
          // the pipeline: their bounds never exceed the step, and the last
          // gives the step alone.
          {
            PipelineSearchCache again;
            PipelineConfig steps = probe;
            steps.cache = &again;
            double last = 0;
            unsigned probes = 0;
            std::optional<PipelinePlanResult> r;
            for (; probes <= count * chunks + 1; ++probes) {
              error.clear();
              r = planWithError(*fx.module, options, steps, count, -1, error);
              REQUIRE(r);
              if (!r->stages.empty())
                break;
              CHECK(r->stepLowerBound <= *own * (1 + 1e-9));
              last = std::max(last, r->stepLowerBound);
            }
            REQUIRE(r);
            REQUIRE_FALSE(r->stages.empty());
            CHECK(probes >= 1);
            CHECK(last <= *own * (1 + 1e-9));
            CHECK(r->predicted.stepTime == Approx(*own).epsilon(1e-9));
          }
          // The full search with the probe's cache finds the step alone,
          // under a cutoff just above it.
          PipelineConfig rest = base;
          rest.cache = &cache;
          error.clear();
          std::optional<PipelinePlanResult> full = planWithError(
              *fx.module, options, rest, count, *own * (1 + 1e-4), error);
          REQUIRE(full);
          CHECK(full->predicted.stepTime == Approx(*own).epsilon(1e-9));
          // A cutoff between the floors' bound and the probe's: nothing is
          // under it, and the floors alone do not cut the pipeline; with the
          // interleaved schedule the bound with the first virtual stage
          // planned can (unless the first stage's own search is cut first).
          if (first > *floor * (1 + 1e-3)) {
            double cutoff = (first + *floor * (1 + 1e-3)) / 2;
            error.clear();
            CHECK_FALSE(
                planWithError(*fx.module, options, base, count, cutoff, error));
            INFO(error);
            CHECK(StringRef(error).contains(kNoPlanUnderCutoff));
            CHECK_FALSE(StringRef(error).contains("every stage at its "
                                                  "compute floor"));
            CHECK_FALSE(StringRef(error).contains("every chunk at its "
                                                  "compute floor"));
            if (chunks > 1)
              interleavedCuts += StringRef(error).contains(
                  "virtual stages planned and the others at their compute "
                  "floors");
          }
        }
  CHECK(cases >= 8);
  // The first stage planned raised some bounds above the floors'.
  CHECK(raised > 0);
  CHECK(interleavedCuts > 0);
}

TEST_CASE("the joint search of microbatch and stage counts equals the full "
          "search",
          "[pipeline-plan]") {
  // Random instances: a batch of 32 rows cut into m = 1, 2, 4 or 8
  // microbatches (each count its own module of 32 / m rows), 4 devices
  // (1, 2 or 4 stages), a random link speed, memory per device and
  // schedule. The joint search (its cutoffs shared by every pair) chooses
  // a pair whose step, planned alone with no cutoff, is the least of all
  // pairs planned alone, and the pipeline it returns is that pair's.
  EightBlocksTraining base4;
  std::mt19937 rng(20261207);
  const int64_t batch = 32;
  SmallVector<int64_t> counts = {1, 2, 4, 8};
  std::vector<OwningOpRef<ModuleOp>> modules;
  for (int64_t m : counts) {
    modules.push_back(
        parseSourceString<ModuleOp>(eightBlocks(batch / m), &base4.ctx));
    REQUIRE(modules.back());
    REQUIRE(succeeded(
        appendTrainingLoss(*modules.back(), LossKind::MeanSquaredError)));
  }
  struct Schedule {
    PipelineSchedule schedule;
    unsigned chunks;
  };
  const Schedule schedules[] = {{PipelineSchedule::OneFOneB, 1},
                                {PipelineSchedule::Interleaved, 2},
                                {PipelineSchedule::ZeroBubbleH1, 1}};
  const double bandwidths[] = {1e8, 1e10, 1e13};
  unsigned cases = 0, cuts = 0, pipelined = 0, several = 0;
  for (unsigned trial = 0; trial < 20; ++trial) {
    Schedule s = schedules[rng() % 3];
    AutoPlanOptions options = base4.options;
    options.cluster.axes[0].bandwidth = bandwidths[rng() % 3];
    // 4 MiB to 1 GiB per device: from memory binding at every count to
    // none.
    options.cluster.memoryBytes = int64_t(1) << (22 + rng() % 9);
    PipelineConfig config;
    config.schedule = s.schedule;
    config.chunks = s.chunks;
    CAPTURE(trial, int(s.schedule), options.cluster.axes[0].bandwidth,
            options.cluster.memoryBytes);
    // Every pair planned alone, in full, with no cutoff.
    std::vector<MicrobatchCandidate> candidates;
    double bestStep = std::numeric_limits<double>::infinity();
    std::map<std::pair<size_t, unsigned>, double> alone;
    for (size_t c = 0; c < counts.size(); ++c) {
      AutoPlanOptions o = options;
      o.microbatches = counts[c];
      candidates.push_back({*modules[c], o});
      for (unsigned stages : {1u, 2u, 4u})
        if (std::optional<double> step =
                planAlone(*modules[c], o, config, stages)) {
          alone[{c, stages}] = *step;
          bestStep = std::min(bestStep, *step);
        }
    }
    FailureOr<MicrobatchChoice> choice = failure();
    {
      ScopedDiagnosticHandler quiet(&base4.ctx,
                                    [](Diagnostic &) { return success(); });
      choice = chooseMicrobatchesAndStages(candidates, config);
    }
    if (alone.empty()) {
      CHECK(failed(choice));
      continue;
    }
    ++cases;
    REQUIRE(succeeded(choice));
    size_t c = choice->candidate;
    unsigned stages = choice->choice.stages;
    CAPTURE(counts[c], stages);
    REQUIRE(alone.count({c, stages}));
    CHECK(alone[{c, stages}] == Approx(bestStep).epsilon(1e-9));
    CHECK(choice->choice.stepTime == Approx(bestStep).epsilon(1e-9));
    REQUIRE(choice->outcomes.size() == counts.size());
    CHECK(choice->outcomes[c].stepTime);
    // The pipeline returned is the pair's own, planned alone.
    if (stages > 1) {
      ++pipelined;
      REQUIRE(choice->choice.pipeline);
      std::string error;
      AutoPlanOptions o = options;
      o.microbatches = counts[c];
      std::optional<PipelinePlanResult> own =
          planWithError(*modules[c], o, config, stages, -1, error);
      REQUIRE(own);
      CHECK(choice->choice.pipeline->layout == own->layout);
      CHECK(choice->choice.pipeline->predicted.stepTime ==
            Approx(own->predicted.stepTime).epsilon(1e-9));
    }
    // Each count's best plan found is its own (never faster than its pair
    // planned alone), and the counts cut under another's plan are counted.
    std::set<double> steps;
    for (auto [index, outcome] : llvm::enumerate(choice->outcomes)) {
      if (outcome.stepTime) {
        REQUIRE(alone.count({index, outcome.stages}));
        CHECK(*outcome.stepTime ==
              Approx(alone[{index, outcome.stages}]).epsilon(1e-9));
        steps.insert(*outcome.stepTime);
      }
      for (const llvm::json::Value &entry : outcome.tried)
        if (const llvm::json::Object *o = entry.getAsObject())
          cuts += o->getString("pruned").has_value();
    }
    several += steps.size() > 1;
  }
  CHECK(cases >= 12);
  // The shared cutoff cut pairs, some pipelines won, and some instances
  // planned several counts.
  CHECK(cuts > 0);
  CHECK(pipelined > 0);
  CHECK(several > 0);
}
