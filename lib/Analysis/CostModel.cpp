//===- CostModel.cpp - analytical prices of compute and collectives -------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "autopar/Analysis/CostModel.h"

#include "autopar/Analysis/DataTiling.h"
#include "autopar/Analysis/ElementwiseFusion.h"
#include "autopar/Analysis/RelativeFit.h"

#include "autopar/Dialect/Autopar/IR/ShardLayout.h"
#include "autopar/Runtime/CollectiveScratch.h"

#include "mlir/IR/BuiltinTypes.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::autopar;

double mlir::autopar::getFlopsPerIteration(Operation *op) {
  // Each op declares its FLOPs per loop point in ODS (Autopar_Cost).
  if (auto cost = dyn_cast<CostInterface>(op))
    return cost.getFlopsPerIteration();
  return 1;
}

SmallVector<int64_t> mlir::autopar::getLoopExtents(Operation *op,
                                                   const ShardingRule &rule) {
  SmallVector<int64_t> extents(rule.getNumLoops(), 1);
  SmallVector<bool> known(rule.getNumLoops(), false);
  auto visit = [&](Value v, auto loopOf) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type)
      return;
    for (unsigned d = 0; d < type.getRank(); ++d) {
      std::optional<unsigned> loop = loopOf(d);
      if (!loop || known[*loop])
        continue;
      extents[*loop] = type.getDimSize(d);
      known[*loop] = true;
    }
  };
  // Results first: operands may broadcast (size 1) a loop the result walks.
  for (unsigned r = 0; r < op->getNumResults(); ++r)
    visit(op->getResult(r),
          [&](unsigned d) { return rule.getResultLoop(r, d); });
  for (unsigned i = 0; i < op->getNumOperands(); ++i)
    visit(op->getOperand(i),
          [&](unsigned d) { return rule.getOperandLoop(i, d); });
  return extents;
}

int64_t mlir::autopar::getElementBytes(Type elementType) {
  if (elementType.isIntOrFloat())
    return std::max<int64_t>(1, (elementType.getIntOrFloatBitWidth() + 7) / 8);
  return 8;
}

static int64_t groupSize(ArrayRef<int64_t> axes, ArrayRef<int64_t> gridShape) {
  int64_t n = 1;
  for (int64_t axis : axes)
    n *= gridShape[axis];
  return n;
}

int64_t mlir::autopar::getLocalBytes(RankedTensorType type,
                                     ShardingAttr sharding,
                                     ArrayRef<int64_t> gridShape) {
  int64_t bytes = getElementBytes(type.getElementType());
  for (int64_t d = 0; d < type.getRank(); ++d) {
    int64_t size = type.getDimSize(d);
    if (sharding && d < sharding.getRank())
      size = std::max<int64_t>(
          1, size / groupSize(sharding.getDimAxes(d), gridShape));
    bytes *= size;
  }
  return bytes;
}

/// The local shape of `type` under `sharding` on `gridShape`.
static SmallVector<int64_t> getLocalShape(RankedTensorType type,
                                          ShardingAttr sharding,
                                          ArrayRef<int64_t> gridShape) {
  SmallVector<int64_t> shape(type.getShape());
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (sharding && d < sharding.getRank())
      shape[d] = std::max<int64_t>(
          1, shape[d] / groupSize(sharding.getDimAxes(d), gridShape));
  return shape;
}

/// The share of its direct multiply-adds that `conv`, with loops `loops`
/// on `gridShape`, executes: getWinogradWorkRatio when its local shape
/// qualifies for the Winograd form (isWinogradShape, with its weight an
/// `autopar.weight` as autopar-pack-contractions requires) and that form
/// does at most two thirds of the direct work, as the lowering decides;
/// 1 otherwise.
static double getConvFlopScale(ConvOp conv, const ShardingRule &rule,
                               const LoopAxes &loops,
                               ArrayRef<int64_t> gridShape) {
  auto xType = dyn_cast<RankedTensorType>(conv.getInput().getType());
  auto wType = dyn_cast<RankedTensorType>(conv.getWeight().getType());
  auto yType = dyn_cast<RankedTensorType>(conv.getType());
  if (!xType || !wType || !yType || xType.getRank() != 4 ||
      !wType.hasStaticShape() || !conv.getWeight().getDefiningOp<WeightOp>())
    return 1;
  MLIRContext *ctx = conv.getContext();
  SmallVector<int64_t> x =
      getLocalShape(xType, rule.getOperandSharding(ctx, 0, loops), gridShape);
  SmallVector<int64_t> y =
      getLocalShape(yType, rule.getResultSharding(ctx, 0, loops), gridShape);
  if (!isWinogradShape(x[1], y[1], conv.getGroup(),
                       wType.getShape().drop_front(2), conv.getStrides(),
                       conv.getDilations()))
    return 1;
  double ratio = getWinogradWorkRatio(y[2], y[3]);
  return ratio * 3 <= 2 ? ratio : 1;
}

/// Whether `op`'s innermost loop walks contiguous memory in its result and
/// in every operand it indexes (their last dimension), in local runs of at
/// least kMinStreamedRunBytes (OpWork::streamsRows).
static bool streamsRows(Operation *op, const ShardingRule &rule,
                        ArrayRef<int64_t> extents, const LoopAxes &loops,
                        ArrayRef<int64_t> gridShape) {
  if (op->getNumResults() != 1)
    return false;
  auto result = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!result || result.getRank() == 0)
    return false;
  std::optional<unsigned> inner = rule.getResultLoop(0, result.getRank() - 1);
  if (!inner || *inner >= extents.size())
    return false;
  for (unsigned i = 0; i < op->getNumOperands(); ++i) {
    auto type = dyn_cast<RankedTensorType>(op->getOperand(i).getType());
    for (int64_t d = 0, e = type ? type.getRank() : 0; d < e; ++d)
      if (rule.getOperandLoop(i, d) == inner && d != e - 1)
        return false;
  }
  int64_t parts =
      *inner < loops.size() ? groupSize(loops[*inner], gridShape) : 1;
  double run = std::max<double>(1.0, double(extents[*inner]) / double(parts)) *
               getElementBytes(result.getElementType());
  return run >= kMinStreamedRunBytes;
}

OpWork mlir::autopar::getOpWork(Operation *op, const ShardingRule &rule,
                                const LoopAxes &loops,
                                ArrayRef<int64_t> gridShape,
                                const ElementwiseFusion *fusion) {
  OpWork work;
  // Views of their operand's buffer (reshape, split, slice): no loop nest
  // runs and no byte moves.
  if (isViewOp(op))
    return work;
  SmallVector<int64_t> extents = getLoopExtents(op, rule);
  double iterations = 1;
  for (unsigned l = 0; l < extents.size(); ++l) {
    int64_t n = l < loops.size() ? groupSize(loops[l], gridShape) : 1;
    iterations *= std::max<double>(1.0, double(extents[l]) / double(n));
  }
  work.flops = iterations * getFlopsPerIteration(op);
  work.streamsRows = streamsRows(op, rule, extents, loops, gridShape);
  if (auto conv = dyn_cast<ConvOp>(op))
    work.flopScale = getConvFlopScale(conv, rule, loops, gridShape);
  // A contraction's GEMM shape: per-device M (loops only operand 0 walks),
  // N (only operand 1) and K (the reductions); loops both walk are batches.
  if (op->getNumOperands() >= 2 && rule.getNumOperands() >= 2) {
    double m = 1, n = 1, k = 1;
    bool hasReduction = false;
    auto walks = [&](unsigned operand, unsigned loop) {
      auto type = dyn_cast<RankedTensorType>(op->getOperand(operand).getType());
      for (unsigned d = 0, e = type ? type.getRank() : 0; d < e; ++d)
        if (rule.getOperandLoop(operand, d) == loop)
          return true;
      return false;
    };
    for (unsigned l = 0; l < extents.size(); ++l) {
      int64_t parts = l < loops.size() ? groupSize(loops[l], gridShape) : 1;
      double local = std::max<double>(1.0, double(extents[l]) / double(parts));
      if (rule.isReduction(l)) {
        hasReduction = true;
        k *= local;
        continue;
      }
      bool lhs = walks(0, l), rhs = walks(1, l);
      if (lhs && !rhs)
        m *= local;
      else if (rhs && !lhs)
        n *= local;
    }
    if (hasReduction)
      work.gemmMinDim = std::min({m, n, k});
  }
  // Memory traffic: every operand read and every result written, less what
  // a fused kernel keeps in registers (a fused value) or reads once.
  // An operand read by index (a gather's table) moves one element per
  // result element, at most the operand.
  MLIRContext *ctx = op->getContext();
  for (unsigned i = 0; i < op->getNumOperands(); ++i) {
    if (fusion && !fusion->readsOperand(op, i))
      continue;
    auto type = dyn_cast<RankedTensorType>(op->getOperand(i).getType());
    if (!type)
      continue;
    double bytes =
        getLocalBytes(type, rule.getOperandSharding(ctx, i, loops), gridShape);
    if (readsOperandByIndex(op, i) && op->getNumResults() == 1) {
      auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
      double elements =
          double(getLocalBytes(
              resultType, rule.getResultSharding(ctx, 0, loops), gridShape)) /
          getElementBytes(resultType.getElementType());
      bytes =
          std::min(bytes, elements * getElementBytes(type.getElementType()));
    }
    work.bytes += bytes;
  }
  for (unsigned r = 0; r < op->getNumResults(); ++r) {
    if (fusion && !fusion->writesResult(op, r))
      continue;
    if (auto type = dyn_cast<RankedTensorType>(op->getResult(r).getType()))
      work.bytes +=
          getLocalBytes(type, rule.getResultSharding(ctx, r, loops), gridShape);
  }
  return work;
}

double mlir::autopar::getComputeTime(const OpWork &work, OpClass c,
                                     const ClusterSpec &cluster) {
  return getComputeTime(work, c, cluster, "");
}

double mlir::autopar::getComputeTime(const OpWork &work, OpClass c,
                                     const ClusterSpec &cluster,
                                     StringRef dtype) {
  if (work.flops == 0 && work.bytes == 0)
    return 0;
  double flops = dtype.empty() ? cluster.getFlops(c) : cluster.getFlops(c, dtype);
  if (c == OpClass::MatMul || c == OpClass::BatchedMatMul)
    flops *= cluster.getGemmEfficiency(work.gemmMinDim);
  double compute = flops > 0 ? work.getExecutedFlops() / flops : 0;
  // A data-movement op that moves whole rows streams like a copy.
  OpClass streamClass =
      c == OpClass::DataMovement && work.streamsRows ? OpClass::Elementwise : c;
  double bandwidth = cluster.getBandwidth(streamClass, work.bytes);
  double memory = bandwidth > 0 ? work.bytes / bandwidth : 0;
  // The class's fixed part (thread team, packing) was fitted on ops of tens
  // to hundreds of MFLOP; an op whose own time is shorter runs on one thread
  // (autopar-size-thread-teams) and pays at most its own time again: the
  // test-sized MLP's products (about 1 us each) were priced 64 us a step
  // against 7 us measured with the whole 20 us fixed part each.
  double time = std::max(compute, memory);
  return cluster.opOverhead + std::min(cluster.getClassOpSeconds(c), time) +
         time;
}

std::optional<OpTimeFit>
mlir::autopar::fitOpTime(ArrayRef<OpTimeSample> samples, double minSpread) {
  if (samples.size() < 2)
    return std::nullopt;
  double smallest = samples.front().flops, largest = smallest;
  SmallVector<TwoTermSample> terms;
  for (const OpTimeSample &sample : samples) {
    if (!(sample.flops > 0) || !(sample.seconds > 0))
      return std::nullopt;
    smallest = std::min(smallest, sample.flops);
    largest = std::max(largest, sample.flops);
    terms.push_back({/*first=*/1, sample.flops, sample.seconds});
  }
  if (largest < minSpread * smallest)
    return std::nullopt;
  TwoTermFit fit = fitTwoTermRelative(terms);
  double inverseRate = fit.secondCoefficient;
  if (!(inverseRate > 0) || !std::isfinite(inverseRate))
    return std::nullopt;
  return OpTimeFit{1 / inverseRate, fit.firstCoefficient};
}

AxisLink mlir::autopar::getGroupLink(ArrayRef<int64_t> axes,
                                     const ClusterSpec &cluster) {
  AxisLink link;
  bool first = true;
  for (int64_t axis : axes) {
    if (axis < 0 || axis >= (int64_t)cluster.axes.size())
      continue;
    const AxisLink &a = cluster.axes[axis];
    link.bandwidth =
        first ? a.bandwidth : std::min(link.bandwidth, a.bandwidth);
    link.latency = std::max(link.latency, a.latency);
    first = false;
  }
  return link;
}

double mlir::autopar::getReshardStepTime(const ReshardStep &step,
                                         ArrayRef<int64_t> globalShape,
                                         int64_t elementBytes,
                                         ArrayRef<int64_t> gridShape,
                                         const ClusterSpec &cluster) {
  int64_t n = step.kind == ReshardStep::Kind::SwapAxes
                  ? gridShape[step.axes.front()]
                  : groupSize(step.axes, gridShape);
  double messages = 0;
  switch (step.kind) {
  case ReshardStep::Kind::AllSlice:
  case ReshardStep::Kind::ToPartial:
    return 0;
  case ReshardStep::Kind::AllReduce:
    messages = 2.0 * (n - 1);
    break;
  case ReshardStep::Kind::ReduceScatter:
  case ReshardStep::Kind::AllGather:
  case ReshardStep::Kind::AllToAll:
    messages = n - 1;
    break;
  case ReshardStep::Kind::SwapAxes:
    messages = 1;
    break;
  }
  if (n <= 1)
    return 0;
  AxisLink link = getGroupLink(step.axes, cluster);
  double bytes =
      getReshardStepBytes(step, globalShape, elementBytes, gridShape);
  double transfer = link.bandwidth > 0 ? bytes / link.bandwidth : 0;
  return messages * link.latency + transfer;
}

/// The scratch copy the runtime's collective for `step` makes
/// (CollectiveScratch.h): all-gather receives, reduce-scatter sends, and
/// all-to-all sends and receives through a copy of the whole buffer when
/// its blocks along the dimension are not contiguous.
static int64_t getReshardStepScratchBytes(const ReshardStep &step,
                                          RankedTensorType type,
                                          int64_t elementBytes,
                                          ArrayRef<int64_t> gridShape) {
  auto local = [&](ShardingAttr sharding) {
    SmallVector<int64_t> shape(type.getShape());
    for (int64_t d = 0; d < sharding.getRank(); ++d)
      shape[d] /= getGroupSize(sharding.getDimAxes(d), gridShape);
    return shape;
  };
  auto bytes = [&](ArrayRef<int64_t> shape) {
    int64_t n = elementBytes;
    for (int64_t size : shape)
      n *= size;
    return n;
  };
  SmallVector<int64_t> in = local(step.before), out = local(step.after);
  switch (step.kind) {
  case ReshardStep::Kind::AllGather:
    return ::autopar::runtime::needsBlockTranspose(in.data(), step.dim)
               ? bytes(out)
               : 0;
  case ReshardStep::Kind::ReduceScatter:
    return ::autopar::runtime::needsBlockTranspose(in.data(), step.dim)
               ? bytes(in)
               : 0;
  case ReshardStep::Kind::AllToAll: {
    // Split along otherDim, concatenated along dim.
    int64_t send =
        ::autopar::runtime::needsBlockTranspose(in.data(), step.otherDim)
            ? bytes(in)
            : 0;
    SmallVector<int64_t> block(in);
    block[step.otherDim] /= getGroupSize(step.axes, gridShape);
    int64_t received =
        ::autopar::runtime::needsBlockTranspose(block.data(), step.dim)
            ? bytes(out)
            : 0;
    return send + received;
  }
  default:
    return 0;
  }
}

ReshardCost mlir::autopar::getReshardCost(RankedTensorType type,
                                          ShardingAttr from, ShardingAttr to,
                                          ArrayRef<int64_t> gridShape,
                                          const ClusterSpec &cluster) {
  ReshardCost cost;
  if (from == to)
    return cost;
  int64_t elementBytes = getElementBytes(type.getElementType());
  for (const ReshardStep &step : planCheapestReshard(from, to, type.getShape(),
                                                     elementBytes, gridShape)) {
    cost.time += getReshardStepTime(step, type.getShape(), elementBytes,
                                    gridShape, cluster);
    cost.bytes +=
        getReshardStepBytes(step, type.getShape(), elementBytes, gridShape);
    cost.scratchBytes = std::max(
        cost.scratchBytes,
        getReshardStepScratchBytes(step, type, elementBytes, gridShape));
    ++cost.numSteps;
  }
  return cost;
}

ReshardCostCache::ReshardCostCache(ArrayRef<int64_t> gridShape,
                                   const ClusterSpec &cluster)
    : gridShape(gridShape), cluster(cluster) {}

bool ReshardCostCache::matches(ArrayRef<int64_t> shape,
                               const ClusterSpec &other) const {
  if (ArrayRef<int64_t>(gridShape) != shape ||
      cluster.axes.size() != other.axes.size())
    return false;
  for (auto [a, b] : llvm::zip(cluster.axes, other.axes))
    if (a.bandwidth != b.bandwidth || a.latency != b.latency)
      return false;
  return true;
}

const ReshardCost &ReshardCostCache::get(RankedTensorType type,
                                         ShardingAttr from, ShardingAttr to) {
  auto key = std::make_tuple(Type(type), Attribute(from), Attribute(to));
  auto it = costs.find(key);
  if (it != costs.end())
    return it->second;
  ReshardCost cost = getReshardCost(type, from, to, gridShape, cluster);
  return costs.try_emplace(key, cost).first->second;
}
