//===- PlanReport.h - plan.json and plan.txt ----------------------*- C++
//-*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The plan as a file: `plan.json` (machine-readable, read back by
// `--plan PLAN.json`) and `plan.txt` (for people). The format is documented
// in docs/plan-format.md.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_TRANSFORMS_PLANNING_PLANREPORT_H
#define AUTOPAR_TRANSFORMS_PLANNING_PLANREPORT_H

#include "autopar/Dialect/Autopar/IR/Autopar.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

#include <map>
#include <string>

namespace mlir::autopar {

/// Version of the plan file format written by writePlanJson.
constexpr int64_t kPlanSchemaVersion = 1;

/// What the report says about the compilation beyond the IR.
struct PlanMetadata {
  std::string modelSha256;
  /// The `--plan` value: replicated, data, tensor, or the plan file path.
  std::string strategy;
  std::string mode = "inference";
  /// Seconds the plan search took (0 for fixed plans).
  double searchTimeSeconds = 0;
  /// Top-level fields added to plan.json (predicted, baselines, search,
  /// memory, cluster); `predicted` is merged with the communication volume.
  llvm::json::Object extra;
  /// Per-op fields (strategy, cost, runner-up) merged into each op entry.
  std::map<Operation *, llvm::json::Object> opDetails;
};

/// Builds the plan of an annotated module (after autopar-apply-plan): grid,
/// every value's sharding keyed by ONNX tensor name, every op with its node
/// name, op and operand/result shardings, and the collectives the plan implies
/// with the bytes each moves per device.
/// The compact form of plan.txt: one entry per dimension, `_` for whole,
/// the digits of the splitting axes otherwise, `+partial(a)` for a pending
/// sum, e.g. `[0,_]+partial(1)`.
std::string formatShardingText(ShardingAttr sharding);

/// `12.34 GiB`: bytes in binary units with two decimals.
std::string formatByteSize(double bytes);

llvm::json::Value buildPlanJson(ModuleOp annotated, const PlanMetadata &meta);

/// Renders a plan built by buildPlanJson for people.
std::string renderPlanText(const llvm::json::Value &plan);

/// Renders a plan built by buildPlanJson as one self-contained HTML page
/// (inline SVG and CSS, no script, nothing fetched): the prediction, the
/// baselines side by side, compute against communication per op kind, memory
/// per device over program order with the peak (the binding point when the
/// memory limit binds) marked, the pipeline schedule when the plan has
/// stages, and every op's sharding per grid axis with repeated blocks drawn
/// once.
std::string renderPlanHtml(const llvm::json::Value &plan);

/// Parses the `values` of a plan file: ONNX tensor name -> sharding.
/// Errors are emitted at `loc`.
FailureOr<std::map<std::string, ShardingAttr>>
readPlanValues(StringRef path, MLIRContext *ctx, Location loc);

/// Writes `plan.json` and `plan.txt` into `outDir`; returns the lowercase hex
/// SHA-256 of the plan.json bytes in `planSha256`.
LogicalResult writePlanFiles(ModuleOp annotated, const PlanMetadata &meta,
                             StringRef outDir, std::string &planSha256,
                             std::string &error);

} // namespace mlir::autopar

#endif // AUTOPAR_TRANSFORMS_PLANNING_PLANREPORT_H
