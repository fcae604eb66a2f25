//===- AutoPlan.h - automatic parallel planning -------------------*- C++
//-*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The planner: every value of @main gets a sharding chosen by an exact search
// over the strategies the ops' sharding rules allow, minimizing the predicted
// step time (compute + collectives, CostModel.h) subject to the per-device
// memory limit at every liveness point.
//
// The search is an integer program (one binary per op strategy, one
// continuous variable per pair of producer/consumer layouts on an edge)
// solved to proven optimality by COIN-OR CBC. Repeated blocks (transformer
// layers) are found from the graph structure and share one set of variables,
// so the problem grows with the number of distinct blocks, not layers; the
// result is exact under the rule that identical blocks share one strategy.
// A pipeline-stage dimension fits around this: one problem per stage
// candidate, combined by a dynamic program over stage boundaries.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_TRANSFORMS_PLANNING_AUTOPLAN_H
#define AUTOPAR_TRANSFORMS_PLANNING_AUTOPLAN_H

#include "autopar/Analysis/Cluster.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

#include "llvm/Support/raw_ostream.h"
#include <memory>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace mlir::autopar {

/// Solutions that plans of one module can share (defined where the search
/// is): see AutoPlanOptions::memo.
struct PlanSearchMemo;
class ReshardCostCache;

enum class PlanMode { Inference, Training };
StringRef stringifyPlanMode(PlanMode mode);
std::optional<PlanMode> symbolizePlanMode(StringRef name);

/// The floating-point type a plan computes, stores activations and
/// communicates in. `Model`: each value's own type.
enum class PlanPrecision { Model, F32, F16, BF16 };
/// `model`, `f32`, `f16` or `bf16`.
StringRef stringifyPlanPrecision(PlanPrecision precision);
std::optional<PlanPrecision> symbolizePlanPrecision(StringRef name);

/// Activation recomputation in training (Korthikanti et al. 2022).
enum class RecomputeKind {
  /// Every activation is stored for the backward pass.
  None,
  /// The attention core (the ops from a contraction of two activations, such
  /// as Q x K^T, up to the next one, such as probabilities x V) is not stored
  /// and is recomputed before its backward pass.
  Selective,
  /// In the first `blocks` repeated blocks only the values that leave the
  /// block are stored; the whole block runs forward again before its
  /// backward pass.
  Full,
};
/// `none`, `selective` or `full`.
StringRef stringifyRecomputeKind(RecomputeKind kind);
std::optional<RecomputeKind> symbolizeRecomputeKind(StringRef name);

/// A recomputation setting: a kind and, for `Full`, how many repeated blocks
/// (in program order; -1: all of them).
struct RecomputeSpec {
  RecomputeKind kind = RecomputeKind::None;
  int64_t blocks = -1;
  bool operator==(const RecomputeSpec &o) const {
    return kind == o.kind && blocks == o.blocks;
  }
};
/// `none`, `selective`, `full` or `full:K`.
std::string stringifyRecomputeSpec(const RecomputeSpec &spec);
/// Parses `none`, `selective`, `full` or `full:K`; nullopt when malformed.
std::optional<RecomputeSpec> parseRecomputeSpec(StringRef text);

struct AutoPlanOptions {
  SmallVector<int64_t> gridShape;
  ClusterSpec cluster;
  PlanMode mode = PlanMode::Inference;
  /// Compute, stored activations and communication use this type (float
  /// values only). In training, master weights, accumulated gradients and
  /// Adam states stay fp32 (Megatron's count: 18 bytes per parameter in 16-bit
  /// precision, 16 in f32).
  PlanPrecision precision = PlanPrecision::Model;
  /// Training: the fp32 master weights and Adam states of a weight are
  /// sharded over the devices that hold identical replicas of it (ZeRO-1,
  /// Megatron's distributed optimizer: 6 + 12/d bytes per parameter); the
  /// gradient all-reduce becomes a reduce-scatter plus an all-gather of the
  /// same volume. On a compiled step, whose optimizer updates are explicit
  /// ops (planned in mode Inference), every plan is priced with the split
  /// autopar-shard-optimizer-state gives it (OptimizerStateSplit.h): the
  /// search chooses among the programs that split leaves.
  bool shardOptimizerState = false;
  /// Training: the weights not trained (`--freeze`; isTrainableWeight in
  /// autopar/Transforms/Autodiff/Trainable.h, the definition compile uses):
  /// buffers without a gradient or optimizer state, as Megatron keeps its
  /// causal mask.
  std::vector<std::string> frozenWeights;
  /// Training: microbatches accumulated per step. The module's batch is one
  /// microbatch over all data-parallel devices; compute and activation
  /// traffic repeat per microbatch, a weight's gradient reduction and the
  /// optimizer update happen once per step.
  int64_t microbatches = 1;
  /// Training: microbatches whose stored activations a device holds at once
  /// (a pipeline stage's microbatches in flight); the runtime inputs and
  /// activations of the persistent set count this many times.
  int64_t activationCopies = 1;
  /// The module is one pipeline stage holding a single repeated block of
  /// the whole model (its own structure shows no repetition): full
  /// recomputation then recomputes the whole stage as one block.
  bool singleBlockStage = false;
  /// Training: the recomputation priced; ignored when `searchRecompute`.
  RecomputeSpec recompute;
  /// Training: search the recomputation too (none first; selective and full
  /// recomputation of all repeated blocks only when memory binds).
  bool searchRecompute = false;
  /// Share one strategy among repeated blocks (off: solve the unrolled
  /// problem, for tests and for checking the folding).
  bool foldRepeatedBlocks = true;
  /// Solver time limit; on expiry the best plan found is kept and the report
  /// states the optimality gap.
  double timeLimitSeconds = 600;
  /// Progress lines go here (null: silent).
  llvm::raw_ostream *progress = nullptr;
  /// Shared by the plans of one module whose options differ at most in
  /// `activationCopies` and the memory limit (a pipeline stage planned with
  /// different microbatches in flight): the memory-unconstrained optimum of
  /// each recomputation setting is solved once. Null: nothing is shared.
  PlanSearchMemo *memo = nullptr;
  /// Only plans whose step is below this many seconds are wanted (< 0: no
  /// bound; infinity: any plan that fits): a search that proves that no plan
  /// that fits is that fast fails with a diagnostic starting with
  /// kNoPlanUnderCutoff, without the solve that names the smallest peak. A
  /// stage search of `--stages auto` passes the best pipeline found with
  /// another stage count: a stage at least that slow cannot be part of a
  /// faster pipeline.
  double stepCutoff = -1;
  /// Reshard prices shared by the programs of one grid shape and cluster (a
  /// pipeline's stage candidates on one kind of slab); unset, each pricer
  /// keeps its own. Used only where it matches the options' grid and axes.
  ReshardCostCache *reshardCache = nullptr;
};

/// The predicted cost of one plan.
struct PlanPrediction {
  double stepTime = 0;    ///< seconds
  double computeTime = 0; ///< seconds
  double commTime = 0;    ///< seconds
  /// The device's fixed cost of a step (ClusterSpec::stepOverhead),
  /// included in stepTime.
  double stepOverhead = 0;
  int64_t peakMemoryBytes = 0;
  /// Where the peak is reached (an ONNX node or value name).
  std::string peakAt;
  bool fits = true;
  /// The part of peak memory that is weights (inference), or parameters,
  /// gradients and optimizer state (training); the rest is activations and
  /// resharded copies.
  int64_t parameterStateBytes = 0;
  int64_t activationBytes = 0;
  /// False for a baseline that cannot run on this grid (e.g. a batch that
  /// does not divide over the devices); `invalidReason` says why.
  bool valid = true;
  std::string invalidReason;
  /// Training: the recomputation the plan was priced with, and the forward
  /// seconds it repeats (part of computeTime).
  RecomputeSpec recompute;
  double recomputeTime = 0;
  /// Bytes per device at each liveness point of the program, in program
  /// order: the node that runs there and everything live across it
  /// (persistent values included).
  std::vector<std::pair<std::string, int64_t>> memoryProfile;
  /// Whether the memory limit bound the search that chose the plan (the
  /// fastest plan ignoring memory does not fit); false for a plan priced, not
  /// searched.
  bool memoryBinds = false;
};

struct AutoPlanResult {
  PlanPrediction predicted;
  double searchTimeSeconds = 0;
  /// Details for the report (search, memory, per-op decisions): merged into
  /// plan.json by the caller.
  llvm::json::Object report;
  /// Per op of @main (by position in program order among compute ops): its
  /// decision as JSON (strategy, cost, runner-up).
  std::map<Operation *, llvm::json::Object> opDetails;
};

/// The start of the diagnostic of a search that `AutoPlanOptions::stepCutoff`
/// cut short: no plan that fits is faster than the cutoff.
constexpr llvm::StringLiteral kNoPlanUnderCutoff =
    "no plan that fits is faster than the cutoff";
/// ` of X s`, or what an infinite cutoff means, for the diagnostics.
std::string describeCutoff(double seconds);

/// Plans `module` (imported, unannotated) and writes the chosen shardings on
/// it (as `autopar-apply-plan` would from a plan file). Fails with a
/// diagnostic when no plan fits in memory (naming the smallest peak any plan
/// reaches) or the model cannot be planned.
FailureOr<AutoPlanResult> planAutomatically(ModuleOp module,
                                            const AutoPlanOptions &options);

/// The model FLOPs of one step of @main: the contractions' (matmul, gemm,
/// einsum, conv) multiply-adds, times 3 in training (forward and the two
/// gradient contractions; recomputation not counted) and times the
/// microbatches. The numerator of model FLOP utilization.
double countModelFlops(ModuleOp module, const AutoPlanOptions &options);

/// The peak FLOP/s per device a plan's utilization is measured against: the
/// cluster's rate for the plan's precision when it lists one, else `flops`.
double getPeakFlops(const AutoPlanOptions &options);

/// Marks the regions `spec` recomputes in the forward program `module` (a
/// training step's @main before differentiation): every op of region i gets
/// `autopar.recompute_region = i`, the regions the planner prices
/// (Recomputation.h: the attention cores, or the first K repeated blocks;
/// `singleBlockStage`: the program is one block). Fails with the planner's
/// diagnostic when the setting does not apply.
LogicalResult markRecomputeRegions(ModuleOp module, const RecomputeSpec &spec,
                                   bool singleBlockStage);

/// Prices an annotated module (any plan) with the same model.
FailureOr<PlanPrediction> predictAnnotatedPlan(ModuleOp annotated,
                                               const AutoPlanOptions &options);

/// An annotated module priced again and again with other microbatch counts
/// and microbatches in flight (a pipeline stage's plan): the strategy graph
/// predictAnnotatedPlan builds for each call is built once here. The module
/// must outlive the pricer and stay unchanged.
class AnnotatedPlanPricer {
public:
  /// Fails with predictAnnotatedPlan's diagnostics.
  static FailureOr<std::unique_ptr<AnnotatedPlanPricer>>
  create(ModuleOp annotated, const AutoPlanOptions &options);
  ~AnnotatedPlanPricer();
  /// predictAnnotatedPlan with the options' `microbatches` and
  /// `activationCopies` replaced.
  PlanPrediction predict(int64_t microbatches, int64_t activationCopies);

private:
  struct Impl;
  explicit AnnotatedPlanPricer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace mlir::autopar

#endif // AUTOPAR_TRANSFORMS_PLANNING_AUTOPLAN_H
