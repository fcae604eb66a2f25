//===- AutoPlanPass.cpp - the planner as a pass ---------------------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "autopar/Dialect/Autopar/IR/Autopar.h"
#include "autopar/Dialect/Autopar/IR/ShardLayout.h"
#include "autopar/Transforms/Passes.h"
#include "autopar/Transforms/Planning/AutoPlan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::autopar {
#define GEN_PASS_DEF_AUTOPLANPASS
#include "autopar/Transforms/Passes.h.inc"
} // namespace mlir::autopar

using namespace mlir;
using namespace mlir::autopar;

namespace {
struct AutoPlanPass
    : public mlir::autopar::impl::AutoPlanPassBase<AutoPlanPass> {
  using Base::Base;
  void runOnOperation() override;
};
} // namespace

void AutoPlanPass::runOnOperation() {
  ModuleOp module = getOperation();
  std::string error;
  FailureOr<SmallVector<int64_t>> shape = parseGridShape(grid, error);
  if (failed(shape)) {
    module.emitError() << error;
    return signalPassFailure();
  }
  if (cluster.empty()) {
    module.emitError() << "autopar-auto-plan needs a cluster file "
                          "(cluster=FILE.json)";
    return signalPassFailure();
  }
  AutoPlanOptions options;
  options.gridShape = *shape;
  FailureOr<ClusterSpec> spec = readClusterFile(cluster, *shape, error);
  if (failed(spec)) {
    module.emitError() << error;
    return signalPassFailure();
  }
  options.cluster = *spec;
  std::optional<PlanMode> planMode = symbolizePlanMode(mode);
  if (!planMode) {
    module.emitError() << "unknown mode '" << mode
                       << "', expected inference or training";
    return signalPassFailure();
  }
  options.mode = *planMode;
  options.foldRepeatedBlocks = fold;
  std::optional<PlanPrecision> planPrecision =
      symbolizePlanPrecision(precision);
  if (!planPrecision) {
    module.emitError() << "unknown precision '" << precision
                       << "', expected model, f32, f16 or bf16";
    return signalPassFailure();
  }
  options.precision = *planPrecision;
  options.shardOptimizerState = shardOptimizer;
  if (microbatches < 1 ||
      (microbatches > 1 && options.mode != PlanMode::Training)) {
    module.emitError() << "microbatches must be at least 1, and above 1 only "
                          "in training, got "
                       << static_cast<int64_t>(microbatches);
    return signalPassFailure();
  }
  options.microbatches = microbatches;
  if (recompute == "auto") {
    options.searchRecompute = true;
  } else if (std::optional<RecomputeSpec> spec =
                 parseRecomputeSpec(recompute)) {
    options.recompute = *spec;
  } else {
    module.emitError() << "unknown recompute '" << recompute
                       << "', expected none, selective, full, full:K or auto";
    return signalPassFailure();
  }
  if ((options.searchRecompute ||
       options.recompute.kind != RecomputeKind::None) &&
      options.mode != PlanMode::Training) {
    module.emitError() << "recompute needs mode=training";
    return signalPassFailure();
  }
  if (!(timeLimit > 0)) {
    module.emitError() << "time-limit must be a positive number of seconds";
    return signalPassFailure();
  }
  options.timeLimitSeconds = timeLimit;
  FailureOr<AutoPlanResult> result = planAutomatically(module, options);
  if (failed(result))
    return signalPassFailure();
  if (!remarks)
    return;
  auto func = module.lookupSymbol<func::FuncOp>("main");
  func.walk([&](Operation *op) {
    auto it = result->opDetails.find(op);
    if (it == result->opDetails.end())
      return;
    const llvm::json::Object &details = it->second;
    InFlightDiagnostic d = op->emitRemark()
                           << "strategy " << *details.getString("strategy");
    if (const llvm::json::Object *r = details.getObject("runner_up"))
      d << "; runner-up " << *r->getString("strategy") << " costs "
        << *r->getNumber("cost_delta_s") << " s more";
  });
  const PlanPrediction &p = result->predicted;
  InFlightDiagnostic summary =
      func.emitRemark() << "predicted step " << p.stepTime << " s (compute "
                        << p.computeTime << " s, communication " << p.commTime
                        << " s), peak memory " << p.peakMemoryBytes
                        << " bytes at '" << p.peakAt << "'";
  if (options.mode == PlanMode::Training)
    summary << ", recomputation " << stringifyRecomputeSpec(p.recompute) << " ("
            << p.recomputeTime << " s)";
}
