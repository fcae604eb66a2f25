//===- AutoPlan.cpp - exact search for a parallel plan --------------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The planner's entry points, in the order they run:
//   1. the strategy graph of @main (StrategyGraph.h);
//   2. repeated blocks folded so that members share one strategy
//      (BlockFolding.h);
//   3. the integer program, solved by CBC (IntegerProgram.h), first without
//      and then, when the fastest plan does not fit, with the memory rows;
//   4. the choice priced again op by op (Pricing.h, a self-check of the
//      program), written on the IR, and explained (SearchReport.h).
//
// No pass manager runs here: the baselines a report compares against are
// priced by the caller (predictAnnotatedPlan on a module the plan pipeline
// annotated).
//
//===----------------------------------------------------------------------===//

#include "autopar/Transforms/Planning/AutoPlan.h"
#include "autopar/Transforms/Planning/PlanReport.h"

#include "BlockFolding.h"
#include "IntegerProgram.h"
#include "Pricing.h"
#include "Recomputation.h"
#include "SearchReport.h"
#include "StrategyGraph.h"

#include "autopar/Analysis/CostModel.h"
#include "autopar/Analysis/ShardingRule.h"
#include "autopar/Dialect/Autopar/IR/ShardLayout.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <chrono>
#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::planning;
namespace json = llvm::json;

StringRef mlir::autopar::stringifyPlanMode(PlanMode mode) {
  return mode == PlanMode::Training ? "training" : "inference";
}

std::optional<PlanMode> mlir::autopar::symbolizePlanMode(StringRef name) {
  if (name == "inference")
    return PlanMode::Inference;
  if (name == "training")
    return PlanMode::Training;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

StringRef mlir::autopar::stringifyPlanPrecision(PlanPrecision precision) {
  switch (precision) {
  case PlanPrecision::Model:
    return "model";
  case PlanPrecision::F32:
    return "f32";
  case PlanPrecision::F16:
    return "f16";
  case PlanPrecision::BF16:
    return "bf16";
  }
  llvm_unreachable("unknown precision");
}

std::optional<PlanPrecision>
mlir::autopar::symbolizePlanPrecision(StringRef name) {
  return llvm::StringSwitch<std::optional<PlanPrecision>>(name)
      .Case("model", PlanPrecision::Model)
      .Case("f32", PlanPrecision::F32)
      .Case("f16", PlanPrecision::F16)
      .Case("bf16", PlanPrecision::BF16)
      .Default(std::nullopt);
}

struct AnnotatedPlanPricer::Impl {
  /// The graph and the pricer read these by reference.
  AutoPlanOptions options;
  std::unique_ptr<StrategyGraph> graph;
  Choice choice;
  std::unique_ptr<PlanPricer> pricer;
};

AnnotatedPlanPricer::AnnotatedPlanPricer(std::unique_ptr<Impl> impl)
    : impl(std::move(impl)) {}
AnnotatedPlanPricer::~AnnotatedPlanPricer() = default;

FailureOr<std::unique_ptr<AnnotatedPlanPricer>>
AnnotatedPlanPricer::create(ModuleOp annotated,
                            const AutoPlanOptions &options) {
  auto func = annotated.lookupSymbol<func::FuncOp>("main");
  if (!func)
    return annotated.emitError() << "expected a function @main to price";
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  // Heterogeneous devices without pipeline stages: every op runs on every
  // class, at the slowest's pace and within the smallest memory.
  if (options.cluster.hasDeviceClasses())
    impl->options.cluster = options.cluster.getUniform();
  impl->graph = std::make_unique<StrategyGraph>(func, impl->options);
  StrategyGraph &graph = *impl->graph;
  if (failed(graph.build()))
    return failure();
  FailureOr<Choice> choice = graph.readAnnotated();
  if (failed(choice))
    return failure();
  impl->choice = std::move(*choice);
  if (impl->options.mode == PlanMode::Training &&
      impl->options.recompute.kind != RecomputeKind::None) {
    std::vector<FoldedBlock> blocks = foldRepeatedBlocks(graph, false);
    if (failed(applyRecomputation(graph, blocks, impl->options.recompute,
                                  func.getLoc())))
      return failure();
  }
  impl->pricer = std::make_unique<PlanPricer>(graph);
  return std::unique_ptr<AnnotatedPlanPricer>(
      new AnnotatedPlanPricer(std::move(impl)));
}

PlanPrediction AnnotatedPlanPricer::predict(int64_t microbatches,
                                            int64_t activationCopies) {
  impl->options.microbatches = microbatches;
  impl->options.activationCopies = activationCopies;
  PlanPrediction p = impl->pricer->evaluate(impl->choice);
  p.recompute = impl->options.recompute;
  return p;
}

FailureOr<PlanPrediction>
mlir::autopar::predictAnnotatedPlan(ModuleOp annotated,
                                    const AutoPlanOptions &options) {
  FailureOr<std::unique_ptr<AnnotatedPlanPricer>> pricer =
      AnnotatedPlanPricer::create(annotated, options);
  if (failed(pricer))
    return failure();
  return (*pricer)->predict(options.microbatches, options.activationCopies);
}

double mlir::autopar::countModelFlops(ModuleOp module,
                                      const AutoPlanOptions &options) {
  auto func = module.lookupSymbol<func::FuncOp>("main");
  if (!func)
    return 0;
  double flops = 0;
  func.walk([&](Operation *op) {
    OpClass c = classifyOp(op);
    if (!isContractionClass(c))
      return;
    FailureOr<ShardingRule> rule = ShardingRule::get(op);
    if (failed(rule))
      return;
    // Every loop whole: the op's work on one device.
    LoopAxes whole(getLoopExtents(op, *rule).size());
    flops += getOpWork(op, *rule, whole, ArrayRef<int64_t>{1}).flops;
  });
  if (options.mode == PlanMode::Training)
    flops *= 3 * double(options.microbatches);
  return flops;
}

double mlir::autopar::getPeakFlops(const AutoPlanOptions &options) {
  if (options.cluster.hasDeviceClasses()) {
    // The mean over devices: each class weighs by its rows of axis 0.
    double sum = 0, rows = 0;
    for (const DeviceClass &c : options.cluster.deviceClasses) {
      AutoPlanOptions one = options;
      one.cluster = c.device;
      double n = double(c.axis0End - c.axis0Begin);
      sum += n * getPeakFlops(one);
      rows += n;
    }
    return sum / rows;
  }
  if (options.precision != PlanPrecision::Model) {
    auto it = options.cluster.flopsByDtype.find(
        stringifyPlanPrecision(options.precision).str());
    if (it != options.cluster.flopsByDtype.end())
      return it->second;
  }
  return options.cluster.flops;
}

std::string mlir::autopar::describeCutoff(double seconds) {
  return std::isinf(seconds) ? " (none fits)"
                             : llvm::formatv(" of {0:e4} s", seconds).str();
}

/// The plans the search ranges over: what "proven optimal" and "the smallest
/// peak" hold in.
static std::string describeSearchSpace(const AutoPlanOptions &options) {
  return options.foldRepeatedBlocks
             ? "plans in which identical repeated blocks share one strategy "
               "and each op splits only its first reduction loop"
             : "plans in which each op splits only its first reduction loop";
}

FailureOr<AutoPlanResult>
mlir::autopar::planAutomatically(ModuleOp module,
                                 const AutoPlanOptions &options) {
  if (options.cluster.hasDeviceClasses()) {
    AutoPlanOptions uniform = options;
    uniform.cluster = options.cluster.getUniform();
    return planAutomatically(module, uniform);
  }
  auto startTime = std::chrono::steady_clock::now();
  auto func = module.lookupSymbol<func::FuncOp>("main");
  if (!func)
    return module.emitError() << "expected a function @main to plan";
  llvm::raw_ostream *log = options.progress;
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         startTime)
        .count();
  };
  std::string gridText = formatGridShape(options.gridShape);
  AutoPlanResult result;

  StrategyGraph graph(func, options);
  if (failed(graph.build()))
    return failure();
  // Repeated blocks are found either way (full recomputation recomputes
  // them); they share variables only when folding.
  std::vector<FoldedBlock> blocks =
      foldRepeatedBlocks(graph, options.foldRepeatedBlocks);
  std::vector<FoldedBlock> foldedBlocks;
  if (options.foldRepeatedBlocks)
    foldedBlocks = blocks;
  PlanPricer pricer(graph);
  auto solve = [&](double memoryLimit, bool minimizeMemory,
                   double cutoffSeconds = -1) {
    return solvePlanProgram(graph, pricer, memoryLimit, minimizeMemory,
                            options.timeLimitSeconds, cutoffSeconds);
  };
  if (log)
    *log << llvm::formatv("autopar: [{3:f1} s] planning {0} ops on grid "
                          "{1}: {2} distinct after folding repeated blocks\n",
                          graph.getNumNodes(), gridText, graph.getNumReps(),
                          elapsed());

  double limit = options.cluster.memoryBytes > 0
                     ? double(options.cluster.memoryBytes)
                     : -1;
  std::string space = describeSearchSpace(options);
  auto searchFailed = [&](const SolvedProgram &solved, StringRef what) {
    InFlightDiagnostic diag = emitError(func.getLoc());
    if (solved.status == IlpSolution::Status::TimeLimit)
      diag << "the solver stopped at its time limit ("
           << (options.timeLimitSeconds == std::floor(options.timeLimitSeconds)
                   ? std::to_string((int64_t)options.timeLimitSeconds)
                   : llvm::formatv("{0:e1}", options.timeLimitSeconds).str())
           << " s) before finding " << what
           << "; this is no proof that none exists: raise the time limit";
    else
      diag << "the plan search failed: the solver gave neither " << what
           << " nor a proof that none exists";
    return diag;
  };
  bool training = options.mode == PlanMode::Training;
  // The recomputation settings searched (or the one pinned).
  std::vector<RecomputeSpec> candidates{options.recompute};
  if (training && options.searchRecompute)
    candidates = {RecomputeSpec{RecomputeKind::None, -1},
                  RecomputeSpec{RecomputeKind::Selective, -1},
                  RecomputeSpec{RecomputeKind::Full, -1}};
  if (!training)
    candidates = {RecomputeSpec{}};
  // The best plan of one setting.
  struct Outcome {
    RecomputeSpec recompute;
    /// Why the setting does not apply (empty: it does).
    std::string skipped;
    SolvedProgram solved;
    PlanPrediction predicted, free;
    bool binding = false, fits = false;
    /// Why the setting's fastest plan that fits was not searched to the
    /// end: it cannot beat a plan that fits with another setting (empty:
    /// it was).
    std::string pruned;
    /// The nodes the setting recomputes (StrategyGraph::recomputed).
    std::vector<bool> recomputed;
    /// Whether its fastest plan ignoring memory was solved (`free`).
    bool solvedFree = false;
  };
  std::vector<Outcome> outcomes;
  // An earlier setting whose fastest plan ignoring memory fits and that
  // recomputes no node the setting the graph holds does not.
  auto findFittingSubset = [&]() -> const Outcome * {
    for (const Outcome &o : outcomes) {
      if (!o.skipped.empty() || !o.solvedFree || !o.fits || o.binding)
        continue;
      bool subset = true;
      for (unsigned n = 0; n < o.recomputed.size() && subset; ++n)
        subset = !o.recomputed[n] || graph.isRecomputed(n);
      if (subset)
        return &o;
    }
    return nullptr;
  };
  // The setting the graph holds, and the last one (in the searched order)
  // that applies.
  std::optional<RecomputeSpec> held, lastApplied;
  auto hold = [&](const RecomputeSpec &spec) {
    if (!held || !(*held == spec))
      (void)applyRecomputation(graph, blocks, spec, func.getLoc());
    held = spec;
  };
  // The caller's cutoff (AutoPlanOptions::stepCutoff), with the solver's
  // tolerance: ties within it are solved, not pruned.
  auto withTolerance = [](double seconds) {
    return seconds * (1 + 1e-6) + 1e-12;
  };
  double external =
      options.stepCutoff >= 0 ? withTolerance(options.stepCutoff) : -1;
  // 1. The fastest plan of each setting ignoring memory (none first;
  // selective and full only when it does not fit). These do not depend on
  // the memory rows, so a memo shared by plans of the same module reuses
  // them.
  for (const RecomputeSpec &spec : candidates) {
    bool searched = candidates.size() > 1;
    Outcome outcome;
    outcome.recompute = spec;
    {
      // A searched setting the model has no region for is skipped.
      std::optional<ScopedDiagnosticHandler> quiet;
      std::string why;
      if (searched)
        quiet.emplace(func.getContext(), [&](Diagnostic &diag) {
          why = diag.str();
          return success();
        });
      held.reset();
      if (failed(applyRecomputation(graph, blocks, spec, func.getLoc()))) {
        if (!searched)
          return failure();
        outcome.skipped = why;
        outcomes.push_back(std::move(outcome));
        continue;
      }
      held = lastApplied = spec;
    }
    outcome.recomputed = graph.recomputed;
    outcome.recomputed.resize(graph.getNumNodes(), false);
    // A setting that recomputes every node an earlier one does (and more)
    // only adds time to every plan: when that earlier setting's fastest plan
    // ignoring memory fits, no plan of this one is faster, and its programs
    // are not solved.
    if (const Outcome *covering = findFittingSubset()) {
      outcome.pruned = "it recomputes every op " +
                       stringifyRecomputeSpec(covering->recompute) +
                       " recomputation does, whose fastest plan fits";
      outcomes.push_back(std::move(outcome));
      continue;
    }
    std::string memoKey = stringifyRecomputeSpec(spec);
    const SolvedProgram *memoised = nullptr;
    if (options.memo)
      if (auto it = options.memo->unconstrained.find(memoKey);
          it != options.memo->unconstrained.end())
        memoised = &it->second;
    if (log)
      *log << llvm::formatv("autopar: [{0:f1} s] {1}{2} the fastest "
                            "plan (memory unconstrained)\n",
                            elapsed(),
                            training ? "recomputation " +
                                           stringifyRecomputeSpec(spec) + ": "
                                     : std::string(),
                            memoised ? "reusing" : "solving for");
    if (memoised) {
      outcome.solved = *memoised;
      ++options.memo->reused;
    } else {
      outcome.solved = solve(-1, false);
      // Only a proven optimum is reused: a plan stopped at the time limit
      // could come out differently when solved again.
      if (options.memo && outcome.solved.status == IlpSolution::Status::Optimal)
        options.memo->unconstrained[memoKey] = outcome.solved;
    }
    if (!outcome.solved.hasSolution())
      return searchFailed(outcome.solved, "any plan");
    outcome.free = pricer.evaluate(outcome.solved.choice);
    outcome.solvedFree = true;
    // No plan of any setting is faster than the fastest plan without
    // recomputation ignoring memory.
    if (spec.kind == RecomputeKind::None && external >= 0 &&
        outcome.free.stepTime > external)
      return emitError(func.getLoc())
             << kNoPlanUnderCutoff << describeCutoff(options.stepCutoff)
             << ": the fastest plan ignoring memory takes "
             << outcome.free.stepTime << " s";
    outcome.fits = outcome.free.fits;
    outcome.binding = limit >= 0 && !outcome.free.fits;
    if (outcome.fits)
      outcome.predicted = outcome.free;
    outcomes.push_back(std::move(outcome));
    // Recomputation only adds time to every plan: when the fastest plan
    // without it fits, no setting is faster.
    if (spec.kind == RecomputeKind::None && outcomes.back().fits &&
        !outcomes.back().binding)
      break;
  }
  // 2. Where memory binds, the fastest plan that fits, in the searched
  // order. A constrained optimum is never faster than the setting's
  // unconstrained one, so a setting whose unconstrained plan is already
  // slower than a fitting plan found (beyond the solver's tolerance) cannot
  // be chosen and its constrained program is not solved. Otherwise the
  // program is solved with that plan's step as a cutoff: it only has to
  // find plans at least as fast, and proving there are none is cheaper than
  // finding its own optimum.
  auto fastestFitting = [&]() -> const Outcome * {
    const Outcome *fastest = nullptr;
    for (const Outcome &o : outcomes)
      if (o.fits &&
          (!fastest || o.predicted.stepTime < fastest->predicted.stepTime))
        fastest = &o;
    return fastest;
  };
  for (Outcome &outcome : outcomes) {
    if (!outcome.skipped.empty() || !outcome.binding)
      continue;
    double cutoff = external;
    bool cutByCaller = cutoff >= 0;
    if (const Outcome *fastest = fastestFitting()) {
      double own = withTolerance(fastest->predicted.stepTime);
      if (cutoff < 0 || own <= cutoff) {
        cutoff = own;
        cutByCaller = false;
      }
    }
    if (cutoff >= 0 && outcome.free.stepTime > cutoff) {
      outcome.pruned = cutByCaller
                           ? "its fastest plan ignoring memory is slower "
                             "than the cutoff"
                           : "its fastest plan ignoring memory is slower "
                             "than a plan that fits";
      if (options.memo)
        ++options.memo->pruned;
      continue;
    }
    // What solves with fewer microbatches in flight (or more memory) of the
    // same stage proved: a bound above the cutoff, or no plan that fits,
    // decides the solve without it.
    std::string boundKey = stringifyRecomputeSpec(outcome.recompute);
    if (options.memo) {
      bool decided = false;
      for (const PlanSearchMemo::ConstrainedBound &b :
           options.memo->constrained[boundKey]) {
        if (b.copies > options.activationCopies || b.memoryLimit < limit)
          continue;
        bool none = std::isinf(b.seconds);
        bool slower = cutoff >= 0 &&
                      (b.strict ? b.seconds >= cutoff : b.seconds > cutoff);
        decided |= none || slower;
      }
      if (decided) {
        // As the solve would have ended: infeasible, under the cutoff when
        // there is one.
        if (cutoff >= 0) {
          outcome.pruned = cutByCaller
                               ? "no plan that fits is as fast as the cutoff"
                               : "no plan that fits is as fast as a plan "
                                 "that fits with another setting";
          ++options.memo->pruned;
        }
        ++options.memo->bounded;
        if (log)
          *log << llvm::formatv(
              "autopar: [{0:f1} s] {1}fastest plan that fits is bounded by "
              "a search with fewer microbatches in flight; not solved\n",
              elapsed(),
              training ? "recomputation " + boundKey + ": " : std::string());
        continue;
      }
    }
    hold(outcome.recompute);
    if (log)
      *log << llvm::formatv(
          "autopar: [{3:f1} s] {2}fastest plan needs {0} per device, over "
          "the {1} limit; solving with the memory limit{4}\n",
          formatByteSize(outcome.free.peakMemoryBytes), formatByteSize(limit),
          training ? "recomputation " +
                         stringifyRecomputeSpec(outcome.recompute) + ": "
                   : std::string(),
          elapsed(),
          cutoff >= 0
              ? llvm::formatv(" (plans of at most {0:e3} s)", cutoff).str()
              : std::string());
    SolvedProgram constrained = solve(limit, false, cutoff);
    // Stopped by the time limit under the cutoff: nothing is proven, solve
    // as without one.
    if (cutoff >= 0 && std::isfinite(cutoff) &&
        constrained.status == IlpSolution::Status::TimeLimit)
      constrained = solve(limit, false);
    // Record what the solve proved for the same stage with more microbatches
    // in flight.
    if (options.memo) {
      std::optional<PlanSearchMemo::ConstrainedBound> proven;
      if (constrained.status == IlpSolution::Status::Optimal)
        proven = {options.activationCopies, limit, constrained.objective / 1e6,
                  false};
      else if (constrained.status == IlpSolution::Status::Infeasible)
        proven = {options.activationCopies, limit,
                  cutoff >= 0 ? cutoff
                              : std::numeric_limits<double>::infinity(),
                  true};
      if (proven)
        options.memo->constrained[boundKey].push_back(*proven);
    }
    if (constrained.hasSolution()) {
      outcome.solved = constrained;
      outcome.fits = true;
      outcome.predicted = pricer.evaluate(outcome.solved.choice);
    } else if (constrained.status != IlpSolution::Status::Infeasible) {
      return searchFailed(constrained,
                          "a plan that fits in " +
                              std::to_string(options.cluster.memoryBytes) +
                              " bytes per device");
    } else if (cutoff >= 0) {
      outcome.pruned = cutByCaller
                           ? "no plan that fits is as fast as the cutoff"
                           : "no plan that fits is as fast as a plan that "
                             "fits with another setting";
      if (options.memo)
        ++options.memo->pruned;
    }
  }
  json::Array tried;
  for (const Outcome &outcome : outcomes) {
    if (!outcome.skipped.empty()) {
      tried.push_back(
          json::Object{{"recompute", stringifyRecomputeSpec(outcome.recompute)},
                       {"skipped", outcome.skipped}});
      continue;
    }
    json::Object entry{
        {"recompute", stringifyRecomputeSpec(outcome.recompute)}};
    if (!outcome.pruned.empty())
      entry["pruned"] = outcome.pruned;
    else
      entry["fits"] = outcome.fits;
    if (outcome.fits)
      entry["step_time_s"] = outcome.predicted.stepTime;
    if (outcome.solvedFree) {
      if (!outcome.pruned.empty())
        entry["unconstrained_step_time_s"] = outcome.free.stepTime;
      entry["unconstrained_peak_bytes"] = outcome.free.peakMemoryBytes;
    }
    tried.push_back(std::move(entry));
  }
  std::optional<Outcome> best;
  if (const Outcome *fastest = fastestFitting())
    best = *fastest;
  // Nothing that fits beats the caller's cutoff: the search was cut short
  // (no smallest peak is sought, that would cost another solve).
  if (external >= 0 && (!best || best->predicted.stepTime > external))
    return emitError(func.getLoc())
           << kNoPlanUnderCutoff << describeCutoff(options.stepCutoff)
           << " among the " << space
           << (training && candidates.size() > 1
                   ? " with recomputation none, selective or full"
                   : "");
  if (!best) {
    // Nothing fits even with the setting that stores least (the last one
    // that applies): name the smallest peak there.
    if (lastApplied)
      hold(*lastApplied);
    SolvedProgram least = solve(-1, true);
    InFlightDiagnostic diag = emitError(func.getLoc())
                              << "no plan fits in "
                              << options.cluster.memoryBytes
                              << " bytes per device among the " << space;
    if (training && candidates.size() > 1)
      diag << " with recomputation none, selective or full; with "
           << stringifyRecomputeSpec(*lastApplied) << " recomputation,";
    else if (training)
      diag << " with recomputation " << stringifyRecomputeSpec(*lastApplied)
           << ";";
    else
      diag << ";";
    if (least.hasSolution()) {
      PlanPrediction p = pricer.evaluate(least.choice);
      diag << (least.status == IlpSolution::Status::Optimal
                   ? " the smallest peak any of them reaches is "
                   : " the smallest peak found before the time limit "
                     "(not proven smallest) is ")
           << p.peakMemoryBytes << " bytes ("
           << formatByteSize(p.peakMemoryBytes) << ") at '" << p.peakAt << "'";
    } else if (least.status == IlpSolution::Status::TimeLimit) {
      diag << " the solver stopped at its time limit before finding the "
              "smallest peak";
    } else {
      // CBC can stop very early without a status; the diagnostic still
      // says why no peak is named.
      diag << " the solver stopped without finding the smallest peak";
    }
    return failure();
  }
  // The graph holds the chosen setting again.
  hold(best->recompute);
  SolvedProgram chosen = best->solved;
  PlanPrediction free = best->free;
  bool binding = best->binding;
  result.predicted = pricer.evaluate(chosen.choice);
  result.predicted.recompute = best->recompute;
  result.predicted.memoryBinds = binding;
  // Self-check: the memory rows held the plan under the limit.
  if (binding && !result.predicted.fits)
    return emitError(func.getLoc())
           << "internal error: the memory-constrained search chose a plan "
              "whose peak is "
           << result.predicted.peakMemoryBytes << " bytes at '"
           << result.predicted.peakAt << "', over the "
           << options.cluster.memoryBytes << " bytes limit";
  // Self-check: the program's objective is the plan's price, less the
  // step's fixed cost, which no choice changes and the program leaves out
  // (a reshard several readers share is priced once by both).
  double ilpSeconds = chosen.objective / 1e6;
  double mismatch = std::fabs(ilpSeconds + result.predicted.stepOverhead -
                              result.predicted.stepTime);
  if (mismatch > 1e-6 * std::max(1e-9, result.predicted.stepTime) + 1e-12)
    return emitError(func.getLoc())
           << "internal error: the search priced its plan at " << ilpSeconds
           << " s, the cost model at " << result.predicted.stepTime
           << " s (of which " << result.predicted.stepOverhead
           << " s are the step's fixed cost)";
  // Self-check: with the distributed optimizer, the plan already has the
  // layouts its split gives, so the program the split leaves is this plan.
  if (!graph.satisfiesSplit(chosen.choice))
    return emitError(func.getLoc())
           << "internal error: the search chose a plan that the distributed "
              "optimizer's split would change";
  graph.annotate(chosen.choice);
  describeDecisions(graph, pricer, chosen.choice, result.opDetails);
  // The grid the annotations refer to.
  if (!getUniqueGrid(module, /*emitErrors=*/false)) {
    OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
    shard::GridOp::create(b, module.getLoc(), "grid", options.gridShape);
  }

  result.searchTimeSeconds = std::chrono::duration<double>(
                                 std::chrono::steady_clock::now() - startTime)
                                 .count();
  json::Object search{
      {"method", "integer program (COIN-OR CBC)"},
      {"optimal", chosen.status == IlpSolution::Status::Optimal},
      {"optimality_gap", chosen.gap},
      {"variables", (int64_t)chosen.variables},
      {"constraints", (int64_t)chosen.rows},
      {"ops", (int64_t)graph.getNumComputeOps()},
      {"distinct_nodes", (int64_t)graph.getNumReps()},
      {"repeated_blocks", describeBlocks(graph, foldedBlocks)},
      {"rule", options.foldRepeatedBlocks
                   ? "identical repeated blocks share one strategy"
                   : "every op chosen independently"},
      {"space", space}};
  json::Object memory{{"limit_bytes", options.cluster.memoryBytes},
                      {"peak_bytes", result.predicted.peakMemoryBytes},
                      {"peak_at", result.predicted.peakAt},
                      {"binding", binding},
                      {"unconstrained_step_time_s", free.stepTime},
                      {"unconstrained_peak_bytes", free.peakMemoryBytes}};
  if (options.mode == PlanMode::Training) {
    memory["parameter_state_bytes"] = result.predicted.parameterStateBytes;
    memory["activation_bytes"] = result.predicted.activationBytes;
  } else {
    memory["weight_bytes"] = result.predicted.parameterStateBytes;
    memory["activation_bytes"] = result.predicted.activationBytes;
  }
  if (training) {
    json::Object recompute{{"setting", stringifyRecomputeSpec(best->recompute)},
                           {"searched", candidates.size() > 1},
                           {"recompute_s", result.predicted.recomputeTime},
                           {"tried", std::move(tried)}};
    if (best->recompute.kind == RecomputeKind::Full) {
      int64_t available = 0;
      for (const FoldedBlock &b : blocks)
        available += b.repeats;
      recompute["blocks"] =
          best->recompute.blocks < 0 ? available : best->recompute.blocks;
      recompute["of_blocks"] = available;
    }
    result.report["recompute"] = std::move(recompute);
  }
  result.report["search"] = std::move(search);
  result.report["memory"] = std::move(memory);
  if (log)
    *log << llvm::formatv("autopar: plan found in {0:f2} s: step {1:e3} s, "
                          "peak {2} per device{3}\n",
                          result.searchTimeSeconds, result.predicted.stepTime,
                          formatByteSize(result.predicted.peakMemoryBytes),
                          chosen.status == IlpSolution::Status::Optimal
                              ? " (proven optimal among the " + space +
                                    (training && candidates.size() > 1
                                         ? " and recomputation none, "
                                           "selective or full"
                                         : "") +
                                    ")"
                              : llvm::formatv(" (NOT proven optimal: the "
                                              "solver stopped at its time "
                                              "limit, gap {0:p})",
                                              chosen.gap)
                                    .str());
  return result;
}
