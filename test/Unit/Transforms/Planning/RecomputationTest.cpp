//===- RecomputationTest.cpp - recomputed regions and their prices --------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "Recomputation.h"
#include "BlockFolding.h"
#include "PlanningFixture.h"
#include "Pricing.h"
#include "StrategyGraph.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <catch2/catch.hpp>

#include <set>

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::planning;

namespace {
/// Two identical attention blocks (x @ Wq, x @ Wk^T-like, scores, softmax,
/// probabilities @ v, projection, residual).
const char *kAttention = R"mlir(
func.func @main(%x: tensor<64x16xf32> loc("x")) -> tensor<64x16xf32> {
  %wq0 = autopar.weight "wq0" : tensor<16x16xf32>
  %wk0 = autopar.weight "wk0" : tensor<16x16xf32>
  %wo0 = autopar.weight "wo0" : tensor<16x16xf32>
  %q0 = autopar.matmul %x, %wq0 : (tensor<64x16xf32>, tensor<16x16xf32>) -> tensor<64x16xf32> loc("q0")
  %k0 = autopar.matmul %x, %wk0 : (tensor<64x16xf32>, tensor<16x16xf32>) -> tensor<64x16xf32> loc("k0")
  %kt0 = autopar.transpose %k0 {perm = array<i64: 1, 0>} : (tensor<64x16xf32>) -> tensor<16x64xf32> loc("kt0")
  %s0 = autopar.matmul %q0, %kt0 : (tensor<64x16xf32>, tensor<16x64xf32>) -> tensor<64x64xf32> loc("scores0")
  %p0 = autopar.softmax %s0 {axis = 1 : i64} : (tensor<64x64xf32>) -> tensor<64x64xf32> loc("probs0")
  %c0 = autopar.matmul %p0, %q0 : (tensor<64x64xf32>, tensor<64x16xf32>) -> tensor<64x16xf32> loc("context0")
  %o0 = autopar.matmul %c0, %wo0 : (tensor<64x16xf32>, tensor<16x16xf32>) -> tensor<64x16xf32> loc("proj0")
  %r0 = autopar.add %x, %o0 : (tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<64x16xf32> loc("res0")
  %wq1 = autopar.weight "wq1" : tensor<16x16xf32>
  %wk1 = autopar.weight "wk1" : tensor<16x16xf32>
  %wo1 = autopar.weight "wo1" : tensor<16x16xf32>
  %q1 = autopar.matmul %r0, %wq1 : (tensor<64x16xf32>, tensor<16x16xf32>) -> tensor<64x16xf32> loc("q1")
  %k1 = autopar.matmul %r0, %wk1 : (tensor<64x16xf32>, tensor<16x16xf32>) -> tensor<64x16xf32> loc("k1")
  %kt1 = autopar.transpose %k1 {perm = array<i64: 1, 0>} : (tensor<64x16xf32>) -> tensor<16x64xf32> loc("kt1")
  %s1 = autopar.matmul %q1, %kt1 : (tensor<64x16xf32>, tensor<16x64xf32>) -> tensor<64x64xf32> loc("scores1")
  %p1 = autopar.softmax %s1 {axis = 1 : i64} : (tensor<64x64xf32>) -> tensor<64x64xf32> loc("probs1")
  %c1 = autopar.matmul %p1, %q1 : (tensor<64x64xf32>, tensor<64x16xf32>) -> tensor<64x16xf32> loc("context1")
  %o1 = autopar.matmul %c1, %wo1 : (tensor<64x16xf32>, tensor<16x16xf32>) -> tensor<64x16xf32> loc("proj1")
  %r1 = autopar.add %r0, %o1 : (tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<64x16xf32> loc("res1")
  return %r1 : tensor<64x16xf32>
})mlir";

/// 2 devices of 1e9 FLOP/s, links without latency, planning in `mode`.
struct Fixture : testing::PlanningFixture {
  Fixture(const char *source, PlanMode mode)
      : PlanningFixture(source, 2, 1e9, 0) {
    options.mode = mode;
  }
};

std::set<std::string> names(const StrategyGraph &graph,
                            ArrayRef<unsigned> nodes) {
  std::set<std::string> out;
  for (unsigned n : nodes)
    out.insert(graph.nodes[n].name);
  return out;
}
} // namespace

TEST_CASE("recomputation settings parse and print", "[recompute]") {
  for (StringRef text : {"none", "selective", "full", "full:3", "full:0"}) {
    std::optional<RecomputeSpec> spec = parseRecomputeSpec(text);
    REQUIRE(spec);
    CHECK(stringifyRecomputeSpec(*spec) == text.str());
  }
  CHECK(parseRecomputeSpec("full")->blocks == -1);
  CHECK(parseRecomputeSpec("full:3")->blocks == 3);
  for (StringRef bad :
       {"", "some", "selective:2", "full:", "full:x", "full:-1", "none:1"})
    CHECK_FALSE(parseRecomputeSpec(bad));
}

TEST_CASE("attention cores are found from the graph", "[recompute]") {
  Fixture f(kAttention, PlanMode::Training);
  StrategyGraph graph(f.main(), f.options);
  REQUIRE(succeeded(graph.build()));
  std::vector<std::vector<unsigned>> cores = findAttentionCores(graph);
  REQUIRE(cores.size() == 2);
  CHECK(names(graph, cores[0]) ==
        std::set<std::string>{"scores0", "probs0", "context0"});
  CHECK(names(graph, cores[1]) ==
        std::set<std::string>{"scores1", "probs1", "context1"});
}

TEST_CASE("recomputation moves memory to time, by the op's forward",
          "[recompute]") {
  Fixture f(kAttention, PlanMode::Training);
  StrategyGraph graph(f.main(), f.options);
  REQUIRE(succeeded(graph.build()));
  std::vector<FoldedBlock> blocks = foldRepeatedBlocks(graph, false);
  REQUIRE(blocks.size() == 1);
  CHECK(blocks[0].repeats == 2);
  PlanPricer pricer(graph);
  // One fixed choice: every node's first strategy.
  Choice choice(graph.nodes.size(), 0);
  auto price = [&](RecomputeSpec spec) {
    REQUIRE(
        succeeded(applyRecomputation(graph, blocks, spec, f.main().getLoc())));
    return pricer.evaluate(choice);
  };
  PlanPrediction none = price({RecomputeKind::None, -1});
  PlanPrediction selective = price({RecomputeKind::Selective, -1});
  PlanPrediction full = price({RecomputeKind::Full, -1});
  PlanPrediction one = price({RecomputeKind::Full, 1});
  CHECK(none.recomputeTime == 0);
  // Training compute is forward x3; a recomputed op adds one forward.
  double forward = 0, coreForward = 0;
  for (unsigned n : graph.sequence) {
    double c = graph.nodes[n].strategies[0].compute;
    forward += c;
    StringRef name = graph.nodes[n].name;
    if (name.starts_with("scores") || name.starts_with("probs") ||
        name.starts_with("context"))
      coreForward += c;
  }
  CHECK(selective.recomputeTime == Approx(coreForward).epsilon(1e-12));
  CHECK(selective.computeTime ==
        Approx(none.computeTime + coreForward).epsilon(1e-12));
  // Full recomputation covers both blocks (every compute op but none
  // outside them here).
  CHECK(full.recomputeTime == Approx(forward).epsilon(1e-12));
  CHECK(one.recomputeTime < full.recomputeTime);
  CHECK(one.recomputeTime > 0);
  // Less is stored: the peak falls with more recomputation, and one block
  // of two recomputed saves less than both.
  CHECK(selective.peakMemoryBytes < none.peakMemoryBytes);
  CHECK(full.peakMemoryBytes < selective.peakMemoryBytes);
  CHECK(one.peakMemoryBytes <= none.peakMemoryBytes);
  CHECK(one.peakMemoryBytes >= full.peakMemoryBytes);
  // Back to none, the prices are the original ones.
  PlanPrediction again = price({RecomputeKind::None, -1});
  CHECK(again.computeTime == none.computeTime);
  CHECK(again.peakMemoryBytes == none.peakMemoryBytes);
}

TEST_CASE("settings that do not apply are errors", "[recompute]") {
  Fixture f(kAttention, PlanMode::Training);
  StrategyGraph graph(f.main(), f.options);
  REQUIRE(succeeded(graph.build()));
  std::vector<FoldedBlock> blocks = foldRepeatedBlocks(graph, false);
  std::string message;
  ScopedDiagnosticHandler capture(&f.ctx, [&](Diagnostic &diag) {
    message = diag.str();
    return success();
  });
  CHECK(failed(applyRecomputation(graph, blocks, {RecomputeKind::Full, 3},
                                  f.main().getLoc())));
  CHECK(message ==
        "full recomputation of 3 blocks, but the model has 2 repeated blocks");
  CHECK(failed(applyRecomputation(graph, {}, {RecomputeKind::Full, -1},
                                  f.main().getLoc())));
  CHECK(message ==
        "full recomputation recomputes repeated blocks, and this model has "
        "none");
}
