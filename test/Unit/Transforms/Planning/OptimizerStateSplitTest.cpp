//===- OptimizerStateSplitTest.cpp - the search prices the ZeRO-1 split ---===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// With the distributed optimizer (AutoPlanOptions::shardOptimizerState on a
// step whose update is explicit), every node of a weight's update takes the
// layout the split rule (OptimizerStateSplit.h) gives it under the weight's
// layout. The integer program is exact over those plans, with and without a
// memory limit, and the plan it picks is the program
// autopar-shard-optimizer-state leaves, priced the same.
//
//===----------------------------------------------------------------------===//

#include "IntegerProgram.h"
#include "PlanningFixture.h"
#include "Pricing.h"
#include "StrategyGraph.h"

#include "autopar/Transforms/Passes.h"
#include "autopar/Transforms/Planning/OptimizerStateSplit.h"
#include "autopar/Transforms/Planning/OptimizerUpdates.h"

#include "mlir/Pass/PassManager.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <limits>

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::planning;

namespace {
/// One weight's update, as autopar-differentiate marks it: the gradient is
/// a product (a pending sum when its reduction is split) transposed into the
/// weight's layout; Adam's first moment, then the step.
const char *kStep = R"mlir(
func.func @main(%dy: tensor<32x8xf32> loc("dy"), %x: tensor<8x16xf32> loc("x")) {
  %w = autopar.weight "w" : tensor<16x32xf32>
  %m = autopar.weight "w.adam_m" {autopar.optimizer_update = "w"} : tensor<16x32xf32>
  %gt = autopar.matmul %dy, %x : (tensor<32x8xf32>, tensor<8x16xf32>) -> tensor<32x16xf32> loc("gt")
  %g = autopar.transpose %gt {perm = array<i64: 1, 0>} : (tensor<32x16xf32>) -> tensor<16x32xf32> loc("g")
  %m1 = autopar.add %m, %g {autopar.optimizer_update = "w"} : (tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<16x32xf32> loc("m1")
  %sm = autopar.assign %m, %m1 {autopar.optimizer_update = "w"} : tensor<16x32xf32> loc("store_m")
  %w1 = autopar.sub %w, %m1 {autopar.optimizer_update = "w"} : (tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<16x32xf32> loc("w1")
  %sw = autopar.assign %w, %w1 {autopar.optimizer_update = "w"} : tensor<16x32xf32> loc("store_w")
  return
})mlir";

/// 2 devices of 1e9 FLOP/s, links of 1e-6 s latency.
struct Fixture : testing::PlanningFixture {
  Fixture() : PlanningFixture(kStep, 2, 1e9, 1e-6) {
    options.shardOptimizerState = true;
  }
  ShardingAttr s(ArrayRef<SmallVector<int64_t>> dims) {
    return ShardingAttr::get(&ctx, dims, {});
  }
};

unsigned nodeNamed(const StrategyGraph &graph, StringRef name) {
  for (unsigned n = 0; n < graph.nodes.size(); ++n)
    if (graph.nodes[n].name == name)
      return n;
  FAIL("no node " << name.str());
  return 0;
}

/// The cheapest choice under `price` among those `keep` accepts, by trying
/// every one; its price is infinite when none is accepted.
std::pair<Choice, double>
bruteForce(const StrategyGraph &graph,
           const std::function<bool(const Choice &)> &keep,
           const std::function<double(const Choice &)> &price) {
  double count = 1;
  for (const Node &node : graph.nodes)
    count *= double(node.strategies.size());
  REQUIRE(count <= 2e6);
  Choice choice(graph.nodes.size(), 0), best;
  double bestPrice = std::numeric_limits<double>::infinity();
  while (true) {
    if (keep(choice)) {
      double p = price(choice);
      if (p < bestPrice) {
        bestPrice = p;
        best = choice;
      }
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
} // namespace

TEST_CASE("the update takes the split of its weight's layout",
          "[optimizer-split]") {
  Fixture f;
  StrategyGraph graph(f.main(), f.options);
  REQUIRE(succeeded(graph.build()));
  unsigned w = nodeNamed(graph, "w"), m = nodeNamed(graph, "w.adam_m"),
           m1 = nodeNamed(graph, "m1"), g = nodeNamed(graph, "g"),
           storeW = nodeNamed(graph, "store_w");
  // The moment, the update's values and the gradient's transpose follow
  // the weight; the weight's own store does not.
  SmallVector<unsigned> tiedNodes;
  for (const SplitTie &tie : graph.splitTies) {
    CHECK(tie.weight == w);
    tiedNodes.push_back(tie.node);
  }
  CHECK(llvm::is_contained(tiedNodes, m));
  CHECK(llvm::is_contained(tiedNodes, m1));
  CHECK(llvm::is_contained(tiedNodes, g));
  CHECK_FALSE(llvm::is_contained(tiedNodes, storeW));
  CHECK_FALSE(llvm::is_contained(tiedNodes, nodeNamed(graph, "gt")));

  // Under each layout of the weight, the tied strategies have the layouts
  // the rule gives (the pass's own), and nothing else is tied.
  OptimizerUpdates found = collectOptimizerUpdates(f.main());
  WeightOp weight = found.weights.lookup("w");
  ArrayRef<Operation *> update = found.updates.begin()->second;
  auto whole = [&](Value v) {
    return ShardingAttr::getReplicated(
        &f.ctx, cast<RankedTensorType>(v.getType()).getRank());
  };
  for (unsigned s = 0; s < graph.nodes[w].strategies.size(); ++s) {
    ShardingAttr layout = graph.nodes[w].strategies[s].results[0];
    SmallVector<SplitValue> split = getOptimizerStateSplit(
        weight, update, layout, f.options.gridShape, whole);
    for (const SplitTie &tie : graph.splitTies) {
      int t = tie.strategies[s];
      const Node &node = graph.nodes[tie.node];
      auto it = llvm::find_if(split, [&](const SplitValue &v) {
        return v.value == node.results[0];
      });
      CHECK((t >= 0) == (it != split.end()));
      if (t >= 0 && it != split.end())
        CHECK(node.strategies[t].results[0] == it->sharding);
    }
  }
  // The whole weight's replicas split its update (the moment, its new
  // value and store, the new weight) along its larger dimension, the
  // columns, and the gradient's transpose too, which then reads the product
  // split along its rows: the pending sum is reduce-scattered there. A
  // split weight has no replica left.
  ShardingAttr cols = f.s({{}, {0}}), rows = f.s({{0}, {}});
  ShardingAttr wholeW = f.s({{}, {}});
  SmallVector<SplitValue> split = getOptimizerStateSplit(
      weight, update, wholeW, f.options.gridShape, whole);
  REQUIRE(split.size() == 5);
  for (const SplitValue &v : split)
    CHECK(v.sharding == cols);
  CHECK(split.back().value == graph.nodes[g].results[0]);
  for (const SplitTie &tie : graph.splitTies)
    if (tie.node == g) {
      unsigned s = 0;
      for (; s < graph.nodes[w].strategies.size(); ++s)
        if (graph.nodes[w].strategies[s].results[0] == wholeW)
          break;
      REQUIRE(tie.strategies[s] >= 0);
      CHECK(graph.nodes[g].strategies[tie.strategies[s]].operands[0] == rows);
    }
  CHECK(getOptimizerStateSharding(wholeW, {16, 32}, {2}) == cols);
  CHECK(getOptimizerStateSharding(cols, {16, 32}, {2}) == nullptr);
  CHECK(getOptimizerStateSharding(rows, {16, 32}, {2}) == nullptr);
  CHECK(getOptimizerStateSharding(wholeW, {3, 5}, {2}) == nullptr);

  // The split moment takes half the bytes of the whole one.
  PlanPricer pricer(graph);
  unsigned wWhole = 0;
  for (unsigned s = 0; s < graph.nodes[w].strategies.size(); ++s)
    if (graph.nodes[w].strategies[s].results[0] == wholeW)
      wWhole = s;
  for (const SplitTie &tie : graph.splitTies)
    if (tie.node == m) {
      REQUIRE(tie.strategies[wWhole] >= 0);
      ShardingAttr layout =
          graph.nodes[m].strategies[tie.strategies[wWhole]].results[0];
      CHECK(pricer.valueBytes(m, 0, layout) == 16 * 32 * 4 / 2);
    }
}

TEST_CASE("the search is exact over the plans the split leaves",
          "[optimizer-split]") {
  Fixture f;
  StrategyGraph graph(f.main(), f.options);
  REQUIRE(succeeded(graph.build()));
  REQUIRE(!graph.splitTies.empty());
  PlanPricer pricer(graph);
  auto price = [&](const Choice &c) { return pricer.evaluate(c).stepTime; };
  auto kept = [&](const Choice &c) { return graph.satisfiesSplit(c); };
  auto [best, bestPrice] = bruteForce(graph, kept, price);
  REQUIRE(std::isfinite(bestPrice));

  SolvedProgram solved = solvePlanProgram(graph, pricer, /*memoryLimit=*/-1,
                                          /*minimizeMemory=*/false, 60);
  REQUIRE(solved.status == IlpSolution::Status::Optimal);
  CHECK(graph.satisfiesSplit(solved.choice));
  CHECK(solved.objective / 1e6 == Approx(price(solved.choice)).epsilon(1e-9));
  CHECK(price(solved.choice) == Approx(bestPrice).epsilon(1e-9));

  // Under a limit the fastest plan exceeds, the fastest plan that fits.
  int64_t peak = pricer.evaluate(solved.choice).peakMemoryBytes;
  double limit = double(peak - 1);
  auto fits = [&](const Choice &c) {
    return graph.satisfiesSplit(c) &&
           pricer.evaluate(c).peakMemoryBytes <= limit;
  };
  auto [fitting, fittingPrice] = bruteForce(graph, fits, price);
  SolvedProgram constrained = solvePlanProgram(graph, pricer, limit,
                                               /*minimizeMemory=*/false, 60);
  if (!std::isfinite(fittingPrice)) {
    CHECK(constrained.status == IlpSolution::Status::Infeasible);
  } else {
    REQUIRE(constrained.status == IlpSolution::Status::Optimal);
    CHECK(fits(constrained.choice));
    CHECK(price(constrained.choice) == Approx(fittingPrice).epsilon(1e-9));
  }
  // The smallest peak among the plans the split leaves.
  auto peakOf = [&](const Choice &c) {
    return double(pricer.evaluate(c).peakMemoryBytes);
  };
  auto [smallest, smallestPeak] = bruteForce(graph, kept, peakOf);
  SolvedProgram least = solvePlanProgram(graph, pricer, -1,
                                         /*minimizeMemory=*/true, 60);
  REQUIRE(least.status == IlpSolution::Status::Optimal);
  CHECK(graph.satisfiesSplit(least.choice));
  CHECK(peakOf(least.choice) == smallestPeak);
}

TEST_CASE("the planned step is the program the split leaves",
          "[optimizer-split]") {
  Fixture f;
  FailureOr<AutoPlanResult> planned = planAutomatically(*f.module, f.options);
  REQUIRE(succeeded(planned));
  OwningOpRef<ModuleOp> before = f.module->clone();
  PassManager pm(&f.ctx, ModuleOp::getOperationName());
  pm.addPass(createShardOptimizerStatePass());
  REQUIRE(succeeded(pm.run(*f.module)));
  // The pass sets the layouts the plan has: the IR is unchanged.
  std::string a, b;
  llvm::raw_string_ostream(a) << *before;
  llvm::raw_string_ostream(b) << *f.module;
  CHECK(a == b);
  FailureOr<PlanPrediction> program =
      predictAnnotatedPlan(*f.module, f.options);
  REQUIRE(succeeded(program));
  CHECK(program->peakMemoryBytes == planned->predicted.peakMemoryBytes);
  CHECK(program->stepTime ==
        Approx(planned->predicted.stepTime).epsilon(1e-12));
}
