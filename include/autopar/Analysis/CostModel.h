//===- CostModel.h - analytical cost of a parallel plan ----------*- C++
//-*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The primitive prices planning is built from, per device:
//   - compute: roofline, max(FLOPs / class FLOP rate, bytes / memory
//     bandwidth), from the op's loop nest split by its loop assignment;
//   - collectives: alpha-beta per grid axis with the ring algorithm's volume
//     (all-reduce 2(n-1)/n of the bytes, all-gather and reduce-scatter and
//     all-to-all (n-1)/n, swaps (n-1)/n point to point);
//   - memory: local bytes of a value under a sharding.
// PlanCostModel.h combines them over a graph (liveness, training step).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_ANALYSIS_COSTMODEL_H
#define AUTOPAR_ANALYSIS_COSTMODEL_H

#include "autopar/Analysis/Cluster.h"
#include "autopar/Analysis/Reshard.h"
#include "autopar/Analysis/ShardingRule.h"

#include "llvm/ADT/DenseMap.h"

#include <tuple>

namespace mlir::autopar {

class ElementwiseFusion;

/// What one device does for one op.
struct OpWork {
  double flops = 0; ///< floating-point operations
  /// Bytes of operands read plus results written; with an
  /// ElementwiseFusion, only the reads and writes its kernels make.
  double bytes = 0;
  /// For a contraction (two operands and reduction loops): the smallest of
  /// its local M, N and K (the products of the per-device extents of the
  /// loops only the first operand walks, only the second walks, and the
  /// reductions), which sets the GEMM's efficiency; 0 for other ops.
  double gemmMinDim = 0;
  /// The share of `flops` the generated code executes: a convolution that
  /// takes the Winograd form (getWinogradWorkRatio) does 4/9 of the direct
  /// form's multiply-adds on large planes. `flops` stays the model's count
  /// (as FLOP/s and MFU figures count it); compute time and calibrated
  /// rates use `flops * flopScale`.
  double flopScale = 1;
  /// True when the op's innermost loop walks contiguous memory in its result
  /// and in every operand it indexes, in local runs of at least
  /// kMinStreamedRunBytes: the op moves whole rows (attention's head
  /// transposes, a gather of embedding rows, a concat along an outer
  /// dimension). A data-movement op that does is priced at the elementwise
  /// bandwidth, a copy's; one that does not (a transpose of the innermost
  /// dimension) at its class's.
  bool streamsRows = false;

  /// The FLOPs the generated code executes.
  double getExecutedFlops() const { return flops * flopScale; }
};

/// The shortest contiguous run, in bytes, that getOpWork counts as moving
/// whole rows: one cache line.
constexpr double kMinStreamedRunBytes = 64;

/// FLOPs per iteration of the loop nest: 2 for contractions (multiply-add),
/// a per-op constant for the rest (documented in docs/cost-model.md).
double getFlopsPerIteration(Operation *op);

/// Extent of each loop of `rule` on `op` (from the operand/result shapes).
SmallVector<int64_t> getLoopExtents(Operation *op, const ShardingRule &rule);

/// The work of one device running `op` under `loops` on `gridShape`. With
/// `fusion` (the fused kernels of `op`'s block), an operand the kernel does
/// not read (a fused value, or one it reads already) and a fused result
/// move no bytes: an elementwise chain costs one pass over memory.
OpWork getOpWork(Operation *op, const ShardingRule &rule, const LoopAxes &loops,
                 ArrayRef<int64_t> gridShape,
                 const ElementwiseFusion *fusion = nullptr);

/// Roofline time of `work` in class `c`, max(flops / class FLOP rate,
/// bytes / class bandwidth), plus the per-op overhead and the class's fixed
/// seconds per op (`op_seconds_by_class`), at most that roofline time again
/// (an op shorter than the fixed part runs on one thread); 0 for no work
/// (views).
double getComputeTime(const OpWork &work, OpClass c,
                      const ClusterSpec &cluster);
/// The same, computing in `dtype` (its rate from `flops_by_dtype`).
double getComputeTime(const OpWork &work, OpClass c, const ClusterSpec &cluster,
                      StringRef dtype);

/// One op measured by calibration: `flops` FLOPs in `seconds`.
struct OpTimeSample {
  double flops = 0;
  double seconds = 0;
};

/// An op class's time as the cost model prices it: seconds = fixedSeconds +
/// FLOPs / rate.
struct OpTimeFit {
  double rate = 0;
  double fixedSeconds = 0;
};

/// Fits seconds = fixed + FLOPs / rate to `samples` (the shapes calibration
/// measured for one class) by least squares on relative errors (each sample
/// weighted by 1 / its seconds: the sizes differ by an order of magnitude),
/// the fixed part clamped at 0 (the rate then refitted alone). Nullopt when
/// a sample is not positive, when the samples' FLOPs span less than
/// `minSpread` times (the two terms cannot be told apart), or when no
/// positive rate fits.
std::optional<OpTimeFit> fitOpTime(ArrayRef<OpTimeSample> samples,
                                   double minSpread = 4);

/// Bytes of the local shard of a value of `type` under `sharding`.
int64_t getLocalBytes(RankedTensorType type, ShardingAttr sharding,
                      ArrayRef<int64_t> gridShape);
int64_t getElementBytes(Type elementType);

/// The link a collective over `axes` runs on: the slowest bandwidth and the
/// largest latency among them.
AxisLink getGroupLink(ArrayRef<int64_t> axes, const ClusterSpec &cluster);

/// Alpha-beta time of one reshard step (messages x latency + bytes moved per
/// device / bandwidth); 0 for local steps.
double getReshardStepTime(const ReshardStep &step,
                          ArrayRef<int64_t> globalShape, int64_t elementBytes,
                          ArrayRef<int64_t> gridShape,
                          const ClusterSpec &cluster);

/// Time and bytes per device of moving a value of `type` from `from` to `to`
/// along the path the partitioner takes (planCheapestReshard).
struct ReshardCost {
  double time = 0;
  int64_t bytes = 0;
  unsigned numSteps = 0;
  /// The largest scratch copy a step's collective makes in the runtime
  /// (bytes per device): the whole buffer it sends or receives when its
  /// blocks are not contiguous (autopar/Runtime/CollectiveScratch.h).
  int64_t scratchBytes = 0;
};
ReshardCost getReshardCost(RankedTensorType type, ShardingAttr from,
                           ShardingAttr to, ArrayRef<int64_t> gridShape,
                           const ClusterSpec &cluster);

/// getReshardCost memoized for one grid shape and one set of axis links:
/// a pipeline search prices the same reshards in the programs of every stage
/// candidate on a slab, so they share one cache (AutoPlanOptions::
/// reshardCache). Only what getReshardCost reads is keyed: the value's type,
/// both layouts, the grid shape and the axes' bandwidth and latency.
class ReshardCostCache {
public:
  ReshardCostCache(ArrayRef<int64_t> gridShape, const ClusterSpec &cluster);
  /// Whether this cache prices reshards on `gridShape` under `cluster`.
  bool matches(ArrayRef<int64_t> gridShape, const ClusterSpec &cluster) const;
  /// The cost of moving `type` from `from` to `to`; computed once.
  const ReshardCost &get(RankedTensorType type, ShardingAttr from,
                         ShardingAttr to);

private:
  SmallVector<int64_t> gridShape;
  ClusterSpec cluster;
  DenseMap<std::tuple<Type, Attribute, Attribute>, ReshardCost> costs;
};

} // namespace mlir::autopar

#endif // AUTOPAR_ANALYSIS_COSTMODEL_H
