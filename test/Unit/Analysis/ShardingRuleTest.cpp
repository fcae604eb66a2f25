//===- ShardingRuleTest.cpp - sharding rules and reshard plans ------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "autopar/Analysis/Reshard.h"
#include "autopar/Analysis/ShardingRule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <catch2/catch.hpp>

#include <random>

using namespace mlir;
using namespace mlir::autopar;

namespace {
struct Fixture {
  MLIRContext ctx;
  /// Expected errors of the cases are swallowed; a failing CHECK still shows.
  ScopedDiagnosticHandler quiet{&ctx, [](Diagnostic &) { return success(); }};
  OwningOpRef<ModuleOp> module;
  Fixture(StringRef source) {
    ctx.loadDialect<AutoparDialect, func::FuncDialect, shard::ShardDialect>();
    module = parseSourceString<ModuleOp>(source, &ctx);
    REQUIRE(module);
  }
  template <typename OpTy> OpTy first() {
    OpTy found;
    module->walk([&](OpTy op) {
      if (!found)
        found = op;
    });
    REQUIRE(found);
    return found;
  }
  ShardingAttr s(ArrayRef<SmallVector<int64_t>> dims,
                 ArrayRef<int64_t> partial = {}) {
    return ShardingAttr::get(&ctx, dims, partial);
  }
};
} // namespace

TEST_CASE("matmul rule: k split gives a pending sum", "[rule]") {
  Fixture f(R"mlir(
    func.func @f(%a: tensor<8x4xf32>, %b: tensor<4x16xf32>) -> tensor<8x16xf32> {
      %y = autopar.matmul %a, %b : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
      return %y : tensor<8x16xf32>
    })mlir");
  auto op = f.first<MatMulOp>();
  FailureOr<ShardingRule> rule = ShardingRule::get(op);
  REQUIRE(succeeded(rule));
  REQUIRE(rule->getNumLoops() == 3);
  CHECK(rule->isReduction(2));
  // Operand A split along K.
  LoopAxes loops = rule->getLoopsFromOperands({f.s({{}, {0}}), nullptr});
  CHECK(loops[2] == SmallVector<int64_t>{0});
  CHECK(rule->getResultSharding(&f.ctx, 0, loops) == f.s({{}, {}}, {0}));
  CHECK(rule->getOperandSharding(&f.ctx, 1, loops) == f.s({{0}, {}}));
  // The result sharding alone recovers rows over axis 1 and columns none.
  FailureOr<LoopAxes> fromResult = rule->getLoopsFromResults(
      op, {f.s({{1}, {}})}, {f.s({{1}, {}}), f.s({{}, {}})});
  REQUIRE(succeeded(fromResult));
  CHECK((*fromResult)[0] == SmallVector<int64_t>{1});
  CHECK((*fromResult)[1].empty());
  CHECK((*fromResult)[2].empty());
}

TEST_CASE("gemm rule: transposed B and an additive bias", "[rule]") {
  Fixture f(R"mlir(
    func.func @f(%a: tensor<8x4xf32>, %b: tensor<16x4xf32>, %c: tensor<16xf32>) -> tensor<8x16xf32> {
      %y = autopar.gemm %a, %b, %c {trans_b = true} : (tensor<8x4xf32>, tensor<16x4xf32>, tensor<16xf32>) -> tensor<8x16xf32>
      return %y : tensor<8x16xf32>
    })mlir");
  auto op = f.first<GemmOp>();
  FailureOr<ShardingRule> rule = ShardingRule::get(op);
  REQUIRE(succeeded(rule));
  LoopAxes loops(3);
  loops[1] = {0}; // N over axis 0: column split.
  CHECK(rule->getOperandSharding(&f.ctx, 1, loops) == f.s({{0}, {}}));
  CHECK(rule->getOperandSharding(&f.ctx, 2, loops) == f.s({{0}}));
  LoopAxes rows(3);
  rows[2] = {0}; // K over axis 0: row split; C must join the pending sum.
  CHECK(rule->getOperandSharding(&f.ctx, 1, rows) == f.s({{}, {0}}));
  CHECK(rule->getOperandSharding(&f.ctx, 2, rows) == f.s({{}}, {0}));
  CHECK(rule->getResultSharding(&f.ctx, 0, rows) == f.s({{}, {}}, {0}));
}

TEST_CASE("add rule: broadcast dimensions are never split", "[rule]") {
  Fixture f(R"mlir(
    func.func @f(%a: tensor<8x16xf32>, %b: tensor<1x16xf32>) -> tensor<8x16xf32> {
      %y = autopar.add %a, %b : (tensor<8x16xf32>, tensor<1x16xf32>) -> tensor<8x16xf32>
      return %y : tensor<8x16xf32>
    })mlir");
  FailureOr<ShardingRule> rule = ShardingRule::get(f.first<AddOp>());
  REQUIRE(succeeded(rule));
  LoopAxes loops = rule->getLoopsFromOperands({f.s({{0}, {1}}), nullptr});
  CHECK(rule->getOperandSharding(&f.ctx, 1, loops) == f.s({{}, {1}}));
}

TEST_CASE("reshard plans use single-step collectives", "[reshard]") {
  Fixture f("module {}");
  using K = ReshardStep::Kind;
  auto kinds = [](ArrayRef<ReshardStep> steps) {
    SmallVector<K> k;
    for (const ReshardStep &s : steps)
      k.push_back(s.kind);
    return k;
  };
  // Pending sum to replicated.
  CHECK(kinds(planReshard(f.s({{}, {}}, {0}), f.s({{}, {}}))) ==
        SmallVector<K>{K::AllReduce});
  // Pending sum to split: reduce-scatter.
  SmallVector<ReshardStep> rs = planReshard(f.s({{}, {}}, {0}), f.s({{0}, {}}));
  REQUIRE(kinds(rs) == SmallVector<K>{K::ReduceScatter});
  CHECK(rs[0].dim == 0);
  // Moving the split dimension: all-to-all.
  SmallVector<ReshardStep> a2a = planReshard(f.s({{0}, {}}), f.s({{}, {0}}));
  REQUIRE(kinds(a2a) == SmallVector<K>{K::AllToAll});
  CHECK(a2a[0].dim == 0);
  CHECK(a2a[0].otherDim == 1);
  // Only a suffix of a dimension's axes can be gathered.
  SmallVector<ReshardStep> g = planReshard(f.s({{0, 1}, {}}), f.s({{1}, {}}));
  REQUIRE(kinds(g) == SmallVector<K>{K::AllGather, K::AllSlice});
  CHECK(g[0].axes == SmallVector<int64_t>{0, 1});
  CHECK(g[1].axes == SmallVector<int64_t>{1});
  // Replicated to pending sum is local.
  CHECK(kinds(planReshard(f.s({{}}), f.s({{}}, {1}))) ==
        SmallVector<K>{K::ToPartial});
  // Nothing to do.
  CHECK(planReshard(f.s({{0}}), f.s({{0}})).empty());
}

TEST_CASE("reshard bytes follow ring algorithms", "[reshard]") {
  Fixture f("module {}");
  // 8x4 f32 = 128 bytes replicated; all-reduce over 4 devices moves
  // 2 * 3/4 * 128 = 192 bytes per device.
  ReshardStep ar = planReshard(f.s({{}, {}}, {0}), f.s({{}, {}}))[0];
  CHECK(getReshardStepBytes(ar, {8, 4}, 4, {4}) == 192);
  // All-gather to 128 bytes over 4 devices: 3/4 * 128 = 96.
  ReshardStep ag = planReshard(f.s({{0}, {}}), f.s({{}, {}}))[0];
  CHECK(getReshardStepBytes(ag, {8, 4}, 4, {4}) == 96);
  ReshardStep slice = planReshard(f.s({{}, {}}), f.s({{0}, {}}))[0];
  CHECK(getReshardStepBytes(slice, {8, 4}, 4, {4}) == 0);
}

TEST_CASE("softmax keeps its axis whole", "[rule]") {
  Fixture f(R"mlir(
    func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
      %y = autopar.softmax %x {axis = 1} : (tensor<4x8xf32>) -> tensor<4x8xf32>
      return %y : tensor<4x8xf32>
    })mlir");
  auto op = f.first<SoftmaxOp>();
  FailureOr<ShardingRule> rule = ShardingRule::get(op);
  REQUIRE(succeeded(rule));
  CHECK(rule->isSplittable(0));
  CHECK_FALSE(rule->isSplittable(1));
  // An operand split along the axis does not split the op: it is gathered.
  LoopAxes loops = rule->getLoopsFromOperands({f.s({{0}, {1}})});
  CHECK(loops[0] == SmallVector<int64_t>{0});
  CHECK(loops[1].empty());
  CHECK(failed(rule->getLoopsFromResults(op, {f.s({{}, {0}})}, {f.s({{}, {}})})));
}

TEST_CASE("reshape shares the major dimension of each group", "[rule]") {
  Fixture f(R"mlir(
    func.func @f(%x: tensor<2x8x12xf32>) -> tensor<2x8x3x4xf32> {
      %y = autopar.reshape %x : (tensor<2x8x12xf32>) -> tensor<2x8x3x4xf32>
      return %y : tensor<2x8x3x4xf32>
    })mlir");
  FailureOr<ShardingRule> rule = ShardingRule::get(f.first<ReshapeOp>());
  REQUIRE(succeeded(rule));
  // [2][8][12] -> [2][8][3 4]: heads (3) split like the 12 they come from.
  LoopAxes loops = rule->getLoopsFromOperands({f.s({{}, {}, {0}})});
  CHECK(rule->getResultSharding(&f.ctx, 0, loops) ==
        f.s({{}, {}, {0}, {}}));
  // The minor output dimension (4) never splits.
  CHECK_FALSE(rule->isSplittable(3));
}

TEST_CASE("reshape merging dimensions splits the merged major", "[rule]") {
  Fixture f(R"mlir(
    func.func @f(%x: tensor<4x6x5xf32>) -> tensor<24x5xf32> {
      %y = autopar.reshape %x : (tensor<4x6x5xf32>) -> tensor<24x5xf32>
      return %y : tensor<24x5xf32>
    })mlir");
  FailureOr<ShardingRule> rule = ShardingRule::get(f.first<ReshapeOp>());
  REQUIRE(succeeded(rule));
  LoopAxes loops = rule->getLoopsFromOperands({f.s({{0}, {}, {1}})});
  CHECK(rule->getResultSharding(&f.ctx, 0, loops) == f.s({{0}, {1}}));
  // A split of the minor merged dimension cannot follow through.
  LoopAxes minor = rule->getLoopsFromOperands({f.s({{}, {0}, {}})});
  CHECK(rule->getResultSharding(&f.ctx, 0, minor) == f.s({{}, {}}));
}

TEST_CASE("conv splits batch, output channels and input channels", "[rule]") {
  Fixture f(R"mlir(
    func.func @f(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>, %b: tensor<6xf32>) -> tensor<2x6x6x6xf32> {
      %y = autopar.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>, tensor<6xf32>) -> tensor<2x6x6x6xf32>
      return %y : tensor<2x6x6x6xf32>
    })mlir");
  FailureOr<ShardingRule> rule = ShardingRule::get(f.first<ConvOp>());
  REQUIRE(succeeded(rule));
  // Input channels split: pending sum; the bias joins it.
  LoopAxes loops = rule->getLoopsFromOperands({f.s({{}, {0}, {}, {}}), nullptr, nullptr});
  CHECK(rule->getResultSharding(&f.ctx, 0, loops) == f.s({{}, {}, {}, {}}, {0}));
  CHECK(rule->getOperandSharding(&f.ctx, 1, loops) == f.s({{}, {0}, {}, {}}));
  CHECK(rule->getOperandSharding(&f.ctx, 2, loops) == f.s({{}}, {0}));
  // Spatial splits never follow.
  LoopAxes spatial = rule->getLoopsFromOperands({f.s({{}, {}, {0}, {}}), nullptr, nullptr});
  CHECK(rule->getResultSharding(&f.ctx, 0, spatial) == f.s({{}, {}, {}, {}}));
}

TEST_CASE("reductions: sum goes pending, mean stays whole", "[rule]") {
  Fixture f(R"mlir(
    func.func @f(%x: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<4x1xf32>) {
      %s = autopar.reduce_sum %x {axes = array<i64: 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<4xf32>
      %m = autopar.reduce_mean %x {axes = array<i64: 1>} : (tensor<4x8xf32>) -> tensor<4x1xf32>
      return %s, %m : tensor<4xf32>, tensor<4x1xf32>
    })mlir");
  FailureOr<ShardingRule> sum = ShardingRule::get(f.first<ReduceSumOp>());
  REQUIRE(succeeded(sum));
  LoopAxes loops = sum->getLoopsFromOperands({f.s({{1}, {0}})});
  CHECK(sum->getResultSharding(&f.ctx, 0, loops) == f.s({{1}}, {0}));
  FailureOr<ShardingRule> mean = ShardingRule::get(f.first<ReduceMeanOp>());
  REQUIRE(succeeded(mean));
  LoopAxes meanLoops = mean->getLoopsFromOperands({f.s({{1}, {0}})});
  CHECK(mean->getResultSharding(&f.ctx, 0, meanLoops) == f.s({{1}, {}}));
}

TEST_CASE("einsum, transpose and gather rules", "[rule]") {
  Fixture f(R"mlir(
    func.func @f(%q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>, %e: tensor<10x8xf32>, %i: tensor<2x3xi64>) -> (tensor<2x4x6xf32>, tensor<8x2x4xf32>, tensor<2x3x8xf32>) {
      %s = autopar.einsum %q, %k {equation = "bqd,bkd->bqk"} : (tensor<2x4x8xf32>, tensor<2x6x8xf32>) -> tensor<2x4x6xf32>
      %t = autopar.transpose %q {perm = array<i64: 2, 0, 1>} : (tensor<2x4x8xf32>) -> tensor<8x2x4xf32>
      %g = autopar.gather %e, %i {axis = 0} : (tensor<10x8xf32>, tensor<2x3xi64>) -> tensor<2x3x8xf32>
      return %s, %t, %g : tensor<2x4x6xf32>, tensor<8x2x4xf32>, tensor<2x3x8xf32>
    })mlir");
  FailureOr<ShardingRule> einsum = ShardingRule::get(f.first<EinsumOp>());
  REQUIRE(succeeded(einsum));
  LoopAxes loops = einsum->getLoopsFromOperands({f.s({{0}, {}, {1}}), nullptr});
  CHECK(einsum->getResultSharding(&f.ctx, 0, loops) == f.s({{0}, {}, {}}, {1}));
  CHECK(einsum->getOperandSharding(&f.ctx, 1, loops) == f.s({{0}, {}, {1}}));

  FailureOr<ShardingRule> transpose = ShardingRule::get(f.first<TransposeOp>());
  REQUIRE(succeeded(transpose));
  LoopAxes tl = transpose->getLoopsFromOperands({f.s({{0}, {}, {1}})});
  CHECK(transpose->getResultSharding(&f.ctx, 0, tl) == f.s({{1}, {0}, {}}));

  FailureOr<ShardingRule> gather = ShardingRule::get(f.first<GatherOp>());
  REQUIRE(succeeded(gather));
  // The gathered dimension stays whole; indices and columns split.
  LoopAxes gl = gather->getLoopsFromOperands({f.s({{0}, {1}}), f.s({{0}, {}})});
  CHECK(gather->getResultSharding(&f.ctx, 0, gl) == f.s({{0}, {}, {1}}));
  CHECK(gather->getOperandSharding(&f.ctx, 0, gl) == f.s({{}, {1}}));
}

namespace {
int64_t totalBytes(ArrayRef<ReshardStep> steps, ArrayRef<int64_t> shape,
                   ArrayRef<int64_t> grid) {
  int64_t bytes = 0;
  for (const ReshardStep &step : steps)
    bytes += getReshardStepBytes(step, shape, 4, grid);
  return bytes;
}
} // namespace

TEST_CASE("the reshard search picks the cheapest steps", "[reshard]") {
  Fixture f("module {}");
  using K = ReshardStep::Kind;
  // Pending sum to rows: one reduce-scatter.
  std::optional<SmallVector<ReshardStep>> rs = searchCheapestReshard(
      f.s({{}, {}}, {0}), f.s({{0}, {}}), {8, 4}, 4, {4});
  REQUIRE(rs);
  REQUIRE(rs->size() == 1);
  CHECK((*rs)[0].kind == K::ReduceScatter);
  // Two gathers of one dimension merge into one two-axis gather.
  std::optional<SmallVector<ReshardStep>> g = searchCheapestReshard(
      f.s({{0, 1}, {}}), f.s({{}, {}}), {8, 4}, 4, {2, 2});
  REQUIRE(g);
  REQUIRE(g->size() == 1);
  CHECK((*g)[0].kind == K::AllGather);
  CHECK((*g)[0].axes == SmallVector<int64_t>{0, 1});
  // A split that does not divide has no answer.
  CHECK_FALSE(searchCheapestReshard(f.s({{}, {}}), f.s({{0}, {}}), {6, 4}, 4,
                                    {4}));
}

TEST_CASE("the reshard search never costs more than the fixed order",
          "[reshard]") {
  Fixture f("module {}");
  SmallVector<int64_t> grid = {2, 2, 2};
  SmallVector<int64_t> shape = {8, 8, 4};
  // Every sharding of a rank-3 value where each axis is unused, pending, or
  // on one dimension (order within a dimension by axis number).
  SmallVector<ShardingAttr> all;
  for (int code = 0; code < 5 * 5 * 5; ++code) {
    SmallVector<SmallVector<int64_t>> dims(3);
    SmallVector<int64_t> partial;
    int c = code;
    for (int64_t axis = 0; axis < 3; ++axis, c /= 5) {
      int where = c % 5;
      if (where == 1)
        partial.push_back(axis);
      else if (where >= 2)
        dims[where - 2].push_back(axis);
    }
    // Dimension 2 (size 4) holds at most two axes of size 2.
    if (dims[2].size() < 3)
      all.push_back(f.s(dims, partial));
  }
  std::mt19937 rng(7);
  int checked = 0;
  for (int i = 0; i < 400; ++i) {
    ShardingAttr from = all[rng() % all.size()], to = all[rng() % all.size()];
    std::optional<SmallVector<ReshardStep>> best =
        searchCheapestReshard(from, to, shape, 4, grid);
    REQUIRE(best);
    // The steps chain from `from` to `to`.
    ShardingAttr at = from;
    for (const ReshardStep &step : *best) {
      CHECK(step.before == at);
      at = step.after;
    }
    CHECK(at == to);
    CHECK(totalBytes(*best, shape, grid) <=
          totalBytes(planReshard(from, to), shape, grid));
    ++checked;
  }
  CHECK(checked == 400);
}

TEST_CASE("a split moves between grid axes point to point", "[reshard]") {
  Fixture f("module {}");
  using K = ReshardStep::Kind;
  // Rows over axis 0 -> rows over axis 1 on a 2x2 grid: one exchange instead
  // of a gather and a slice.
  std::optional<SmallVector<ReshardStep>> swap = searchCheapestReshard(
      f.s({{0}, {}}), f.s({{1}, {}}), {8, 4}, 4, {2, 2});
  REQUIRE(swap);
  REQUIRE(swap->size() == 1);
  CHECK((*swap)[0].kind == K::SwapAxes);
  CHECK((*swap)[0].axes == SmallVector<int64_t>{0, 1});
  // Half of the 64 local bytes leave each device on average.
  CHECK(getReshardStepBytes((*swap)[0], {8, 4}, 4, {2, 2}) == 32);
  CHECK(totalBytes(planReshard(f.s({{0}, {}}), f.s({{1}, {}})), {8, 4},
                   {2, 2}) == 64);
  // Pending sums move the same way.
  std::optional<SmallVector<ReshardStep>> pending = searchCheapestReshard(
      f.s({{}, {}}, {0}), f.s({{}, {}}, {1}), {8, 4}, 4, {2, 2});
  REQUIRE(pending);
  REQUIRE(pending->size() == 1);
  CHECK((*pending)[0].kind == K::SwapAxes);
  // Axes of different sizes never swap.
  std::optional<SmallVector<ReshardStep>> sizes = searchCheapestReshard(
      f.s({{0}, {}}), f.s({{1}, {}}), {8, 4}, 4, {2, 4});
  REQUIRE(sizes);
  for (const ReshardStep &step : *sizes)
    CHECK(step.kind != K::SwapAxes);
}
