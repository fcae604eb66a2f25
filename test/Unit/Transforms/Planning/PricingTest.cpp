//===- PricingTest.cpp - prices of stores and shared reshards -------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "Pricing.h"
#include "IntegerProgram.h"
#include "PlanningFixture.h"
#include "StrategyGraph.h"

#include "autopar/Dialect/Autopar/IR/ShardLayout.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <catch2/catch.hpp>

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::planning;

namespace {
/// An update stored into its weight (8x64 f32, 2 KiB).
const char *kStore = R"mlir(
func.func @main(%g: tensor<8x64xf32> loc("g")) -> tensor<8x64xf32> {
  %w = autopar.weight "w" : tensor<8x64xf32>
  %u = autopar.sub %w, %g : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32> loc("u")
  %s = autopar.assign %w, %u : tensor<8x64xf32> loc("store")
  return %s : tensor<8x64xf32>
})mlir";

/// A product squared: both operands of the square read one value.
const char *kSquare = R"mlir(
func.func @main(%a: tensor<8x64xf32> loc("a"), %b: tensor<64x16xf32> loc("b")) -> tensor<8x16xf32> {
  %y = autopar.matmul %a, %b : (tensor<8x64xf32>, tensor<64x16xf32>) -> tensor<8x16xf32> loc("y")
  %sq = autopar.mul %y, %y : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32> loc("sq")
  return %sq : tensor<8x16xf32>
})mlir";

/// 4 devices of 1e9 FLOP/s, links of 1e-6 s latency.
struct Fixture : testing::PlanningFixture {
  Fixture(const char *source) : PlanningFixture(source, 4, 1e9, 1e-6) {}
  ShardingAttr s(ArrayRef<SmallVector<int64_t>> dims,
                 ArrayRef<int64_t> partial = {}) {
    return ShardingAttr::get(&ctx, dims, partial);
  }
};

unsigned nodeNamed(const StrategyGraph &graph, StringRef name) {
  for (unsigned n = 0; n < graph.nodes.size(); ++n)
    if (graph.nodes[n].name == name)
      return n;
  FAIL("no node " << name.str());
  return 0;
}

/// The strategy of node `n` whose result `r` (or, with `operand`, whose
/// operand) has layout `layout`.
unsigned strategyWith(const StrategyGraph &graph, unsigned n,
                      ShardingAttr layout, bool operand = false) {
  const std::vector<Strategy> &all = graph.nodes[n].strategies;
  for (unsigned s = 0; s < all.size(); ++s)
    if ((operand ? all[s].operands[0] : all[s].results[0]) == layout)
      return s;
  FAIL("no strategy with the layout");
  return 0;
}

const Edge &edgeInto(const StrategyGraph &graph, unsigned consumer,
                     unsigned operand) {
  for (const Edge &e : graph.edges)
    if (e.consumer == consumer && e.operand == operand)
      return e;
  FAIL("no edge");
  return graph.edges.front();
}
} // namespace

TEST_CASE("a store reshards the update into the weight's layout", "[pricing]") {
  Fixture f(kStore);
  StrategyGraph graph(f.main(), f.options);
  REQUIRE(succeeded(graph.build()));
  PlanPricer pricer(graph);
  unsigned weight = nodeNamed(graph, "w"), store = nodeNamed(graph, "store");
  const Edge &e = edgeInto(graph, store, 0);
  REQUIRE(e.producer == weight);
  CHECK(pricer.isWeightStore(e));
  CHECK_FALSE(pricer.isWeightStore(edgeInto(graph, store, 1)));
  CHECK_FALSE(pricer.isWeightStore(edgeInto(graph, nodeNamed(graph, "u"), 0)));

  auto type = RankedTensorType::get({8, 64}, Float32Type::get(&f.ctx));
  ShardingAttr whole = f.s({{}, {}}), rows = f.s({{0}, {}}),
               cols = f.s({{}, {0}});
  unsigned wWhole = strategyWith(graph, weight, whole);
  unsigned wCols = strategyWith(graph, weight, cols);
  unsigned sWhole = strategyWith(graph, store, whole);
  unsigned sRows = strategyWith(graph, store, rows);
  unsigned sCols = strategyWith(graph, store, cols);
  int64_t bytes = 8 * 64 * 4;
  // The layouts agree: nothing moves.
  CHECK(pricer.transientBytes(e, wWhole, sWhole) == 0);
  CHECK(pricer.edgeCost(e, wWhole, sWhole) == 0);
  CHECK(pricer.collectiveScratchBytes(e, wWhole, sWhole) == 0);
  // A whole weight, the update split: the updated blocks are all-gathered
  // into a whole buffer; along the columns through the runtime's scratch
  // copy too. The weight's own slicing (free) is not what is priced.
  CHECK(pricer.transientBytes(e, wWhole, sRows) == bytes);
  CHECK(pricer.collectiveScratchBytes(e, wWhole, sRows) == 0);
  CHECK(pricer.transientBytes(e, wWhole, sCols) == bytes);
  CHECK(pricer.collectiveScratchBytes(e, wWhole, sCols) == bytes);
  ReshardCost gather =
      getReshardCost(type, cols, whole, f.options.gridShape, f.options.cluster);
  REQUIRE(gather.time > 0);
  CHECK(pricer.edgeCost(e, wWhole, sCols) == Approx(gather.time));
  // A split weight, the update whole: its block is sliced out for the
  // store, without communication (not the gather of the weight).
  CHECK(pricer.edgeCost(e, wCols, sWhole) == 0);
  CHECK(pricer.transientBytes(e, wCols, sWhole) == bytes / 4);
  CHECK(pricer.collectiveScratchBytes(e, wCols, sWhole) == 0);

  // The peak of the store: the weight, the input, the update and its
  // gathered copy, plus the gather's scratch while it runs.
  Choice choice(graph.nodes.size(), 0);
  choice[weight] = wWhole;
  choice[store] = sCols;
  unsigned update = nodeNamed(graph, "u");
  choice[update] = strategyWith(graph, update, cols);
  choice[nodeNamed(graph, "g")] =
      strategyWith(graph, nodeNamed(graph, "g"), cols);
  PlanPrediction p = pricer.evaluate(choice);
  CHECK(p.peakAt == "store");
  CHECK(p.peakMemoryBytes == bytes + bytes / 4 + bytes / 4 + bytes + bytes);
}

TEST_CASE("a collective's scratch is held while it runs, not with the op",
          "[pricing]") {
  Fixture f(kSquare);
  f.options.gridShape = {2, 2};
  f.options.cluster.axes.push_back({1e9, 1e-6});
  StrategyGraph graph(f.main(), f.options);
  REQUIRE(succeeded(graph.build()));
  PlanPricer pricer(graph);
  unsigned y = nodeNamed(graph, "y"), sq = nodeNamed(graph, "sq");
  unsigned a = nodeNamed(graph, "a"), b = nodeNamed(graph, "b");
  // y's columns split over both axes; the square wants them over axis 0
  // only: an all-gather along the columns (its scratch is the gathered
  // 8x8 block). Both operands share it.
  Choice choice(graph.nodes.size(), 0);
  choice[a] = strategyWith(graph, a, f.s({{}, {}}));
  choice[b] = strategyWith(graph, b, f.s({{}, {0, 1}}));
  choice[y] = strategyWith(graph, y, f.s({{}, {0, 1}}));
  choice[sq] = strategyWith(graph, sq, f.s({{}, {0}}), /*operand=*/true);
  const Edge &first = edgeInto(graph, sq, 0);
  CHECK(pricer.transientBytes(first, choice[y], choice[sq]) == 8 * 8 * 4);
  CHECK(pricer.collectiveScratchBytes(first, choice[y], choice[sq]) ==
        8 * 8 * 4);
  CHECK(pricer.collectiveScratchBytes(edgeInto(graph, sq, 1), choice[y],
                                      choice[sq]) == 0);
  // At the square: the inputs (2 KiB whole a, 1 KiB of b), y's block
  // (128 B), its gathered copy (256 B) and the result (256 B); while the
  // gather runs, its 256 B scratch instead of the result, not both.
  PlanPrediction p = pricer.evaluate(choice);
  auto at = llvm::find_if(
      p.memoryProfile, [](const auto &entry) { return entry.first == "sq"; });
  REQUIRE(at != p.memoryProfile.end());
  CHECK(at->second == 2048 + 1024 + 128 + 256 + 256);
}

TEST_CASE("an op reading one value twice in one layout shares its reshard",
          "[pricing]") {
  Fixture f(kSquare);
  StrategyGraph graph(f.main(), f.options);
  REQUIRE(succeeded(graph.build()));
  PlanPricer pricer(graph);
  unsigned y = nodeNamed(graph, "y"), sq = nodeNamed(graph, "sq");
  // The product with its reduction split: a pending sum.
  ShardingAttr pending = f.s({{}, {}}, {0}), whole = f.s({{}, {}});
  unsigned yPending = strategyWith(graph, y, pending);
  unsigned sqWhole = strategyWith(graph, sq, whole, /*operand=*/true);
  const Edge &first = edgeInto(graph, sq, 0), &second = edgeInto(graph, sq, 1);
  REQUIRE(first.producer == y);
  REQUIRE(second.producer == y);
  // One all-reduced copy, priced once.
  CHECK_FALSE(pricer.sharesReshard(first, sqWhole));
  CHECK(pricer.sharesReshard(second, sqWhole));
  CHECK(pricer.transientBytes(first, yPending, sqWhole) == 8 * 16 * 4);
  CHECK(pricer.transientBytes(second, yPending, sqWhole) == 0);
  CHECK(pricer.edgeCost(first, yPending, sqWhole) > 0);
  CHECK(pricer.edgeCost(second, yPending, sqWhole) == 0);

  // The integer program prices the edges alike: its objective is the step
  // time of the choice it returns, and it agrees on every pinned pair.
  SolvedProgram solved = solvePlanProgram(graph, pricer, /*memoryLimit=*/-1,
                                          /*minimizeMemory=*/false, 60);
  REQUIRE(solved.hasSolution());
  CHECK(solved.objective ==
        Approx(1e6 * pricer.evaluate(solved.choice).stepTime));
}
