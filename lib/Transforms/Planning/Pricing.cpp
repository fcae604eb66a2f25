//===- Pricing.cpp - time and memory of a choice --------------------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "Pricing.h"

#include "autopar/Analysis/ConvTiling.h"
#include "autopar/Analysis/DataTiling.h"
#include "autopar/Dialect/Autopar/IR/Autopar.h"
#include "autopar/Dialect/Autopar/IR/ShardLayout.h"
#include "autopar/Target/Target.h"

#include <cmath>

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::planning;

/// Bytes per parameter of the fp32 gradient accumulated over a step.
static constexpr double kGradientBytesPerParameter = 4;
/// Adam's fp32 momentum and variance.
static constexpr double kAdamBytesPerParameter = 8;
/// The fp32 master copy a 16-bit weight is updated through.
static constexpr double kMasterBytesPerParameter = 4;

const ReshardCost &PlanPricer::reshard(RankedTensorType type, ShardingAttr from,
                                       ShardingAttr to) const {
  if (!cache) {
    if (options.reshardCache &&
        options.reshardCache->matches(graph.gridShape, options.cluster))
      cache = options.reshardCache;
    else
      cache = (ownCache = std::make_unique<ReshardCostCache>(graph.gridShape,
                                                             options.cluster))
                  .get();
  }
  return cache->get(type, from, to);
}

bool PlanPricer::isWeightStore(const Edge &e) const {
  return e.operand == 0 && graph.nodes[e.producer].kind == NodeKind::Weight &&
         isa_and_nonnull<AssignOp>(graph.nodes[e.consumer].op);
}

bool PlanPricer::sharesReshard(const Edge &e, unsigned t) const {
  const Node &c = graph.nodes[e.consumer];
  const Strategy &st = c.strategies[t];
  for (unsigned o = 0; o < e.operand; ++o)
    if (c.operands[o] == std::make_pair(e.producer, e.result) &&
        st.operands[o] == st.operands[e.operand])
      return true;
  return false;
}

double PlanPricer::nodeCost(unsigned n, unsigned s, bool recomputed) const {
  double c = graph.nodes[n].strategies[s].compute;
  if (options.mode != PlanMode::Training)
    return c;
  // Forward and backward of every microbatch, and the forward again when the
  // node is recomputed before its backward pass.
  return c * (1 + kBackwardComputeFactor + (recomputed ? 1 : 0)) *
         double(options.microbatches);
}

double PlanPricer::edgeCost(const Edge &e, unsigned s, unsigned t,
                            bool recomputed) const {
  const Node &c = graph.nodes[e.consumer];
  // A store moves the update, which arrives in the assign's layout, into
  // the weight's, once per step.
  if (isWeightStore(e)) {
    ShardingAttr have = graph.nodes[e.producer].strategies[s].results[e.result];
    return reshard(graph.pricedTypeOf(e.producer, e.result),
                   c.strategies[t].operands[e.operand], have)
        .time;
  }
  // The edge's value read by this reader alone: its reshards of every kind
  // (an operand that reads an earlier operand's value in the same layout
  // shares that operand's forward reshard).
  double cost = 0;
  for (ReshardKind kind : kReshardKinds) {
    bool applies = kind == ReshardKind::Recompute
                       ? options.mode == PlanMode::Training && recomputed
                       : hasReshard(kind, e);
    if (!applies || (kind != ReshardKind::Gradient && sharesReshard(e, t)))
      continue;
    cost += getKeyedReshardTime(kind, e, s, getReshardKey(kind, e, t));
  }
  return cost;
}

/// The local shape of a value of `type` laid out as `layout`.
static SmallVector<int64_t> getLocalDims(RankedTensorType type,
                                         ShardingAttr layout,
                                         ArrayRef<int64_t> gridShape) {
  SmallVector<int64_t> dims(type.getShape());
  for (int64_t d = 0; d < type.getRank() && d < layout.getRank(); ++d)
    dims[d] /= getGroupSize(layout.getDimAxes(d), gridShape);
  return dims;
}

/// The register tile of f32 contractions on the host's ISA, which the
/// lowering uses (AUTOPAR_CPU_ISA overrides both).
static ContractionTile getHostTile() {
  static const ContractionTile tile = getContractionTile(getHostIsa());
  return tile;
}

/// Whether `conv` is a convolution autopar-pack-contractions data-tiles:
/// ungrouped, with static f32 operands of rank 3 to 8.
static bool isDataTiledConvolution(ConvOp conv) {
  auto isStaticF32 = [](Value value) {
    auto type =
        dyn_cast_if_present<RankedTensorType>(value ? value.getType() : Type());
    return type && type.hasStaticShape() && type.getElementType().isF32() &&
           type.getRank() >= 3 && type.getRank() <= 8;
  };
  return conv.getGroup() == 1 && isStaticF32(conv.getInput()) &&
         isStaticF32(conv.getWeight()) && isStaticF32(conv.getResult());
}

/// How autopar-pack-contractions lowers `conv` at the local shapes `input`,
/// `weight` and `result`, its operands stored in `element`, its weight
/// packed at compile time when `packable` (ConvTiling.h).
static std::pair<ConvShape, ConvLowering>
lowerConvolution(ConvOp conv, ArrayRef<int64_t> input, ArrayRef<int64_t> weight,
                 ArrayRef<int64_t> result, Type element, bool packable) {
  ConvShape shape = getConvShape(conv, input, weight, result);
  shape.inputBytes = shape.weightBytes = getElementBytes(element);
  ConvFormOptions options;
  options.storedF32 = element.isF32();
  options.winogradAllowed = element.isF32() && packable;
  return {shape, getConvLowering(shape, getHostTile(), options, packable)};
}

/// How `conv` is lowered on a device holding its weight as `local` (the
/// input's channels and the result's follow the weight's layout), in the
/// element type `element`.
static ConvLowering lowerLocalConvolution(ConvOp conv, ArrayRef<int64_t> local,
                                          Type element) {
  SmallVector<int64_t> input(
      cast<RankedTensorType>(conv.getInput().getType()).getShape());
  SmallVector<int64_t> result(
      cast<RankedTensorType>(conv.getResult().getType()).getShape());
  input[1] = local[1];
  result[1] = local[0];
  return lowerConvolution(conv, input, local, result, element, true).second;
}

/// Whether autopar-pack-contractions may pack the weight `weight` at
/// compile time as the weight of convolutions (an `autopar.weight` whose
/// every use is the weight of a data-tiled convolution, all of one form),
/// for the weight's local shape `local` in the element type `element`.
static bool isPackableConvWeight(Value weight, ArrayRef<int64_t> local,
                                 Type element) {
  if (!weight.getDefiningOp<WeightOp>() || weight.use_empty())
    return false;
  // (Winograd form, weight on the left) of the first use.
  std::optional<std::pair<bool, bool>> side;
  for (OpOperand &use : weight.getUses()) {
    auto conv = dyn_cast<ConvOp>(use.getOwner());
    if (!conv || use.getOperandNumber() != 1 || !isDataTiledConvolution(conv))
      return false;
    ConvLowering l = lowerLocalConvolution(conv, local, element);
    std::pair<bool, bool> useSide = {l.form == ConvForm::Winograd,
                                     l.form != ConvForm::WeightRhs};
    if (side && *side != useSide)
      return false;
    side = useSide;
  }
  return true;
}

double PlanPricer::valueBytes(unsigned n, unsigned r,
                              ShardingAttr layout) const {
  RankedTensorType type = graph.storedTypeOf(n, r);
  double bytes = getLocalBytes(type, layout, graph.gridShape);
  // A convolution weight packed at compile time is stored packed (M padded
  // to whole tiles), or transformed for the Winograd form (16 taps of
  // M x C for 9 weights). Priced for programs whose every op is explicit,
  // as scratchBytes: a training step reads every weight in its update too,
  // so none is packed there.
  if (options.mode != PlanMode::Training &&
      graph.nodes[n].kind == NodeKind::Weight)
    if (auto weight = graph.nodes[n].results[r];
        weight.getDefiningOp<WeightOp>() && type.getRank() >= 3) {
      SmallVector<int64_t> local = getLocalDims(type, layout, graph.gridShape);
      if (isPackableConvWeight(weight, local, type.getElementType())) {
        ConvLowering l =
            lowerLocalConvolution(cast<ConvOp>(*weight.getUsers().begin()),
                                  local, type.getElementType());
        if (l.weightPackedAtCompileTime)
          bytes = double(l.storedWeightElements) *
                  getElementBytes(type.getElementType());
      }
    }
  // Only a trained weight holds a gradient and optimizer state (a frozen
  // one is a buffer).
  if (options.mode != PlanMode::Training || !graph.nodes[n].trainable)
    return bytes;
  // Megatron's count: the weight in the plan's precision, its fp32
  // accumulated gradient, Adam's fp32 states and, below 32 bits, an fp32
  // master copy; 18 bytes per parameter in 16 bits, 16 in f32. A sharded
  // optimizer divides the fp32 states over the weight's replicas.
  double weightBytes = getElementBytes(type.getElementType());
  double parameters = bytes / weightBytes;
  double optimizer =
      kAdamBytesPerParameter + (weightBytes < 4 ? kMasterBytesPerParameter : 0);
  if (options.shardOptimizerState) {
    int64_t replicas = 1;
    for (auto [axis, size] : llvm::enumerate(graph.gridShape)) {
      bool splits = false;
      for (int64_t d = 0; d < layout.getRank(); ++d)
        splits |= llvm::is_contained(layout.getDimAxes(d), (int64_t)axis);
      if (!splits)
        replicas *= size;
    }
    optimizer /= replicas;
  }
  return parameters * (weightBytes + kGradientBytesPerParameter + optimizer);
}

double PlanPricer::transientBytes(const Edge &e, unsigned s, unsigned t) const {
  ShardingAttr have = graph.nodes[e.producer].strategies[s].results[e.result];
  ShardingAttr want = graph.nodes[e.consumer].strategies[t].operands[e.operand];
  if (have == want || sharesReshard(e, t))
    return 0;
  // A store holds the update resharded into the weight's layout, other
  // consumers the value resharded into theirs.
  if (isWeightStore(e))
    return getLocalBytes(graph.storedTypeOf(e.producer, e.result), have,
                         graph.gridShape);
  return getLocalBytes(graph.pricedTypeOf(e.producer, e.result), want,
                       graph.gridShape);
}

double PlanPricer::collectiveScratchBytes(const Edge &e, unsigned s,
                                          unsigned t) const {
  // Like the per-call buffers of scratchBytes: priced for programs whose
  // every op is explicit, not for a training-mode graph whose backward pass
  // is implicit (its collectives are not all edges of the graph).
  if (options.mode == PlanMode::Training)
    return 0;
  ShardingAttr have = graph.nodes[e.producer].strategies[s].results[e.result];
  ShardingAttr want = graph.nodes[e.consumer].strategies[t].operands[e.operand];
  if (have == want || sharesReshard(e, t))
    return 0;
  if (isWeightStore(e))
    return reshard(graph.storedTypeOf(e.producer, e.result), want, have)
        .scratchBytes;
  return reshard(graph.pricedTypeOf(e.producer, e.result), have, want)
      .scratchBytes;
}

double PlanPricer::scratchBytes(unsigned n, unsigned s) const {
  // A training-mode graph is the forward pass of a microbatch whose
  // backward pass is implicit (Megatron's count); the per-call buffers are
  // priced for programs whose every op is explicit (inference, and the
  // compiled training step, which is planned as one program).
  const Node &node = graph.nodes[n];
  if (options.mode == PlanMode::Training || node.kind != NodeKind::Compute)
    return 0;
  if (isa<ConvOp>(node.op))
    return convScratchBytes(n, s);
  if (!isDataTiledProduct(node.op))
    return 0;
  static const CpuIsa isa = getHostIsa();
  const Strategy &st = node.strategies[s];
  auto [aNode, aResult] = node.operands[0];
  auto [bNode, bResult] = node.operands[1];
  SmallVector<int64_t> a = getLocalDims(graph.typeOf(aNode, aResult),
                                        st.operands[0], graph.gridShape);
  SmallVector<int64_t> b = getLocalDims(graph.typeOf(bNode, bResult),
                                        st.operands[1], graph.gridShape);
  bool transposed = isTransposedRhs(node.op);
  int64_t k = a.back();
  int64_t m = 1;
  for (int64_t size : ArrayRef<int64_t>(a).drop_back())
    m *= size;
  int64_t cols = transposed ? b[0] : b[1];
  // Both operands in the plan's precision: bf16 ones take the dot-product
  // tile where the ISA has one, other 16-bit ones extend A to f32.
  Type element =
      graph.getPricedElementType(graph.typeOf(aNode, aResult).getElementType());
  int64_t elementBytes = getElementBytes(element);
  std::optional<ContractionTile> dotTile =
      element.isBF16() ? getBf16DotTile(isa) : std::nullopt;
  ContractionTile tile = dotTile ? *dotTile : getContractionTile(isa);
  bool packedWeight =
      graph.nodes[bNode].kind == NodeKind::Weight &&
      isPackedAtCompileTime(graph.nodes[bNode].results[bResult], tile);
  auto gemm = dyn_cast<GemmOp>(node.op);
  bool epilogue =
      gemm && (gemm.getC() || gemm.getAlpha().convertToDouble() != 1.0);
  PackedProductBuffers buffers = getPackedProductBuffers(
      m, cols, k, tile, elementBytes,
      /*extendLhs=*/elementBytes < 4 && !dotTile, packedWeight, epilogue);
  return double(
      buffers.getExtraBytes(int64_t(valueBytes(n, 0, st.results[0]))));
}

double PlanPricer::convScratchBytes(unsigned n, unsigned s) const {
  const Node &node = graph.nodes[n];
  auto conv = cast<ConvOp>(node.op);
  if (!isDataTiledConvolution(conv))
    return 0;
  const Strategy &st = node.strategies[s];
  auto [xNode, xResult] = node.operands[0];
  auto [wNode, wResult] = node.operands[1];
  RankedTensorType wType = graph.storedTypeOf(wNode, wResult);
  SmallVector<int64_t> input = getLocalDims(graph.typeOf(xNode, xResult),
                                            st.operands[0], graph.gridShape);
  SmallVector<int64_t> weight =
      getLocalDims(wType, st.operands[1], graph.gridShape);
  SmallVector<int64_t> result =
      getLocalDims(graph.typeOf(n, 0), st.results[0], graph.gridShape);
  // The packs copy the operands in the plan's precision.
  Type element =
      graph.getPricedElementType(graph.typeOf(xNode, xResult).getElementType());
  bool packable = graph.nodes[wNode].kind == NodeKind::Weight &&
                  isPackableConvWeight(graph.nodes[wNode].results[wResult],
                                       weight, element);
  auto [shape, lowering] =
      lowerConvolution(conv, input, weight, result, element, packable);
  ConvBuffers buffers = getConvBuffers(shape, lowering.form, getHostTile(),
                                       lowering.weightPackedAtCompileTime);
  return double(
      buffers.getExtraBytes(int64_t(valueBytes(n, 0, st.results[0]))));
}

bool PlanPricer::hasReshard(ReshardKind kind, const Edge &e) const {
  if (!isReshardShared(e))
    return false;
  bool training = options.mode == PlanMode::Training;
  switch (kind) {
  case ReshardKind::Forward:
    return true;
  case ReshardKind::Recompute:
    return training && graph.isRecomputed(e.consumer);
  case ReshardKind::Gradient: {
    // Runtime inputs, constants and weights that are not trained (frozen
    // buffers) get no gradient.
    const Node &p = graph.nodes[e.producer];
    return training && p.kind != NodeKind::Input &&
           p.kind != NodeKind::Constant &&
           (p.kind != NodeKind::Weight || p.trainable) &&
           graph.nodes[e.consumer].kind != NodeKind::Output;
  }
  }
  llvm_unreachable("unknown reshard kind");
}

ShardingAttr PlanPricer::getReshardKey(ReshardKind kind, const Edge &e,
                                       unsigned t) const {
  const Strategy &st = graph.nodes[e.consumer].strategies[t];
  return kind == ReshardKind::Gradient ? st.grads[e.operand]
                                       : st.operands[e.operand];
}

double PlanPricer::getKeyedReshardTime(ReshardKind kind, const Edge &e,
                                       unsigned s, ShardingAttr key) const {
  const Node &p = graph.nodes[e.producer];
  RankedTensorType type = graph.pricedTypeOf(e.producer, e.result);
  ShardingAttr have = p.strategies[s].results[e.result];
  if (options.mode != PlanMode::Training)
    return reshard(type, have, key).time;
  double m = double(options.microbatches);
  switch (kind) {
  case ReshardKind::Forward:
    // Every microbatch; a weight stored sharded is gathered again for the
    // backward pass (FSDP).
    return reshard(type, have, key).time *
           (p.kind == NodeKind::Weight ? 2 : 1) * m;
  case ReshardKind::Recompute:
    return reshard(type, have, key).time * m;
  case ReshardKind::Gradient: {
    double gradient = reshard(type, key, have.withoutPartial()).time;
    // A weight's gradient accumulates over the microbatches in the layout
    // its readers produce it in and is reduced once per step, when that
    // buffer is no larger than the stored layout the memory rows count for
    // it; otherwise (a weight stored sharded, FSDP) it is reduced every
    // microbatch.
    bool oncePerStep =
        p.kind == NodeKind::Weight &&
        getLocalBytes(type, key.withoutPartial(), graph.gridShape) <=
            getLocalBytes(type, have, graph.gridShape);
    return gradient * (oncePerStep ? 1 : m);
  }
  }
  llvm_unreachable("unknown reshard kind");
}

double PlanPricer::getReshardTime(const Choice &choice, unsigned n) const {
  double seconds = 0;
  // (result, kind, key) of the reshards priced so far.
  SmallVector<std::tuple<unsigned, ReshardKind, Attribute>> priced;
  for (unsigned i : graph.outEdges[n]) {
    const Edge &e = graph.edges[i];
    unsigned s = choice[e.producer], t = choice[e.consumer];
    if (!isReshardShared(e)) {
      seconds += edgeCost(e, s, t);
      continue;
    }
    for (ReshardKind kind : kReshardKinds) {
      if (!hasReshard(kind, e))
        continue;
      ShardingAttr key = getReshardKey(kind, e, t);
      std::tuple<unsigned, ReshardKind, Attribute> id(e.result, kind, key);
      if (llvm::is_contained(priced, id))
        continue;
      priced.push_back(id);
      seconds += getKeyedReshardTime(kind, e, s, key);
    }
  }
  return seconds;
}

PlanPrediction PlanPricer::evaluate(const std::vector<unsigned> &choice) const {
  PlanPrediction p;
  for (unsigned n = 0; n < graph.nodes.size(); ++n) {
    p.computeTime += nodeCost(n, choice[n]);
    if (graph.isRecomputed(n))
      p.recomputeTime +=
          nodeCost(n, choice[n], true) - nodeCost(n, choice[n], false);
  }
  // The partitioner reshards a value once per layout its readers need and
  // shares the result between them, so a program (every op explicit) pays
  // for each such reshard once: two readers of a weight's gradient, a
  // pending sum (Adam's two moments), take one reduction.
  for (unsigned n = 0; n < graph.nodes.size(); ++n)
    p.commTime += getReshardTime(choice, n);
  p.stepOverhead = options.cluster.stepOverhead;
  p.stepTime = p.computeTime + p.commTime + p.stepOverhead;
  double base = 0, params = 0;
  for (auto [n, r] : graph.persistent) {
    double b =
        valueBytes(n, r, graph.nodes[n].strategies[choice[n]].results[r]) *
        graph.getStoredCopies(n);
    base += b;
    if (graph.nodes[n].kind == NodeKind::Weight)
      params += b;
  }
  double peak = -1;
  for (auto [index, pt] : llvm::enumerate(graph.points)) {
    // While the operands are resharded, one collective at a time, in
    // operand order: the live values but the op's results, the copies made
    // so far, and the running collective's scratch. Then the op: every
    // copy, its results and its per-call buffers.
    double live = base, own = 0;
    for (auto [n, r] : pt.live) {
      double b =
          valueBytes(n, r, graph.nodes[n].strategies[choice[n]].results[r]);
      live += b;
      if (n == pt.node)
        own += b;
    }
    double copies = 0, resharding = 0;
    for (unsigned i : pt.transient) {
      const Edge &e = graph.edges[i];
      unsigned s = choice[e.producer], t = choice[e.consumer];
      copies += transientBytes(e, s, t);
      if (double scratch = collectiveScratchBytes(e, s, t))
        resharding = std::max(resharding, live - own + copies + scratch);
    }
    double bytes = std::max(
        live + copies + scratchBytes(pt.node, choice[pt.node]), resharding);
    if (index < graph.numProgramPoints)
      p.memoryProfile.emplace_back(graph.nodes[pt.node].name,
                                   static_cast<int64_t>(std::llround(bytes)));
    if (bytes > peak) {
      peak = bytes;
      p.peakAt = graph.nodes[pt.node].name;
    }
  }
  if (peak < 0)
    peak = base;
  p.peakMemoryBytes = static_cast<int64_t>(std::llround(peak));
  p.parameterStateBytes = static_cast<int64_t>(std::llround(params));
  p.activationBytes = p.peakMemoryBytes - p.parameterStateBytes;
  p.fits = options.cluster.memoryBytes <= 0 ||
           p.peakMemoryBytes <= options.cluster.memoryBytes;
  return p;
}
