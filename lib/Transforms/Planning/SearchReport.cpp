//===- SearchReport.cpp - why the planner chose what it chose -------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "SearchReport.h"

#include "BlockFolding.h"
#include "Recomputation.h"

#include "autopar/Transforms/Planning/PlanReport.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::planning;
namespace json = llvm::json;

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

void mlir::autopar::planning::describeDecisions(
    const StrategyGraph &graph, const PlanPricer &pricer, const Choice &choice,
    std::map<Operation *, json::Object> &details) {
  const std::vector<Node> &nodes = graph.nodes;
  const std::vector<Edge> &edges = graph.edges;
  // The choice with one node's strategy varied.
  Choice varied = choice;
  for (unsigned n = 0; n < nodes.size(); ++n) {
    const Node &node = nodes[n];
    if (node.kind != NodeKind::Compute && node.kind != NodeKind::Weight)
      continue;
    // The values this node reads come from these nodes.
    SmallVector<unsigned> producers;
    for (unsigned e : graph.inEdges[n])
      if (!llvm::is_contained(producers, edges[e].producer) &&
          edges[e].producer != n)
        producers.push_back(edges[e].producer);
    // Cost of this node's strategy s with every neighbour fixed: its compute
    // and the reshards of the values it reads and produces, a reshard that
    // several readers share counted once (PlanPricer::getReshardTime).
    auto localCost = [&](unsigned s) {
      varied[n] = s;
      double c = pricer.nodeCost(n, s) + pricer.getReshardTime(varied, n);
      for (unsigned p : producers)
        c += pricer.getReshardTime(varied, p);
      varied[n] = choice[n];
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
      o["compute_s"] = pricer.nodeCost(n, chosen);
    }
    std::optional<unsigned> best;
    double bestCost = 0;
    for (unsigned s = 0; s < node.strategies.size(); ++s) {
      if (s == chosen)
        continue;
      // Only alternatives the distributed optimizer's split leaves.
      varied[n] = s;
      bool kept = graph.satisfiesSplit(varied);
      varied[n] = chosen;
      if (!kept)
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

FailureOr<json::Array> mlir::autopar::planning::describeAnnotatedPlan(
    ModuleOp annotated, const AutoPlanOptions &options,
    std::map<Operation *, json::Object> &details) {
  auto func = annotated.lookupSymbol<func::FuncOp>("main");
  if (!func)
    return annotated.emitError() << "expected a function @main to describe";
  StrategyGraph graph(func, options);
  if (failed(graph.build()))
    return failure();
  FailureOr<Choice> choice = graph.readAnnotated();
  if (failed(choice))
    return failure();
  // The blocks are only found: every node keeps its own strategy.
  std::vector<FoldedBlock> blocks = foldRepeatedBlocks(graph, /*share=*/false);
  if (options.mode == PlanMode::Training &&
      options.recompute.kind != RecomputeKind::None &&
      failed(
          applyRecomputation(graph, blocks, options.recompute, func.getLoc())))
    return failure();
  PlanPricer pricer(graph);
  describeDecisions(graph, pricer, *choice, details);
  // A later instance shares the first one's strategy where it has the same.
  for (const FoldedBlock &b : blocks)
    for (unsigned r = 1; r < b.repeats; ++r)
      for (unsigned i = 0; i < b.period; ++i) {
        const Node &first = graph.nodes[graph.sequence[b.start + i]];
        const Node &later =
            graph.nodes[graph.sequence[b.start + r * b.period + i]];
        auto a = details.find(first.op), c = details.find(later.op);
        if (a == details.end() || c == details.end())
          continue;
        if (a->second.getString("strategy") == c->second.getString("strategy"))
          c->second["shares_strategy_with"] = first.name;
      }
  return describeBlocks(graph, blocks);
}
