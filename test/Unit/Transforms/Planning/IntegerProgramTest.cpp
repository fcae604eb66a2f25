//===- IntegerProgramTest.cpp - the search is exact for the cost model ----===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The integer program against a brute force over every choice of small
// strategy graphs: its objective is the plan's price (PlanPricer::evaluate),
// reshards that several readers of a value share included, and its optimum
// is the cheapest plan.
//
//===----------------------------------------------------------------------===//

#include "IntegerProgram.h"
#include "PlanningFixture.h"
#include "Pricing.h"
#include "StrategyGraph.h"

#include "autopar/Dialect/Autopar/IR/ShardLayout.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <catch2/catch.hpp>

#include <functional>
#include <limits>

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::planning;

namespace {
/// A projection read by two matmuls (attention's q and k of one input, or
/// two heads of one trunk), whose products are the outputs.
const char *kTwoReaders = R"mlir(
func.func @main(%a: tensor<16x4096xf32> loc("a")) -> (tensor<16x1024xf32>, tensor<16x1024xf32>) {
  %w = autopar.weight "w" : tensor<4096x768xf32>
  %w1 = autopar.weight "w1" : tensor<768x1024xf32>
  %w2 = autopar.weight "w2" : tensor<768x1024xf32>
  %y = autopar.matmul %a, %w : (tensor<16x4096xf32>, tensor<4096x768xf32>) -> tensor<16x768xf32> loc("y")
  %z1 = autopar.matmul %y, %w1 : (tensor<16x768xf32>, tensor<768x1024xf32>) -> tensor<16x1024xf32> loc("z1")
  %z2 = autopar.matmul %y, %w2 : (tensor<16x768xf32>, tensor<768x1024xf32>) -> tensor<16x1024xf32> loc("z2")
  return %z1, %z2 : tensor<16x1024xf32>, tensor<16x1024xf32>
})mlir";

/// A training step's forward pass: an input read by two matmuls and an
/// add (its gradient arrives from three readers), then a residual.
const char *kTrainingReaders = R"mlir(
func.func @main(%x: tensor<32x64xf32> loc("x")) -> tensor<32x64xf32> {
  %w1 = autopar.weight "w1" : tensor<64x64xf32>
  %w2 = autopar.weight "w2" : tensor<64x64xf32>
  %h = autopar.relu %x : (tensor<32x64xf32>) -> tensor<32x64xf32> loc("h")
  %p = autopar.matmul %h, %w1 : (tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<32x64xf32> loc("p")
  %q = autopar.matmul %h, %w2 : (tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<32x64xf32> loc("q")
  %s = autopar.add %p, %q : (tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<32x64xf32> loc("s")
  %r = autopar.add %s, %h : (tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<32x64xf32> loc("r")
  return %r : tensor<32x64xf32>
})mlir";

/// 4 devices of 1e12 FLOP/s, links of 1e-6 s latency.
struct Fixture : testing::PlanningFixture {
  Fixture(const char *source) : PlanningFixture(source, 4, 1e12, 1e-6) {}
};

unsigned nodeNamed(const StrategyGraph &graph, StringRef name) {
  for (unsigned n = 0; n < graph.nodes.size(); ++n)
    if (graph.nodes[n].name == name)
      return n;
  FAIL("no node " << name.str());
  return 0;
}

/// The cheapest choice under `price`, by trying every one.
std::pair<Choice, double>
bruteForce(const StrategyGraph &graph,
           const std::function<double(const Choice &)> &price) {
  double count = 1;
  for (const Node &node : graph.nodes)
    count *= double(node.strategies.size());
  REQUIRE(count <= 1e6);
  Choice choice(graph.nodes.size(), 0), best;
  double bestPrice = std::numeric_limits<double>::infinity();
  while (true) {
    double p = price(choice);
    if (p < bestPrice) {
      bestPrice = p;
      best = choice;
    }
    unsigned n = 0;
    for (; n < choice.size(); ++n) {
      if (++choice[n] < graph.nodes[n].strategies.size())
        break;
      choice[n] = 0;
    }
    if (n == choice.size())
      return {best, bestPrice};
  }
}

/// The objective of the program before reshards were shared: every edge
/// priced on its own.
double perEdgePrice(const StrategyGraph &graph, const PlanPricer &pricer,
                    const Choice &choice) {
  double seconds = 0;
  for (unsigned n = 0; n < graph.nodes.size(); ++n)
    seconds += pricer.nodeCost(n, choice[n]);
  for (const Edge &e : graph.edges)
    seconds += pricer.edgeCost(e, choice[e.producer], choice[e.consumer]);
  return seconds;
}
} // namespace

TEST_CASE("a reshard two readers share is priced once by the search",
          "[integer-program]") {
  Fixture f(kTwoReaders);
  StrategyGraph graph(f.main(), f.options);
  REQUIRE(succeeded(graph.build()));
  PlanPricer pricer(graph);
  auto price = [&](const Choice &c) { return pricer.evaluate(c).stepTime; };
  auto [best, bestPrice] = bruteForce(graph, price);

  SolvedProgram solved = solvePlanProgram(graph, pricer, /*memoryLimit=*/-1,
                                          /*minimizeMemory=*/false, 60);
  REQUIRE(solved.status == IlpSolution::Status::Optimal);
  // The program's objective is its plan's price, and no plan is cheaper.
  double searched = price(solved.choice);
  CHECK(solved.objective / 1e6 == Approx(searched).epsilon(1e-9));
  CHECK(searched == Approx(bestPrice).epsilon(1e-9));

  // The cheapest plan gathers the projection once for both readers.
  unsigned y = nodeNamed(graph, "y"), z1 = nodeNamed(graph, "z1"),
           z2 = nodeNamed(graph, "z2");
  ShardingAttr have = graph.nodes[y].strategies[best[y]].results[0];
  ShardingAttr want1 = graph.nodes[z1].strategies[best[z1]].operands[0];
  ShardingAttr want2 = graph.nodes[z2].strategies[best[z2]].operands[0];
  CHECK(want1 == want2);
  CHECK(have != want1);
  CHECK(pricer.evaluate(solved.choice).commTime > 0);

  // Pricing that gather on each reader's edge (the program before
  // 2026-12-07) makes another plan look cheaper, one whose price is higher:
  // the per-edge search rejected the cheapest plan.
  auto perEdge = [&](const Choice &c) {
    return perEdgePrice(graph, pricer, c);
  };
  auto [perEdgeBest, perEdgeBestPrice] = bruteForce(graph, perEdge);
  INFO("cheapest " << bestPrice << " s; per-edge pick " << perEdgeBestPrice
                   << " s per edge, " << price(perEdgeBest) << " s priced");
  CHECK(perEdge(best) > perEdgeBestPrice);
  CHECK(price(perEdgeBest) > bestPrice * (1 + 1e-6));
}

TEST_CASE("the search is exact with shared gradient reshards in training",
          "[integer-program]") {
  Fixture f(kTrainingReaders);
  f.options.gridShape = {2};
  f.options.cluster.axes.assign(1, {1e9, 1e-6});
  f.options.mode = PlanMode::Training;
  f.options.microbatches = 2;
  StrategyGraph graph(f.main(), f.options);
  REQUIRE(succeeded(graph.build()));
  PlanPricer pricer(graph);
  auto price = [&](const Choice &c) { return pricer.evaluate(c).stepTime; };
  auto [best, bestPrice] = bruteForce(graph, price);
  SolvedProgram solved = solvePlanProgram(graph, pricer, /*memoryLimit=*/-1,
                                          /*minimizeMemory=*/false, 60);
  REQUIRE(solved.status == IlpSolution::Status::Optimal);
  CHECK(solved.objective / 1e6 == Approx(price(solved.choice)).epsilon(1e-9));
  CHECK(price(solved.choice) == Approx(bestPrice).epsilon(1e-9));

  // h whole, both matmuls splitting their reduction (h read split by
  // columns, free slices of the whole h) and the residual whole: h's
  // gradient arrives in one layout from both matmuls, summed and resharded
  // once; the residual's arrives whole, as h is.
  unsigned h = nodeNamed(graph, "h"), p = nodeNamed(graph, "p"),
           q = nodeNamed(graph, "q"), r = nodeNamed(graph, "r");
  SmallVector<SmallVector<int64_t>> colsDims = {{}, {0}};
  ShardingAttr cols = ShardingAttr::get(&f.ctx, colsDims, {});
  ShardingAttr whole = ShardingAttr::getReplicated(&f.ctx, 2);
  auto strategyReading = [&](unsigned n, unsigned operand,
                             ShardingAttr layout) -> unsigned {
    const std::vector<Strategy> &all = graph.nodes[n].strategies;
    for (unsigned s = 0; s < all.size(); ++s)
      if (all[s].operands[operand] == layout)
        return s;
    FAIL("no strategy reading the layout");
    return 0;
  };
  Choice choice = solved.choice;
  for (unsigned s = 0; s < graph.nodes[h].strategies.size(); ++s)
    if (graph.nodes[h].strategies[s].results[0] == whole)
      choice[h] = s;
  choice[p] = strategyReading(p, 0, cols);
  choice[q] = strategyReading(q, 0, cols);
  choice[r] = strategyReading(r, 1, whole);
  REQUIRE(graph.nodes[h].strategies[choice[h]].results[0] == whole);
  double both = pricer.getReshardTime(choice, h);
  const Edge *toP = nullptr;
  for (unsigned e : graph.outEdges[h])
    if (graph.edges[e].consumer == p)
      toP = &graph.edges[e];
  REQUIRE(toP);
  double gradient = pricer.getKeyedReshardTime(
      PlanPricer::ReshardKind::Gradient, *toP, choice[h],
      pricer.getReshardKey(PlanPricer::ReshardKind::Gradient, *toP, choice[p]));
  REQUIRE(gradient > 0);
  // Per reader, the edge alone prices that reshard; the value prices it
  // once for both.
  CHECK(both == Approx(gradient).epsilon(1e-12));
  CHECK(pricer.edgeCost(*toP, choice[h], choice[p]) ==
        Approx(gradient).epsilon(1e-12));
}

TEST_CASE("the search under a memory limit is exact", "[integer-program]") {
  // Every limit between the smallest and the largest peak of any plan, with
  // and without a cutoff at the best step: the program's plan fits, and no
  // plan that fits is faster (the relaxation of the memory rows before
  // branch and bound decides some of these alone).
  Fixture f(kTrainingReaders);
  f.options.gridShape = {2};
  f.options.cluster.axes.assign(1, {1e9, 1e-6});
  f.options.mode = PlanMode::Training;
  f.options.microbatches = 2;
  StrategyGraph graph(f.main(), f.options);
  REQUIRE(succeeded(graph.build()));
  PlanPricer pricer(graph);
  std::vector<std::pair<double, double>> plans; // (peak, step)
  bruteForce(graph, [&](const Choice &c) {
    PlanPrediction p = pricer.evaluate(c);
    plans.push_back({p.peakMemoryBytes, p.stepTime});
    return 0.0;
  });
  llvm::sort(plans);
  double least = plans.front().first, most = plans.back().first;
  REQUIRE(least < most);
  double fastest = std::numeric_limits<double>::infinity();
  for (auto [peak, step] : plans)
    fastest = std::min(fastest, step);
  unsigned binding = 0;
  for (unsigned i = 0; i <= 12; ++i) {
    double limit = least + (most - least) * i / 12.0;
    double best = std::numeric_limits<double>::infinity();
    for (auto [peak, step] : plans)
      if (peak <= limit)
        best = std::min(best, step);
    binding += best > fastest * (1 + 1e-9);
    INFO("limit " << limit << " bytes: fastest plan that fits " << best
                  << " s");
    SolvedProgram solved =
        solvePlanProgram(graph, pricer, limit, /*minimizeMemory=*/false, 60);
    REQUIRE(solved.status == IlpSolution::Status::Optimal);
    PlanPrediction p = pricer.evaluate(solved.choice);
    CHECK(p.peakMemoryBytes <= limit);
    CHECK(p.stepTime == Approx(best).epsilon(1e-9));
    CHECK(solved.objective / 1e6 == Approx(p.stepTime).epsilon(1e-9));
    // Under a cutoff just below the best step nothing is found; at it, the
    // same step.
    SolvedProgram below =
        solvePlanProgram(graph, pricer, limit, false, 60, best * (1 - 1e-3));
    CHECK(below.status == IlpSolution::Status::Infeasible);
    SolvedProgram at =
        solvePlanProgram(graph, pricer, limit, false, 60, best * (1 + 1e-9));
    REQUIRE(at.hasSolution());
    CHECK(pricer.evaluate(at.choice).stepTime == Approx(best).epsilon(1e-9));
  }
  // Memory binds at some of the limits.
  CHECK(binding > 0);
}
