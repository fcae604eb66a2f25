//===- AutoPlan.cpp - exact search for a parallel plan --------------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The planning problem, in the order it is built:
//   1. a graph of @main in program order: runtime inputs, weights,
//      constants, compute ops, and the return (which wants every output
//      replicated);
//   2. strategies per node: for a compute op, every assignment of the active
//      grid axes to its splittable loops that divides the loop extents (the
//      op's sharding rule gives the operand and result layouts); for an
//      input or a weight, every layout that divides; a constant stays
//      replicated;
//   3. repeated blocks: the compute ops are scanned for the period and start
//      that cover the most ops with identical consecutive blocks (same ops,
//      attributes, types, and edges at the same relative offsets); members of
//      a block share the variables of the first block;
//   4. an integer program: binaries x(node, strategy) with one per node,
//      continuous e(edge, producer layout, consumer layout) tied to them
//      (the marginals of e are the x's), objective = compute + collectives,
//      and one memory row per distinct liveness point;
//   5. CBC solves it to proven optimality; the choice is expanded to every
//      op, priced again op by op (a self-check of the program), and written
//      on the IR.
//
//===----------------------------------------------------------------------===//

#include "autopar/Transforms/Planning/AutoPlan.h"
#include "autopar/Transforms/Planning/PlanReport.h"

#include "IlpSolver.h"

#include "autopar/Analysis/CostModel.h"
#include "autopar/Analysis/ShardingRule.h"
#include "autopar/Dialect/Autopar/IR/Autopar.h"
#include "autopar/Dialect/Autopar/IR/ShardLayout.h"
#include "autopar/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/Support/FormatVariadic.h"

#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

using namespace mlir;
using namespace mlir::autopar;
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

namespace {

/// Bytes per parameter of mixed-precision Adam training (Megatron's count):
/// fp16 weight and gradient, fp32 master weight, momentum and variance.
constexpr double kTrainingBytesPerParameter = 16;
/// Backward compute relative to forward (two matmuls per forward matmul).
constexpr double kBackwardComputeFactor = 2;

enum class NodeKind { Input, Weight, Constant, Compute, Output };

struct Strategy {
  LoopAxes loops;                     ///< compute ops only
  SmallVector<ShardingAttr> operands; ///< required operand layouts
  SmallVector<ShardingAttr> grads;    ///< training: operand gradient layouts
  SmallVector<ShardingAttr> results;
  double compute = 0; ///< forward seconds
};

struct Node {
  NodeKind kind;
  Operation *op = nullptr; ///< null for inputs and the output
  SmallVector<Value> results;
  /// (producer node, result index) per operand.
  SmallVector<std::pair<unsigned, unsigned>> operands;
  std::vector<Strategy> strategies;
  OpClass opClass = OpClass::Elementwise;
  unsigned rep = 0;      ///< representative node after folding
  unsigned seqPos = ~0u; ///< position among compute nodes
  std::string name;
};

struct Edge {
  unsigned producer, result, consumer, operand;
};

struct FoldedBlock {
  unsigned start, period, repeats;
};

/// Local layouts of a value: per active axis, a dimension or none.
void enumerateLayouts(RankedTensorType type, ArrayRef<int64_t> activeAxes,
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

class Planner {
public:
  Planner(func::FuncOp func, const AutoPlanOptions &options)
      : func(func), ctx(func.getContext()), options(options),
        gridShape(options.gridShape) {
    for (int64_t a = 0; a < (int64_t)gridShape.size(); ++a)
      if (gridShape[a] > 1)
        activeAxes.push_back(a);
  }

  LogicalResult build();
  void fold();
  /// Expands a folded choice to every node.
  std::vector<unsigned> expand(const std::vector<unsigned> &repChoice) const;
  /// Reads the layouts written on the IR into a choice (adding strategies
  /// that the enumeration does not have).
  FailureOr<std::vector<unsigned>> readAnnotated();
  PlanPrediction evaluate(const std::vector<unsigned> &choice) const;
  /// Solves; `memoryLimit` < 0 means unconstrained, `minimizeMemory` finds
  /// the smallest peak instead.
  struct Solved {
    std::vector<unsigned> choice;
    IlpSolution::Status status;
    double objective = 0, gap = 0;
    size_t variables = 0, rows = 0;
  };
  Solved solve(double memoryLimit, bool minimizeMemory);
  void annotate(const std::vector<unsigned> &choice);
  void describeDecisions(const std::vector<unsigned> &choice,
                         std::map<Operation *, json::Object> &details) const;
  json::Array describeBlocks() const;
  size_t getNumNodes() const { return nodes.size(); }
  size_t getNumReps() const {
    size_t n = 0;
    for (unsigned i = 0; i < nodes.size(); ++i)
      n += nodes[i].rep == i;
    return n;
  }
  size_t getNumComputeOps() const { return sequence.size(); }

private:
  LogicalResult enumerate(Node &node);
  Strategy makeComputeStrategy(Node &node, const ShardingRule &rule,
                               const LoopAxes &loops);
  ShardingAttr gradLayout(const ShardingRule &rule, unsigned operand,
                          const LoopAxes &loops, ShardingAttr required) const;
  RankedTensorType typeOf(unsigned node, unsigned result) const {
    return cast<RankedTensorType>(nodes[node].results[result].getType());
  }
  const ReshardCost &reshard(RankedTensorType type, ShardingAttr from,
                             ShardingAttr to) const;
  double nodeCost(unsigned n, unsigned s) const {
    double c = nodes[n].strategies[s].compute;
    return options.mode == PlanMode::Training ? c * (1 + kBackwardComputeFactor)
                                              : c;
  }
  /// Communication seconds of edge `e` when its ends use strategies s and t.
  double edgeCost(const Edge &e, unsigned s, unsigned t) const;
  /// Bytes a value takes per device (training: weights hold their
  /// optimizer state too).
  double valueBytes(unsigned n, unsigned r, ShardingAttr layout) const;
  /// Extra bytes at the consumer of `e` for a resharded copy.
  double transientBytes(const Edge &e, unsigned s, unsigned t) const;
  /// Liveness points: for each point, the values live there and the edges
  /// whose resharded copies exist there.
  void computeLiveness();

  func::FuncOp func;
  MLIRContext *ctx;
  const AutoPlanOptions &options;
  SmallVector<int64_t> gridShape;
  SmallVector<int64_t> activeAxes;

  std::vector<Node> nodes;
  std::vector<Edge> edges;
  std::vector<std::vector<unsigned>> inEdges, outEdges;
  std::vector<unsigned> sequence; ///< compute nodes in program order
  std::vector<FoldedBlock> blocks;
  unsigned outputNode = 0;

  struct Point {
    unsigned node;
    SmallVector<std::pair<unsigned, unsigned>> live; ///< (node, result)
    SmallVector<unsigned> transient;                 ///< edges
  };
  std::vector<Point> points;
  /// Values live at every point (weights, inputs, constants; in training
  /// all activations too).
  SmallVector<std::pair<unsigned, unsigned>> persistent;

  mutable DenseMap<std::tuple<Type, Attribute, Attribute>, ReshardCost>
      reshardCache;
};

} // namespace

const ReshardCost &Planner::reshard(RankedTensorType type, ShardingAttr from,
                                    ShardingAttr to) const {
  auto key = std::make_tuple(Type(type), Attribute(from), Attribute(to));
  auto it = reshardCache.find(key);
  if (it != reshardCache.end())
    return it->second;
  ReshardCost cost = getReshardCost(type, from, to, gridShape, options.cluster);
  return reshardCache.try_emplace(key, cost).first->second;
}

ShardingAttr Planner::gradLayout(const ShardingRule &rule, unsigned operand,
                                 const LoopAxes &loops,
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

Strategy Planner::makeComputeStrategy(Node &node, const ShardingRule &rule,
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
  s.compute = getComputeTime(getOpWork(op, rule, loops, gridShape),
                             node.opClass, options.cluster);
  return s;
}

LogicalResult Planner::enumerate(Node &node) {
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

LogicalResult Planner::build() {
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
  for (Operation &op : func.getBody().front()) {
    Node n;
    n.op = &op;
    if (isa<func::ReturnOp>(op))
      n.kind = NodeKind::Output;
    else if (isa<WeightOp>(op))
      n.kind = NodeKind::Weight;
    else if (isa<ConstantOp>(op))
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
  computeLiveness();
  return success();
}

void Planner::computeLiveness() {
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
  auto isView = [&](unsigned n, unsigned r) { return root.count({n, r}); };
  bool training = options.mode == PlanMode::Training;
  std::vector<std::pair<unsigned, unsigned>> active;
  for (unsigned n = 0; n < nodes.size(); ++n) {
    const Node &node = nodes[n];
    if (node.kind != NodeKind::Compute && node.kind != NodeKind::Output) {
      for (unsigned r = 0; r < node.results.size(); ++r)
        persistent.push_back({n, r});
      continue;
    }
    if (training && node.kind == NodeKind::Compute)
      for (unsigned r = 0; r < node.results.size(); ++r)
        if (!isView(n, r))
          persistent.push_back({n, r});
  }
  for (unsigned n = 0; n < nodes.size(); ++n) {
    const Node &node = nodes[n];
    if (node.kind != NodeKind::Compute && node.kind != NodeKind::Output)
      continue;
    Point p;
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
}

double Planner::edgeCost(const Edge &e, unsigned s, unsigned t) const {
  const Node &p = nodes[e.producer];
  const Node &c = nodes[e.consumer];
  RankedTensorType type = typeOf(e.producer, e.result);
  ShardingAttr have = p.strategies[s].results[e.result];
  const Strategy &cs = c.strategies[t];
  double cost = reshard(type, have, cs.operands[e.operand]).time;
  if (options.mode != PlanMode::Training)
    return cost;
  if (p.kind == NodeKind::Weight)
    cost *= 2; // gathered again for the backward pass (FSDP)
  if (p.kind == NodeKind::Input || p.kind == NodeKind::Constant ||
      c.kind == NodeKind::Output)
    return cost;
  cost += reshard(type, cs.grads[e.operand], have.withoutPartial()).time;
  return cost;
}

double Planner::valueBytes(unsigned n, unsigned r, ShardingAttr layout) const {
  RankedTensorType type = typeOf(n, r);
  double bytes = getLocalBytes(type, layout, gridShape);
  if (options.mode == PlanMode::Training && nodes[n].kind == NodeKind::Weight)
    bytes = bytes / getElementBytes(type.getElementType()) *
            kTrainingBytesPerParameter;
  return bytes;
}

double Planner::transientBytes(const Edge &e, unsigned s, unsigned t) const {
  ShardingAttr have = nodes[e.producer].strategies[s].results[e.result];
  ShardingAttr want = nodes[e.consumer].strategies[t].operands[e.operand];
  if (have == want)
    return 0;
  return getLocalBytes(typeOf(e.producer, e.result), want, gridShape);
}

//===----------------------------------------------------------------------===//
// Repeated blocks
//===----------------------------------------------------------------------===//

void Planner::fold() {
  size_t n = sequence.size();
  if (n < 2)
    return;
  // Structural signature of each compute op: name, attributes, types, and
  // the kinds of its producers.
  std::vector<llvm::hash_code> sig(n);
  for (size_t i = 0; i < n; ++i) {
    const Node &node = nodes[sequence[i]];
    Operation *op = node.op;
    llvm::hash_code h =
        llvm::hash_combine(op->getName().getStringRef(),
                           op->getAttrDictionary().getAsOpaquePointer());
    for (Type t : op->getOperandTypes())
      h = llvm::hash_combine(h, t.getAsOpaquePointer());
    for (Type t : op->getResultTypes())
      h = llvm::hash_combine(h, t.getAsOpaquePointer());
    for (auto [p, r] : node.operands) {
      const Node &pn = nodes[p];
      // Inputs and op results both count as activations (the first block
      // reads a graph input where later blocks read an op result).
      NodeKind kind = pn.kind == NodeKind::Input ? NodeKind::Compute : pn.kind;
      h = llvm::hash_combine(h, (int)kind, r);
      if (pn.kind == NodeKind::Constant)
        h = llvm::hash_combine(h,
                               pn.op->getAttrDictionary().getAsOpaquePointer());
    }
    sig[i] = h;
  }
  // Ops i and j = i + period correspond when their signatures agree and each
  // operand comes from the same relative position, or the same value.
  auto matches = [&](size_t i, size_t j, size_t period) {
    if (sig[i] != sig[j])
      return false;
    const Node &a = nodes[sequence[i]];
    const Node &b = nodes[sequence[j]];
    // Shared variables need identical strategy lists (the signature makes
    // this so; a hash collision must not break it).
    if (a.op->getName() != b.op->getName() ||
        a.strategies.size() != b.strategies.size() ||
        a.op->getAttrDictionary() != b.op->getAttrDictionary() ||
        a.op->getOperandTypes() != b.op->getOperandTypes() ||
        a.op->getResultTypes() != b.op->getResultTypes())
      return false;
    for (unsigned o = 0; o < a.operands.size(); ++o) {
      auto [pa, ra] = a.operands[o];
      auto [pb, rb] = b.operands[o];
      if (pa == pb)
        continue;
      const Node &na = nodes[pa];
      const Node &nb = nodes[pb];
      // The first block reads a graph input where later ones read the
      // previous block's output.
      if (na.kind == NodeKind::Input && nb.kind == NodeKind::Compute &&
          nb.seqPos < j)
        continue;
      if (na.kind != nb.kind || ra != rb)
        return false;
      if (na.kind == NodeKind::Compute) {
        if (nb.seqPos != na.seqPos + period)
          return false;
      } else if (na.kind == NodeKind::Input) {
        return false;
      }
      // Weights and constants of the same type (and value) correspond.
    }
    return true;
  };
  std::vector<bool> covered(n, false);
  for (int round = 0; round < 8; ++round) {
    size_t bestCover = 0, bestStart = 0, bestPeriod = 0, bestRepeats = 0;
    for (size_t period = 1; period <= n / 2; ++period) {
      size_t run = 0;
      for (size_t i = 0; i + period < n; ++i) {
        bool ok = !covered[i] && !covered[i + period] &&
                  matches(i, i + period, period);
        run = ok ? run + 1 : 0;
        // A run of `run` matches ending at i covers [i-run+1, i+period].
        if (run >= period) {
          size_t repeats = run / period + 1;
          size_t cover = repeats * period;
          size_t start = i + 1 - run;
          if (cover > bestCover ||
              (cover == bestCover && period < bestPeriod)) {
            bestCover = cover;
            bestStart = start;
            bestPeriod = period;
            bestRepeats = repeats;
          }
        }
      }
    }
    // Fold only what saves a meaningful amount of work.
    if (bestRepeats < 2 || bestCover - bestPeriod < 4)
      break;
    blocks.push_back(
        {(unsigned)bestStart, (unsigned)bestPeriod, (unsigned)bestRepeats});
    for (size_t k = 0; k < bestRepeats * bestPeriod; ++k)
      covered[bestStart + k] = true;
    for (size_t k = 1; k < bestRepeats; ++k)
      for (size_t q = 0; q < bestPeriod; ++q) {
        unsigned repNode = sequence[bestStart + q];
        unsigned member = sequence[bestStart + k * bestPeriod + q];
        nodes[member].rep = repNode;
        // Weights and constants used at the same operand follow.
        for (unsigned o = 0; o < nodes[member].operands.size(); ++o) {
          unsigned pm = nodes[member].operands[o].first;
          unsigned pr = nodes[repNode].operands[o].first;
          NodeKind kind = nodes[pm].kind;
          if (pm == pr ||
              (kind != NodeKind::Weight && kind != NodeKind::Constant))
            continue;
          if (nodes[pm].rep == pm && nodes[pr].rep == pr &&
              nodes[pm].strategies.size() == nodes[pr].strategies.size())
            nodes[pm].rep = pr;
        }
      }
  }
  llvm::sort(blocks, [](const FoldedBlock &a, const FoldedBlock &b) {
    return a.start < b.start;
  });
}

json::Array Planner::describeBlocks() const {
  json::Array out;
  for (const FoldedBlock &b : blocks) {
    const Node &first = nodes[sequence[b.start]];
    const Node &last = nodes[sequence[b.start + b.period - 1]];
    out.push_back(json::Object{{"first_node", first.name},
                               {"last_node", last.name},
                               {"ops_per_block", (int64_t)b.period},
                               {"repeats", (int64_t)b.repeats}});
  }
  return out;
}

std::vector<unsigned>
Planner::expand(const std::vector<unsigned> &repChoice) const {
  std::vector<unsigned> choice(nodes.size());
  for (unsigned i = 0; i < nodes.size(); ++i)
    choice[i] = repChoice[nodes[i].rep];
  return choice;
}

//===----------------------------------------------------------------------===//
// Pricing a complete choice
//===----------------------------------------------------------------------===//

PlanPrediction Planner::evaluate(const std::vector<unsigned> &choice) const {
  PlanPrediction p;
  for (unsigned n = 0; n < nodes.size(); ++n)
    p.computeTime += nodeCost(n, choice[n]);
  for (const Edge &e : edges)
    p.commTime += edgeCost(e, choice[e.producer], choice[e.consumer]);
  p.stepTime = p.computeTime + p.commTime;
  double base = 0, params = 0;
  for (auto [n, r] : persistent) {
    double b = valueBytes(n, r, nodes[n].strategies[choice[n]].results[r]);
    base += b;
    if (nodes[n].kind == NodeKind::Weight)
      params += b;
  }
  double peak = -1;
  for (const Point &pt : points) {
    double bytes = base;
    for (auto [n, r] : pt.live)
      bytes += valueBytes(n, r, nodes[n].strategies[choice[n]].results[r]);
    for (unsigned e : pt.transient)
      bytes += transientBytes(edges[e], choice[edges[e].producer],
                              choice[edges[e].consumer]);
    if (bytes > peak) {
      peak = bytes;
      p.peakAt = nodes[pt.node].name;
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

FailureOr<std::vector<unsigned>> Planner::readAnnotated() {
  std::vector<unsigned> choice(nodes.size(), 0);
  for (unsigned n = 0; n < nodes.size(); ++n) {
    Node &node = nodes[n];
    if (node.kind == NodeKind::Output || node.kind == NodeKind::Constant)
      continue;
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
    auto it = llvm::find_if(node.strategies, [&](const Strategy &s) {
      return sameLoops(s.loops, plan->loops);
    });
    if (it != node.strategies.end()) {
      choice[n] = it - node.strategies.begin();
      continue;
    }
    FailureOr<ShardingRule> rule = ShardingRule::get(node.op);
    node.strategies.push_back(makeComputeStrategy(node, *rule, plan->loops));
    choice[n] = node.strategies.size() - 1;
  }
  return choice;
}

//===----------------------------------------------------------------------===//
// The integer program
//===----------------------------------------------------------------------===//

Planner::Solved Planner::solve(double memoryLimit, bool minimizeMemory) {
  IlpProblem ilp;
  // Multiplicity of each folded node.
  std::vector<double> mult(nodes.size(), 0);
  for (const Node &node : nodes)
    mult[node.rep] += 1;
  // x variables (-1: a single strategy, fixed).
  std::vector<std::vector<int>> x(nodes.size());
  double objScale = minimizeMemory ? 0 : 1e6; // microseconds
  // The part of the objective no variable controls.
  double objConstant = 0;
  for (unsigned n = 0; n < nodes.size(); ++n) {
    if (nodes[n].rep != n)
      continue;
    size_t k = nodes[n].strategies.size();
    if (k == 1) {
      x[n] = {-1};
      objConstant += objScale * mult[n] * nodeCost(n, 0);
      continue;
    }
    std::vector<int> cols;
    std::vector<double> ones(k, 1.0);
    for (unsigned s = 0; s < k; ++s)
      cols.push_back(ilp.addVariable(objScale * mult[n] * nodeCost(n, s),
                                     /*integer=*/true));
    ilp.addRow(cols, ones, 'E', 1);
    x[n] = std::move(cols);
  }

  // A linear expression over the variables, plus a constant.
  struct Expr {
    std::map<int, double> terms;
    double constant = 0;
  };
  auto addX = [&](Expr &expr, unsigned n, unsigned s, double c) {
    if (c == 0)
      return;
    if (x[n].size() == 1 && x[n][0] == -1)
      expr.constant += c;
    else
      expr.terms[x[n][s]] += c;
  };

  // Folded edges with multiplicities.
  std::map<std::tuple<unsigned, unsigned, unsigned, unsigned>, double>
      foldedCount;
  std::vector<unsigned> edgeToFolded(edges.size());
  std::vector<std::tuple<unsigned, unsigned, unsigned, unsigned>> foldedKeys;
  {
    std::map<std::tuple<unsigned, unsigned, unsigned, unsigned>, unsigned> ids;
    for (auto [i, e] : llvm::enumerate(edges)) {
      auto key = std::make_tuple(nodes[e.producer].rep, e.result,
                                 nodes[e.consumer].rep, e.operand);
      auto [it, inserted] = ids.try_emplace(key, foldedKeys.size());
      if (inserted)
        foldedKeys.push_back(key);
      edgeToFolded[i] = it->second;
      foldedCount[key] += 1;
    }
  }
  // Per folded edge: groups of producer strategies (by layout) and consumer
  // strategies (by required layout and gradient layout), and e variables
  // over group pairs when both sides vary.
  struct FoldedEdge {
    Edge edge;
    std::vector<unsigned> prodGroup, consGroup; ///< strategy -> group
    std::vector<unsigned> prodRep, consRep;     ///< group -> a strategy
    std::vector<int> e;                         ///< g * |H| + h -> column
    bool self = false;
  };
  std::vector<FoldedEdge> folded(foldedKeys.size());
  Expr objective;
  for (auto [i, key] : llvm::enumerate(foldedKeys)) {
    auto [p, r, c, o] = key;
    FoldedEdge &fe = folded[i];
    fe.edge = {p, r, c, o};
    fe.self = p == c;
    llvm::DenseMap<Attribute, unsigned> pg;
    for (const Strategy &s : nodes[p].strategies) {
      auto [it, ins] = pg.try_emplace(s.results[r], fe.prodRep.size());
      if (ins)
        fe.prodRep.push_back(&s - nodes[p].strategies.data());
      fe.prodGroup.push_back(it->second);
    }
    llvm::DenseMap<std::pair<Attribute, Attribute>, unsigned> cg;
    for (const Strategy &s : nodes[c].strategies) {
      auto [it, ins] =
          cg.try_emplace({s.operands[o], s.grads[o]}, fe.consRep.size());
      if (ins)
        fe.consRep.push_back(&s - nodes[c].strategies.data());
      fe.consGroup.push_back(it->second);
    }
    double m = foldedCount[key];
    size_t G = fe.prodRep.size(), H = fe.consRep.size();
    bool pFixed = x[p].size() == 1 && x[p][0] == -1;
    bool cFixed = x[c].size() == 1 && x[c][0] == -1;
    if (fe.self || G == 1 || H == 1 || pFixed || cFixed)
      continue; // linear in the x's (handled by the callers below)
    fe.e.assign(G * H, -1);
    for (size_t g = 0; g < G; ++g)
      for (size_t h = 0; h < H; ++h) {
        double cost = minimizeMemory
                          ? 0
                          : objScale * m *
                                edgeCost(fe.edge, fe.prodRep[g], fe.consRep[h]);
        fe.e[g * H + h] = ilp.addVariable(cost, /*integer=*/false);
      }
    // Marginals: sum_h e(g,h) = sum_{s in g} x(p,s); likewise for h.
    for (size_t g = 0; g < G; ++g) {
      std::vector<int> cols;
      std::vector<double> coefs;
      for (size_t h = 0; h < H; ++h) {
        cols.push_back(fe.e[g * H + h]);
        coefs.push_back(1);
      }
      for (unsigned s = 0; s < fe.prodGroup.size(); ++s)
        if (fe.prodGroup[s] == g) {
          cols.push_back(x[p][s]);
          coefs.push_back(-1);
        }
      ilp.addRow(cols, coefs, 'E', 0);
    }
    for (size_t h = 0; h < H; ++h) {
      std::vector<int> cols;
      std::vector<double> coefs;
      for (size_t g = 0; g < G; ++g) {
        cols.push_back(fe.e[g * H + h]);
        coefs.push_back(1);
      }
      for (unsigned t = 0; t < fe.consGroup.size(); ++t)
        if (fe.consGroup[t] == h) {
          cols.push_back(x[c][t]);
          coefs.push_back(-1);
        }
      ilp.addRow(cols, coefs, 'E', 0);
    }
  }
  // f(s, t) over a folded edge as a linear expression.
  auto addEdgeTerm = [&](Expr &expr, const FoldedEdge &fe, double m, auto f) {
    unsigned p = fe.edge.producer, c = fe.edge.consumer;
    if (fe.self) {
      for (unsigned s = 0; s < nodes[p].strategies.size(); ++s)
        addX(expr, p, s, m * f(s, s));
      return;
    }
    if (!fe.e.empty()) {
      size_t H = fe.consRep.size();
      for (size_t g = 0; g < fe.prodRep.size(); ++g)
        for (size_t h = 0; h < H; ++h) {
          double v = m * f(fe.prodRep[g], fe.consRep[h]);
          if (v != 0)
            expr.terms[fe.e[g * H + h]] += v;
        }
      return;
    }
    bool pFixed = x[p].size() == 1 && x[p][0] == -1;
    bool cFixed = x[c].size() == 1 && x[c][0] == -1;
    if (pFixed && cFixed) {
      expr.constant += m * f(0, 0);
    } else if (pFixed || fe.prodRep.size() == 1) {
      // Only the consumer matters (every producer strategy gives the same
      // layout): pick any producer strategy.
      unsigned s = pFixed ? 0 : fe.prodRep[0];
      for (unsigned t = 0; t < nodes[c].strategies.size(); ++t)
        addX(expr, c, t, m * f(s, t));
    } else {
      unsigned t = cFixed ? 0 : fe.consRep[0];
      for (unsigned s = 0; s < nodes[p].strategies.size(); ++s)
        addX(expr, p, s, m * f(s, t));
    }
  };
  if (!minimizeMemory)
    for (FoldedEdge &fe : folded) {
      if (!fe.e.empty())
        continue; // priced on the e variables
      auto key = std::make_tuple(fe.edge.producer, fe.edge.result,
                                 fe.edge.consumer, fe.edge.operand);
      addEdgeTerm(
          objective, fe, objScale * foldedCount[key],
          [&](unsigned s, unsigned t) { return edgeCost(fe.edge, s, t); });
    }
  for (auto [col, c] : objective.terms)
    ilp.addObjective(col, c);
  objConstant += objective.constant;

  // Memory rows, deduplicated.
  double scale = 1e-9; // gigabytes keep the coefficients well scaled
  int peakVar = -1;
  if (minimizeMemory)
    peakVar = ilp.addVariable(1.0, /*integer=*/false, 0, 1e30);
  if (memoryLimit >= 0 || minimizeMemory) {
    Expr base;
    for (auto [n, r] : persistent) {
      unsigned rep = nodes[n].rep;
      for (unsigned s = 0; s < nodes[rep].strategies.size(); ++s)
        addX(base, rep, s,
             scale * valueBytes(n, r, nodes[n].strategies[s].results[r]));
    }
    std::set<std::vector<std::pair<int, double>>> seen;
    for (const Point &pt : points) {
      Expr row = base;
      for (auto [n, r] : pt.live) {
        unsigned rep = nodes[n].rep;
        for (unsigned s = 0; s < nodes[rep].strategies.size(); ++s)
          addX(row, rep, s,
               scale * valueBytes(n, r, nodes[n].strategies[s].results[r]));
      }
      for (unsigned e : pt.transient) {
        const FoldedEdge &fe = folded[edgeToFolded[e]];
        const Edge &orig = edges[e];
        addEdgeTerm(row, fe, scale, [&](unsigned s, unsigned t) {
          return transientBytes(orig, s, t);
        });
      }
      std::vector<std::pair<int, double>> key(row.terms.begin(),
                                              row.terms.end());
      key.push_back({-1, row.constant});
      if (!seen.insert(key).second)
        continue;
      std::vector<int> cols;
      std::vector<double> coefs;
      for (auto [col, c] : row.terms) {
        cols.push_back(col);
        coefs.push_back(c);
      }
      if (minimizeMemory) {
        cols.push_back(peakVar);
        coefs.push_back(-1);
        ilp.addRow(cols, coefs, 'L', -row.constant);
      } else {
        ilp.addRow(cols, coefs, 'L', scale * memoryLimit - row.constant);
      }
    }
  }

  Solved result;
  result.variables = ilp.getNumVariables();
  result.rows = ilp.getNumRows();
  IlpSolution sol;
  if (ilp.getNumVariables() == 0) {
    // Nothing to choose (a grid of one device).
    sol.status = IlpSolution::Status::Optimal;
    bool fits = true;
    for (const IlpProblem::Row &row : ilp.rows)
      fits &= row.sense != 'L' || row.rhs >= 0;
    if (!fits)
      sol.status = IlpSolution::Status::Infeasible;
  } else {
    sol = solveIlp(ilp, options.timeLimitSeconds);
  }
  result.status = sol.status;
  result.gap = sol.gap;
  result.objective = sol.objective + objConstant;
  if (sol.status != IlpSolution::Status::Optimal &&
      sol.status != IlpSolution::Status::Feasible)
    return result;
  std::vector<unsigned> repChoice(nodes.size(), 0);
  for (unsigned n = 0; n < nodes.size(); ++n) {
    if (nodes[n].rep != n || x[n][0] == -1)
      continue;
    for (unsigned s = 0; s < x[n].size(); ++s)
      if (sol.values[x[n][s]] > 0.5)
        repChoice[n] = s;
  }
  result.choice = expand(repChoice);
  return result;
}

//===----------------------------------------------------------------------===//
// Output
//===----------------------------------------------------------------------===//

void Planner::annotate(const std::vector<unsigned> &choice) {
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

/// `in [0,_] [_,1] -> out [0,1]` (compute) or `[0,_]` (a stored layout).
static std::string strategyText(const Strategy &s, bool compute) {
  if (!compute)
    return formatShardingText(s.results[0]);
  std::string out = "in";
  for (ShardingAttr a : s.operands)
    out += " " + formatShardingText(a);
  out += " -> out";
  for (ShardingAttr a : s.results)
    out += " " + formatShardingText(a);
  return out;
}

void Planner::describeDecisions(
    const std::vector<unsigned> &choice,
    std::map<Operation *, json::Object> &details) const {
  for (unsigned n = 0; n < nodes.size(); ++n) {
    const Node &node = nodes[n];
    if (node.kind != NodeKind::Compute && node.kind != NodeKind::Weight)
      continue;
    // Cost of this node's strategy s with every neighbour fixed.
    auto localCost = [&](unsigned s) {
      double c = nodeCost(n, s);
      for (unsigned e : inEdges[n])
        c += edgeCost(edges[e], choice[edges[e].producer], s);
      for (unsigned e : outEdges[n])
        c += edgeCost(edges[e], s, choice[edges[e].consumer]);
      return c;
    };
    unsigned chosen = choice[n];
    double cost = localCost(chosen);
    bool compute = node.kind == NodeKind::Compute;
    json::Object o{{"strategy", strategyText(node.strategies[chosen], compute)},
                   {"cost_s", cost}};
    if (compute) {
      json::Array loops;
      for (const SmallVector<int64_t> &axes : node.strategies[chosen].loops) {
        json::Array a;
        for (int64_t axis : axes)
          a.push_back(axis);
        loops.push_back(std::move(a));
      }
      o["loops"] = std::move(loops);
      o["compute_s"] = nodeCost(n, chosen);
    }
    std::optional<unsigned> best;
    double bestCost = 0;
    for (unsigned s = 0; s < node.strategies.size(); ++s) {
      if (s == chosen)
        continue;
      double c = localCost(s);
      if (!best || c < bestCost) {
        best = s;
        bestCost = c;
      }
    }
    if (best)
      o["runner_up"] = json::Object{
          {"strategy", strategyText(node.strategies[*best], compute)},
          {"cost_s", bestCost},
          {"cost_delta_s", bestCost - cost}};
    else
      o["runner_up"] = nullptr;
    if (node.rep != n)
      o["shares_strategy_with"] = nodes[node.rep].name;
    details[node.op] = std::move(o);
  }
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

FailureOr<PlanPrediction>
mlir::autopar::predictAnnotatedPlan(ModuleOp annotated,
                                    const AutoPlanOptions &options) {
  auto func = annotated.lookupSymbol<func::FuncOp>("main");
  if (!func)
    return annotated.emitError() << "expected a function @main to price";
  Planner planner(func, options);
  if (failed(planner.build()))
    return failure();
  FailureOr<std::vector<unsigned>> choice = planner.readAnnotated();
  if (failed(choice))
    return failure();
  return planner.evaluate(*choice);
}

FailureOr<AutoPlanResult>
mlir::autopar::planAutomatically(ModuleOp module,
                                 const AutoPlanOptions &options) {
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

  // Baselines first (each on a copy, through the same pass users run).
  if (log)
    *log << llvm::formatv("autopar: [{0:f1} s] pricing the replicated, data "
                          "and tensor baselines\n",
                          elapsed());
  for (StringRef baseline : {"replicated", "data", "tensor"}) {
    OwningOpRef<ModuleOp> copy = module.clone();
    PassManager pm(module.getContext());
    ApplyPlanPassOptions apply;
    apply.grid = gridText;
    apply.plan = baseline.str();
    pm.addPass(createApplyPlanPass(apply));
    pm.addPass(createVerifyShardedPass());
    // A baseline that cannot run here (a batch that does not divide over
    // the devices) is reported as such, not as an error of the search.
    std::string firstError;
    LogicalResult ran = success();
    {
      ScopedDiagnosticHandler capture(
          module.getContext(), [&](Diagnostic &diag) {
            if (diag.getSeverity() == DiagnosticSeverity::Error &&
                firstError.empty())
              firstError = diag.str();
            return success();
          });
      ran = pm.run(*copy);
    }
    PlanPrediction p;
    if (failed(ran)) {
      p.valid = false;
      p.fits = false;
      p.invalidReason =
          firstError.empty() ? "the plan cannot be built" : firstError;
      result.baselines[baseline.str()] = p;
      continue;
    }
    FailureOr<PlanPrediction> priced = predictAnnotatedPlan(*copy, options);
    if (failed(priced))
      return failure();
    result.baselines[baseline.str()] = *priced;
  }

  Planner planner(func, options);
  if (failed(planner.build()))
    return failure();
  if (options.foldRepeatedBlocks)
    planner.fold();
  if (log)
    *log << llvm::formatv("autopar: [{3:f1} s] planning {0} ops on grid "
                          "{1}: {2} distinct after folding repeated blocks\n",
                          planner.getNumNodes(), gridText, planner.getNumReps(),
                          elapsed());

  double limit = options.cluster.memoryBytes > 0
                     ? double(options.cluster.memoryBytes)
                     : -1;
  if (log)
    *log << llvm::formatv("autopar: [{0:f1} s] solving for the fastest plan "
                          "(memory unconstrained)\n",
                          elapsed());
  Planner::Solved unconstrained = planner.solve(-1, false);
  if (unconstrained.status != IlpSolution::Status::Optimal &&
      unconstrained.status != IlpSolution::Status::Feasible)
    return emitError(func.getLoc()) << "the plan search failed (solver status "
                                    << (int)unconstrained.status << ")";
  PlanPrediction free = planner.evaluate(unconstrained.choice);
  Planner::Solved chosen = unconstrained;
  bool binding = false;
  if (limit >= 0 && !free.fits) {
    binding = true;
    if (log)
      *log << llvm::formatv(
          "autopar: [{2:f1} s] fastest plan needs {0} per device, over the "
          "{1} limit; solving with the memory limit\n",
          formatByteSize(free.peakMemoryBytes), formatByteSize(limit),
          elapsed());
    chosen = planner.solve(limit, false);
    if (chosen.status == IlpSolution::Status::Infeasible) {
      Planner::Solved least = planner.solve(-1, true);
      InFlightDiagnostic diag = emitError(func.getLoc())
                                << "no plan fits in "
                                << options.cluster.memoryBytes
                                << " bytes per device";
      if (least.status == IlpSolution::Status::Optimal ||
          least.status == IlpSolution::Status::Feasible) {
        PlanPrediction p = planner.evaluate(least.choice);
        diag << "; the smallest peak any plan reaches is " << p.peakMemoryBytes
             << " bytes (" << formatByteSize(p.peakMemoryBytes) << ") at '"
             << p.peakAt << "'";
      }
      return failure();
    }
    if (chosen.status != IlpSolution::Status::Optimal &&
        chosen.status != IlpSolution::Status::Feasible)
      return emitError(func.getLoc())
             << "the plan search failed (solver status " << (int)chosen.status
             << ")";
  }
  result.predicted = planner.evaluate(chosen.choice);
  // Self-check: the program's objective is the plan's price.
  double ilpSeconds = chosen.objective / 1e6;
  double mismatch = std::fabs(ilpSeconds - result.predicted.stepTime);
  if (mismatch > 1e-6 * std::max(1e-9, result.predicted.stepTime) + 1e-12)
    return emitError(func.getLoc())
           << "internal error: the search priced its plan at " << ilpSeconds
           << " s, the cost model at " << result.predicted.stepTime << " s";
  planner.annotate(chosen.choice);
  planner.describeDecisions(chosen.choice, result.opDetails);
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
      {"ops", (int64_t)planner.getNumComputeOps()},
      {"distinct_nodes", (int64_t)planner.getNumReps()},
      {"repeated_blocks", planner.describeBlocks()},
      {"rule", options.foldRepeatedBlocks
                   ? "identical repeated blocks share one strategy"
                   : "every op chosen independently"}};
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
  result.report["search"] = std::move(search);
  result.report["memory"] = std::move(memory);
  if (log)
    *log << llvm::formatv("autopar: plan found in {0:f2} s: step {1:e3} s, "
                          "peak {2} per device{3}\n",
                          result.searchTimeSeconds, result.predicted.stepTime,
                          formatByteSize(result.predicted.peakMemoryBytes),
                          chosen.status == IlpSolution::Status::Optimal
                              ? " (proven optimal)"
                              : "");
  return result;
}
