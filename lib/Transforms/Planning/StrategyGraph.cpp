//===- StrategyGraph.cpp - the planning problem as a graph ----------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Builds the strategy graph of @main:
//   1. nodes in program order: runtime inputs, weights, constants, compute
//      ops, and the return (which wants every output replicated);
//   2. strategies per node: for a compute op, every assignment of the active
//      grid axes to its splittable loops that divides the loop extents (the
//      op's sharding rule gives the operand and result layouts); for an
//      input or a weight, every layout that divides; a constant stays
//      replicated;
//   3. liveness points, at which the memory rows are counted.
//
//===----------------------------------------------------------------------===//

#include "StrategyGraph.h"

#include "autopar/Transforms/Autodiff/MixedPrecision.h"
#include "autopar/Transforms/Autodiff/Trainable.h"
#include "autopar/Transforms/Planning/OptimizerStateSplit.h"
#include "autopar/Transforms/Planning/OptimizerUpdates.h"

#include "autopar/Analysis/CostModel.h"
#include "autopar/Dialect/Autopar/IR/ShardLayout.h"

#include <algorithm>
#include <map>

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::planning;

/// Local layouts of a value: per active axis, a dimension or none.
static void enumerateLayouts(RankedTensorType type,
                             ArrayRef<int64_t> activeAxes,
                             ArrayRef<int64_t> gridShape, MLIRContext *ctx,
                             SmallVectorImpl<ShardingAttr> &out) {
  int64_t rank = type.getRank();
  SmallVector<int64_t> choice(activeAxes.size(), -1);
  while (true) {
    SmallVector<SmallVector<int64_t>> dims(rank);
    for (auto [i, axis] : llvm::enumerate(activeAxes))
      if (choice[i] >= 0)
        dims[choice[i]].push_back(axis);
    bool ok = true;
    for (int64_t d = 0; d < rank && ok; ++d) {
      int64_t n = getGroupSize(dims[d], gridShape);
      ok = type.getDimSize(d) > 0 && type.getDimSize(d) % n == 0;
    }
    if (ok)
      out.push_back(ShardingAttr::get(ctx, dims, {}));
    // Next choice (odometer over -1..rank-1).
    unsigned i = 0;
    for (; i < choice.size(); ++i) {
      if (++choice[i] < rank)
        break;
      choice[i] = -1;
    }
    if (i == choice.size())
      break;
  }
}

static bool sameLoops(const LoopAxes &a, const LoopAxes &b) {
  if (a.size() != b.size())
    return false;
  for (unsigned l = 0; l < a.size(); ++l) {
    SmallVector<int64_t> x(a[l]), y(b[l]);
    llvm::sort(x);
    llvm::sort(y);
    if (x != y)
      return false;
  }
  return true;
}

StrategyGraph::StrategyGraph(func::FuncOp func, const AutoPlanOptions &options)
    : func(func), ctx(func.getContext()), options(options),
      gridShape(options.gridShape) {
  for (int64_t a = 0; a < (int64_t)gridShape.size(); ++a)
    if (gridShape[a] > 1)
      activeAxes.push_back(a);
}

Type StrategyGraph::getPricedElementType(Type type) const {
  if (!isa<FloatType>(type))
    return type;
  switch (options.precision) {
  case PlanPrecision::Model:
    return type;
  case PlanPrecision::F32:
    return Float32Type::get(ctx);
  case PlanPrecision::F16:
    return Float16Type::get(ctx);
  case PlanPrecision::BF16:
    return BFloat16Type::get(ctx);
  }
  llvm_unreachable("unknown precision");
}

/// `f32`, `bf16`, ...: the key of `flops_by_dtype` (empty for non-floats).
static std::string getDtypeName(Type type) {
  if (!isa<FloatType>(type))
    return "";
  std::string name;
  llvm::raw_string_ostream os(name);
  type.print(os);
  return name;
}

size_t StrategyGraph::getNumReps() const {
  size_t n = 0;
  for (unsigned i = 0; i < nodes.size(); ++i)
    n += nodes[i].rep == i;
  return n;
}

ShardingAttr StrategyGraph::gradLayout(const ShardingRule &rule,
                                       unsigned operand, const LoopAxes &loops,
                                       ShardingAttr required) const {
  // The gradient of an operand is summed over the loops its map does not
  // walk: axes splitting them leave it a pending sum (the data axis for a
  // weight: the gradient all-reduce).
  SmallVector<bool> walked(rule.getNumLoops(), false);
  for (int64_t d = 0; d < required.getRank(); ++d)
    if (std::optional<unsigned> l = rule.getOperandLoop(operand, d))
      walked[*l] = true;
  SmallVector<int64_t> partial;
  bool additive = required.isPartial();
  for (unsigned l = 0; l < rule.getNumLoops(); ++l) {
    if (walked[l] || (additive && rule.isReduction(l)))
      continue;
    llvm::append_range(partial, loops[l]);
  }
  llvm::sort(partial);
  SmallVector<SmallVector<int64_t>> dims;
  for (int64_t d = 0; d < required.getRank(); ++d)
    dims.emplace_back(required.getDimAxes(d));
  return ShardingAttr::get(ctx, dims, partial);
}

Strategy StrategyGraph::makeComputeStrategy(Node &node,
                                            const ShardingRule &rule,
                                            const LoopAxes &loops) {
  Strategy s;
  s.loops = loops;
  Operation *op = node.op;
  for (unsigned i = 0; i < op->getNumOperands(); ++i) {
    ShardingAttr req = rule.getOperandSharding(ctx, i, loops);
    s.operands.push_back(req);
    s.grads.push_back(gradLayout(rule, i, loops, req));
  }
  for (unsigned r = 0; r < op->getNumResults(); ++r)
    s.results.push_back(rule.getResultSharding(ctx, r, loops));
  // Work in the priced type: bytes scale with the element size, FLOP/s
  // come from that type's rate when the cluster gives one.
  OpWork work =
      getOpWork(op, rule, loops, gridShape, fusion ? &*fusion : nullptr);
  Type elementType;
  if (op->getNumResults() > 0)
    if (auto t = dyn_cast<RankedTensorType>(op->getResult(0).getType()))
      elementType = t.getElementType();
  std::string dtype;
  if (elementType) {
    Type priced =
        node.keepsF32 ? elementType : getPricedElementType(elementType);
    if (priced != elementType)
      work.bytes =
          work.bytes * getElementBytes(priced) / getElementBytes(elementType);
    dtype = getDtypeName(priced);
  }
  s.compute = getComputeTime(work, node.opClass, options.cluster, dtype);
  OpWork flopsOnly = work;
  flopsOnly.bytes = 0;
  s.computeFloor =
      getComputeTime(flopsOnly, node.opClass, options.cluster, dtype);
  return s;
}

double StrategyGraph::getComputeFloor(unsigned n) const {
  const Node &node = nodes[n];
  if (node.kind != NodeKind::Compute || node.strategies.empty())
    return 0;
  double floor = node.strategies.front().computeFloor;
  for (const Strategy &s : node.strategies)
    floor = std::min(floor, s.computeFloor);
  return floor;
}

LogicalResult StrategyGraph::enumerate(Node &node) {
  switch (node.kind) {
  case NodeKind::Input:
  case NodeKind::Weight: {
    SmallVector<ShardingAttr> layouts;
    enumerateLayouts(cast<RankedTensorType>(node.results[0].getType()),
                     activeAxes, gridShape, ctx, layouts);
    for (ShardingAttr l : layouts) {
      Strategy s;
      s.results.push_back(l);
      node.strategies.push_back(std::move(s));
    }
    return success();
  }
  case NodeKind::Constant: {
    Strategy s;
    s.results.push_back(ShardingAttr::getReplicated(
        ctx, cast<RankedTensorType>(node.results[0].getType()).getRank()));
    node.strategies.push_back(std::move(s));
    return success();
  }
  case NodeKind::Output: {
    Strategy s;
    for (auto [p, r] : node.operands)
      s.operands.push_back(
          ShardingAttr::getReplicated(ctx, typeOf(p, r).getRank()));
    s.grads = s.operands;
    node.strategies.push_back(std::move(s));
    return success();
  }
  case NodeKind::Compute:
    break;
  }
  Operation *op = node.op;
  FailureOr<ShardingRule> rule = ShardingRule::get(op);
  if (failed(rule))
    return op->emitError() << "op '" << op->getName()
                           << "' has no sharding rule; it cannot be planned";
  SmallVector<int64_t> extents = getLoopExtents(op, *rule);
  // Loops an axis may split: splittable parallel loops, and the first
  // splittable reduction loop (the partitioner places a pending sum there).
  SmallVector<int64_t> candidates;
  bool reductionSeen = false;
  for (unsigned l = 0; l < rule->getNumLoops(); ++l) {
    if (!rule->isSplittable(l) || extents[l] <= 1)
      continue;
    if (rule->isReduction(l)) {
      if (reductionSeen)
        continue;
      reductionSeen = true;
    }
    candidates.push_back(l);
  }
  // Every dimension a loop indexes must divide by the loop's group.
  auto divides = [&](const LoopAxes &loops) {
    for (unsigned l = 0; l < loops.size(); ++l) {
      if (loops[l].empty())
        continue;
      int64_t n = getGroupSize(loops[l], gridShape);
      if (extents[l] % n != 0)
        return false;
    }
    auto check = [&](Value v, auto loopOf) {
      auto type = dyn_cast<RankedTensorType>(v.getType());
      if (!type)
        return true;
      for (unsigned d = 0; d < type.getRank(); ++d)
        if (std::optional<unsigned> l = loopOf(d))
          if (!loops[*l].empty() &&
              type.getDimSize(d) % getGroupSize(loops[*l], gridShape) != 0)
            return false;
      return true;
    };
    for (unsigned i = 0; i < op->getNumOperands(); ++i)
      if (!check(op->getOperand(i),
                 [&](unsigned d) { return rule->getOperandLoop(i, d); }))
        return false;
    for (unsigned r = 0; r < op->getNumResults(); ++r)
      if (!check(op->getResult(r),
                 [&](unsigned d) { return rule->getResultLoop(r, d); }))
        return false;
    return true;
  };
  SmallVector<int64_t> choice(activeAxes.size(), -1);
  while (true) {
    LoopAxes loops(rule->getNumLoops());
    for (auto [i, axis] : llvm::enumerate(activeAxes))
      if (choice[i] >= 0)
        loops[candidates[choice[i]]].push_back(axis);
    if (divides(loops))
      node.strategies.push_back(makeComputeStrategy(node, *rule, loops));
    unsigned i = 0;
    for (; i < choice.size(); ++i) {
      if (++choice[i] < (int64_t)candidates.size())
        break;
      choice[i] = -1;
    }
    if (i == choice.size())
      break;
  }
  assert(!node.strategies.empty() && "the replicated strategy always divides");
  return success();
}

LogicalResult StrategyGraph::build() {
  DenseMap<Value, std::pair<unsigned, unsigned>> producer;
  for (BlockArgument arg : func.getArguments()) {
    if (!isa<RankedTensorType>(arg.getType()))
      return emitError(arg.getLoc()) << "runtime input " << arg.getArgNumber()
                                     << " is not a ranked tensor";
    Node n;
    n.kind = NodeKind::Input;
    n.results.push_back(arg);
    n.name = getOnnxValueName(arg);
    producer[arg] = {nodes.size(), 0};
    nodes.push_back(std::move(n));
  }
  fusion.emplace(func.getBody().front());
  // In a mixed-precision training step the master weights, optimizer state,
  // accumulated gradients and update stay f32 (autopar-lower-precision).
  llvm::StringSet<> assigned;
  llvm::DenseSet<Operation *> master;
  if (options.precision == PlanPrecision::BF16 ||
      options.precision == PlanPrecision::F16) {
    assigned = getAssignedWeights(func.getBody().front());
    master = getMasterRegion(func.getBody().front(), assigned);
  }
  llvm::StringSet<> frozen;
  for (const std::string &name : options.frozenWeights)
    frozen.insert(name);
  for (Operation &op : func.getBody().front()) {
    Node n;
    n.op = &op;
    if (auto weight = dyn_cast<WeightOp>(op))
      n.keepsF32 = assigned.contains(weight.getName());
    else
      n.keepsF32 = master.contains(&op);
    if (isa<func::ReturnOp>(op))
      n.kind = NodeKind::Output;
    else if (auto weight = dyn_cast<WeightOp>(op)) {
      n.kind = NodeKind::Weight;
      n.trainable = options.mode == PlanMode::Training &&
                    isTrainableWeight(weight, frozen);
    } else if (isa<ConstantOp>(op))
      n.kind = NodeKind::Constant;
    else
      n.kind = NodeKind::Compute;
    for (Value v : op.getOperands()) {
      auto it = producer.find(v);
      if (it == producer.end())
        return op.emitError() << "operand is not produced in @main";
      if (!isa<RankedTensorType>(v.getType()))
        return op.emitError() << "operand is not a ranked tensor";
      n.operands.push_back(it->second);
    }
    for (Value r : op.getResults()) {
      if (!isa<RankedTensorType>(r.getType()))
        return op.emitError() << "result is not a ranked tensor";
      producer[r] = {nodes.size(), n.results.size()};
      n.results.push_back(r);
    }
    n.opClass = classifyOp(&op);
    n.name = n.kind == NodeKind::Output ? "<outputs>" : getOnnxNodeName(&op);
    if (n.name.empty() && !n.results.empty())
      n.name = getOnnxValueName(n.results.front());
    if (n.kind == NodeKind::Output)
      outputNode = nodes.size();
    if (n.kind == NodeKind::Compute) {
      n.seqPos = sequence.size();
      sequence.push_back(nodes.size());
    }
    nodes.push_back(std::move(n));
  }
  inEdges.assign(nodes.size(), {});
  outEdges.assign(nodes.size(), {});
  for (unsigned c = 0; c < nodes.size(); ++c)
    for (auto [o, pr] : llvm::enumerate(nodes[c].operands)) {
      edges.push_back({pr.first, pr.second, c, (unsigned)o});
      inEdges[c].push_back(edges.size() - 1);
      outEdges[pr.first].push_back(edges.size() - 1);
    }
  for (unsigned i = 0; i < nodes.size(); ++i) {
    nodes[i].rep = i;
    if (failed(enumerate(nodes[i])))
      return failure();
  }
  // A compiled step's distributed optimizer (a training-mode graph has no
  // explicit update; its optimizer state is counted by valueBytes).
  if (options.shardOptimizerState && options.mode != PlanMode::Training &&
      failed(tieOptimizerSplit(producer)))
    return failure();
  computeLiveness();
  return success();
}

unsigned StrategyGraph::findOrAddComputeStrategy(
    Node &node, const ShardingRule &rule, const LoopAxes &loops,
    ArrayRef<ShardingAttr> results, ArrayRef<ShardingAttr> operands) {
  auto it = llvm::find_if(node.strategies, [&](const Strategy &s) {
    return sameLoops(s.loops, loops) && ArrayRef(s.results) == results &&
           ArrayRef(s.operands) == operands;
  });
  if (it != node.strategies.end())
    return it - node.strategies.begin();
  Strategy added = makeComputeStrategy(node, rule, loops);
  added.results.assign(results.begin(), results.end());
  added.operands.assign(operands.begin(), operands.end());
  node.strategies.push_back(std::move(added));
  return node.strategies.size() - 1;
}

FailureOr<unsigned>
StrategyGraph::getStrategyWithResults(unsigned n,
                                      ArrayRef<ShardingAttr> results) {
  Node &node = nodes[n];
  if (node.kind == NodeKind::Input || node.kind == NodeKind::Weight) {
    auto it = llvm::find_if(node.strategies, [&](const Strategy &s) {
      return s.results[0] == results[0];
    });
    if (it != node.strategies.end())
      return unsigned(it - node.strategies.begin());
    Strategy s;
    s.results.push_back(results[0]);
    node.strategies.push_back(std::move(s));
    return unsigned(node.strategies.size() - 1);
  }
  if (node.kind != NodeKind::Compute)
    return emitError(node.results[0].getLoc())
           << "value '" << node.name << "' cannot take a layout of its own";
  Operation *op = node.op;
  FailureOr<ShardingRule> rule = ShardingRule::get(op);
  if (failed(rule))
    return op->emitError() << "op '" << op->getName()
                           << "' has no sharding rule; it cannot be planned";
  // No result is a pending sum, so no operand layout is needed to place one.
  SmallVector<ShardingAttr> unknown(op->getNumOperands());
  FailureOr<LoopAxes> loops = rule->getLoopsFromResults(op, results, unknown);
  if (failed(loops))
    return failure();
  SmallVector<ShardingAttr> operands;
  for (unsigned i = 0; i < op->getNumOperands(); ++i)
    operands.push_back(rule->getOperandSharding(ctx, i, *loops));
  return findOrAddComputeStrategy(node, *rule, *loops, results, operands);
}

LogicalResult StrategyGraph::tieOptimizerSplit(
    const DenseMap<Value, std::pair<unsigned, unsigned>> &producer) {
  OptimizerUpdates found = collectOptimizerUpdates(func);
  // The split reads a value's layout before it only to stop the gradient's
  // chain at a pending sum. No strategy of a transpose or a reshape leaves
  // one (only a split reduction loop does), so in this search the chain is
  // walked as far as its structure allows whatever the choice: any whole
  // layout stands for the one the plan gives.
  auto wholeLayout = [&](Value v) {
    return ShardingAttr::getReplicated(
        ctx, cast<RankedTensorType>(v.getType()).getRank());
  };
  for (auto &entry : found.updates) {
    WeightOp weight = found.weights.lookup(entry.first);
    // An update without its weight is autopar-shard-optimizer-state's error.
    if (!weight)
      continue;
    unsigned w = producer.lookup(weight.getResult()).first;
    size_t numLayouts = nodes[w].strategies.size();
    // Per tied node, its strategy under each of the weight's.
    std::map<unsigned, std::vector<int>> tied;
    for (unsigned s = 0; s < numLayouts; ++s) {
      ShardingAttr layout = nodes[w].strategies[s].results[0];
      std::map<unsigned, SmallVector<ShardingAttr>> results;
      for (const SplitValue &split : getOptimizerStateSplit(
               weight, entry.second, layout, gridShape, wholeLayout)) {
        auto [n, r] = producer.lookup(split.value);
        SmallVector<ShardingAttr> &layouts = results[n];
        layouts.resize(nodes[n].results.size());
        layouts[r] = split.sharding;
      }
      for (auto &[n, layouts] : results) {
        if (llvm::is_contained(layouts, ShardingAttr()))
          return nodes[n].op->emitError()
                 << "the distributed optimizer splits some results of this "
                    "op and not others; the plan search cannot price it";
        FailureOr<unsigned> t = getStrategyWithResults(n, layouts);
        if (failed(t))
          return failure();
        std::vector<int> &strategies = tied[n];
        strategies.resize(numLayouts, -1);
        strategies[s] = int(*t);
      }
    }
    for (auto &[n, strategies] : tied)
      splitTies.push_back({w, n, std::move(strategies)});
  }
  return success();
}

bool StrategyGraph::satisfiesSplit(const Choice &choice) const {
  for (const SplitTie &tie : splitTies) {
    int t = tie.strategies[choice[tie.weight]];
    if (t >= 0 && choice[tie.node] != unsigned(t))
      return false;
  }
  return true;
}

static int64_t getGlobalBytes(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return tensor.getNumElements() *
         llvm::divideCeil(tensor.getElementTypeBitWidth(), 8);
}

std::optional<unsigned> StrategyGraph::getFusedConsumer(
    unsigned n,
    const std::map<std::pair<unsigned, unsigned>, unsigned> &lastUse,
    llvm::function_ref<
        std::pair<unsigned, unsigned>(std::pair<unsigned, unsigned>)>
        rootOf) const {
  const Node &p = nodes[n];
  if (p.kind != NodeKind::Compute || p.results.size() != 1 ||
      outEdges[n].size() != 1 || !isFusibleElementwiseOp(p.op) ||
      !p.results[0].hasOneUse())
    return std::nullopt;
  const Edge &use = edges[outEdges[n].front()];
  const Node &c = nodes[use.consumer];
  if (c.kind != NodeKind::Compute || c.results.size() != 1 ||
      !isFusibleElementwiseOp(c.op))
    return std::nullopt;
  // Read whole, element by element (a broadcast operand is recomputed per
  // copy, so it is not fused).
  auto produced = cast<RankedTensorType>(p.results[0].getType());
  auto result = cast<RankedTensorType>(c.results[0].getType());
  if (produced.getShape() != result.getShape())
    return std::nullopt;
  int64_t dying = 0;
  llvm::SmallDenseSet<std::pair<unsigned, unsigned>, 4> seen;
  for (unsigned e : inEdges[n]) {
    const Edge &in = edges[e];
    if (nodes[in.producer].kind != NodeKind::Compute)
      continue;
    auto buffer = rootOf({in.producer, in.result});
    if (!seen.insert(buffer).second)
      continue;
    auto it = lastUse.find(buffer);
    if (it != lastUse.end() && it->second < use.consumer)
      dying += getGlobalBytes(nodes[in.producer].results[in.result].getType());
  }
  if (dying > getGlobalBytes(produced))
    for (unsigned b = n + 1; b < use.consumer; ++b)
      if (nodes[b].kind == NodeKind::Compute &&
          isElementwiseFusionBarrier(nodes[b].op))
        return std::nullopt;
  return use.consumer;
}

void StrategyGraph::computeLiveness() {
  // The buffer each value lives in: itself, or the root of a chain of views.
  std::map<std::pair<unsigned, unsigned>, std::pair<unsigned, unsigned>> root;
  auto rootOf = [&](std::pair<unsigned, unsigned> v) {
    auto it = root.find(v);
    return it == root.end() ? v : it->second;
  };
  for (unsigned n = 0; n < nodes.size(); ++n)
    if (nodes[n].kind == NodeKind::Compute && isViewOp(nodes[n].op))
      for (unsigned r = 0; r < nodes[n].results.size(); ++r)
        root[{n, r}] = rootOf(nodes[n].operands[0]);
  // Last use of each buffer in program order (outputs live to the end).
  std::map<std::pair<unsigned, unsigned>, unsigned> lastUse;
  for (const Edge &e : edges) {
    unsigned &last = lastUse[rootOf({e.producer, e.result})];
    last = std::max(last, e.consumer);
  }
  bool training = options.mode == PlanMode::Training;
  // Values the lowering never materializes: autopar-fuse-elementwise
  // computes an elementwise result used once, by an elementwise op that
  // reads it whole, inside that consumer. The producer's operands then live
  // until the consumer runs (its position below); the value is no buffer.
  // Training mode prices a forward graph whose backward pass is implicit
  // (its stored activations are read again), so there it does not apply.
  // Memory counts only these single-use values as fused; the bytes an op
  // moves (`fusion`) also leave out values whose several readers all lie in
  // one kernel, which the lowering fuses once it merges their reads.
  std::vector<unsigned> position(nodes.size());
  for (unsigned n = 0; n < nodes.size(); ++n)
    position[n] = n;
  std::vector<bool> fused(nodes.size(), false);
  for (unsigned n = nodes.size(); !training && n-- > 0;) {
    std::optional<unsigned> consumer = getFusedConsumer(n, lastUse, rootOf);
    if (!consumer)
      continue;
    fused[n] = true;
    position[n] = position[*consumer];
  }
  for (const Edge &e : edges) {
    unsigned &last = lastUse[rootOf({e.producer, e.result})];
    last = std::max(last, position[e.consumer]);
  }
  auto isView = [&](unsigned n, unsigned r) {
    return root.count({n, r}) || fused[n];
  };
  std::vector<std::pair<unsigned, unsigned>> active;
  for (unsigned n = 0; n < nodes.size(); ++n) {
    const Node &node = nodes[n];
    if (node.kind != NodeKind::Compute && node.kind != NodeKind::Output) {
      for (unsigned r = 0; r < node.results.size(); ++r)
        parameters.push_back({n, r});
      continue;
    }
    if (training && node.kind == NodeKind::Compute)
      for (unsigned r = 0; r < node.results.size(); ++r)
        if (!isView(n, r))
          activations.push_back({n, r});
  }
  persistent = parameters;
  persistent.append(activations.begin(), activations.end());
  for (unsigned n = 0; n < nodes.size(); ++n) {
    const Node &node = nodes[n];
    if (node.kind != NodeKind::Compute && node.kind != NodeKind::Output)
      continue;
    LivenessPoint p;
    p.node = n;
    if (!training) {
      // Values defined by compute ops and still needed here or later
      // (including this op's own results).
      for (unsigned r = 0; r < node.results.size(); ++r)
        if (!isView(n, r))
          active.push_back({n, r});
      std::vector<std::pair<unsigned, unsigned>> still;
      for (auto v : active) {
        auto it = lastUse.find(v);
        unsigned last = it == lastUse.end() ? v.first : it->second;
        if (last >= n) {
          p.live.push_back(v);
          still.push_back(v);
        }
      }
      active = std::move(still);
    }
    for (unsigned e : inEdges[n])
      p.transient.push_back(e);
    points.push_back(std::move(p));
  }
  numProgramPoints = points.size();
}

FailureOr<std::vector<unsigned>> StrategyGraph::readAnnotated() {
  std::vector<unsigned> choice(nodes.size(), 0);
  for (unsigned n = 0; n < nodes.size(); ++n) {
    Node &node = nodes[n];
    if (node.kind == NodeKind::Constant)
      continue;
    if (node.kind == NodeKind::Output) {
      // Outputs the plan keeps split (the data plan's) are written as
      // blocks: no gather is priced for them.
      Strategy s = node.strategies.front();
      bool split = false;
      for (unsigned i = 0; i < s.operands.size(); ++i)
        if (auto want =
                func.getResultAttrOfType<ShardingAttr>(i, kShardingAttrName)) {
          s.operands[i] = want.withoutPartial();
          split |= !want.isReplicated();
        }
      if (split) {
        s.grads = s.operands;
        node.strategies.push_back(std::move(s));
        choice[n] = node.strategies.size() - 1;
      }
      continue;
    }
    if (node.kind == NodeKind::Input || node.kind == NodeKind::Weight) {
      ShardingAttr have = getSharding(node.results[0]);
      if (!have)
        return emitError(node.results[0].getLoc())
               << "value '" << node.name << "' has no sharding";
      auto it = llvm::find_if(node.strategies, [&](const Strategy &s) {
        return s.results[0] == have;
      });
      if (it == node.strategies.end()) {
        Strategy s;
        s.results.push_back(have);
        node.strategies.push_back(std::move(s));
        choice[n] = node.strategies.size() - 1;
      } else {
        choice[n] = it - node.strategies.begin();
      }
      continue;
    }
    FailureOr<OpShardingPlan> plan = getOpShardingPlan(node.op);
    if (failed(plan))
      return failure();
    // The layouts too: an op that carries a pending sum of its operands
    // (getPendingSumRule) has the loops of the op without it.
    FailureOr<ShardingRule> rule = ShardingRule::get(node.op);
    choice[n] = findOrAddComputeStrategy(node, *rule, plan->loops,
                                         plan->results, plan->requiredOperands);
  }
  return choice;
}

void StrategyGraph::annotate(const std::vector<unsigned> &choice) {
  for (unsigned n = 0; n < nodes.size(); ++n) {
    const Node &node = nodes[n];
    if (node.kind == NodeKind::Output)
      continue;
    for (unsigned r = 0; r < node.results.size(); ++r)
      setSharding(node.results[r], node.strategies[choice[n]].results[r]);
  }
  for (unsigned i = 0; i < func.getNumResults(); ++i) {
    auto type = cast<RankedTensorType>(func.getResultTypes()[i]);
    func.setResultAttr(i, kShardingAttrName,
                       ShardingAttr::getReplicated(ctx, type.getRank()));
  }
}

std::vector<unsigned>
StrategyGraph::expand(const std::vector<unsigned> &repChoice) const {
  std::vector<unsigned> choice(nodes.size());
  for (unsigned i = 0; i < nodes.size(); ++i)
    choice[i] = repChoice[nodes[i].rep];
  return choice;
}
