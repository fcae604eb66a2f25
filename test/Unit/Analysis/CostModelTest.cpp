//===- CostModelTest.cpp - the cost model's formulas ----------------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "autopar/Analysis/CostModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <catch2/catch.hpp>

using namespace mlir;
using namespace mlir::autopar;

namespace {
struct Fixture {
  MLIRContext ctx;
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

ClusterSpec cluster(double flops, double memBw,
                    std::vector<std::pair<double, double>> axes) {
  ClusterSpec c;
  c.flops = flops;
  c.memoryBandwidth = memBw;
  c.memoryBytes = 1 << 30;
  for (auto [bw, lat] : axes)
    c.axes.push_back({bw, lat});
  return c;
}

const char *kMatmul = R"mlir(
  func.func @f(%a: tensor<8x4xf32>, %b: tensor<4x16xf32>) -> tensor<8x16xf32> {
    %y = autopar.matmul %a, %b : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
    return %y : tensor<8x16xf32>
  })mlir";
} // namespace

TEST_CASE("matmul work: 2mnk flops, local bytes, split by the loops",
          "[cost]") {
  Fixture f(kMatmul);
  auto op = f.first<MatMulOp>();
  FailureOr<ShardingRule> rule = ShardingRule::get(op);
  REQUIRE(succeeded(rule));
  SmallVector<int64_t> extents = getLoopExtents(op, *rule);
  CHECK(extents == SmallVector<int64_t>{8, 16, 4});
  // Whole op on one device.
  OpWork whole = getOpWork(op, *rule, LoopAxes(3), {4});
  CHECK(whole.flops == 2.0 * 8 * 16 * 4);
  CHECK(whole.bytes == 4.0 * (8 * 4 + 4 * 16 + 8 * 16));
  // m over axis 0 (4 devices): a quarter of the flops, A and Y split.
  LoopAxes rows(3);
  rows[0] = {0};
  OpWork split = getOpWork(op, *rule, rows, {4});
  CHECK(split.flops == whole.flops / 4);
  CHECK(split.bytes == 4.0 * (2 * 4 + 4 * 16 + 2 * 16));
  // k over both axes of a 2x2 grid.
  LoopAxes k(3);
  k[2] = {0, 1};
  CHECK(getOpWork(op, *rule, k, {2, 2}).flops == whole.flops / 4);
}

TEST_CASE("GEMM shape: the smallest local M, N, K sets the efficiency",
          "[cost]") {
  Fixture f(kMatmul);
  auto op = f.first<MatMulOp>();
  FailureOr<ShardingRule> rule = ShardingRule::get(op);
  REQUIRE(succeeded(rule));
  // M 8, N 16, K 4: K is the smallest.
  CHECK(getOpWork(op, *rule, LoopAxes(3), {4}).gemmMinDim == 4);
  // N split 4 ways leaves 4 columns; M split 4 ways leaves 2 rows.
  LoopAxes n(3), m(3);
  n[1] = {0};
  m[0] = {0};
  CHECK(getOpWork(op, *rule, n, {4}).gemmMinDim == 4);
  CHECK(getOpWork(op, *rule, m, {4}).gemmMinDim == 2);
  // max * d / (d + half_size) of the matmul rate, for the matmul class only.
  ClusterSpec c = cluster(1e9, 1e12, {{1e9, 0}});
  c.gemmEfficiencyMax = 0.8;
  c.gemmHalfSize = 4;
  OpWork w{/*flops=*/1e9, /*bytes=*/1, /*gemmMinDim=*/4};
  CHECK(getComputeTime(w, OpClass::MatMul, c) == Approx(1.0 / (0.8 * 0.5)));
  w.gemmMinDim = 12;
  CHECK(getComputeTime(w, OpClass::MatMul, c) == Approx(1.0 / (0.8 * 0.75)));
  CHECK(getComputeTime(w, OpClass::Elementwise, c) == Approx(1.0));
  // Not a GEMM (no shape): the class rate.
  w.gemmMinDim = 0;
  CHECK(getComputeTime(w, OpClass::MatMul, c) == Approx(1.0));
}

TEST_CASE("roofline: the slower of compute and memory, per op class",
          "[cost]") {
  ClusterSpec c = cluster(1e9, 1e9, {{1e9, 0}});
  OpWork w{/*flops=*/2e9, /*bytes=*/1e9};
  CHECK(getComputeTime(w, OpClass::MatMul, c) == Approx(2.0));
  w.bytes = 4e9;
  CHECK(getComputeTime(w, OpClass::MatMul, c) == Approx(4.0));
  // A calibrated class rate replaces the device rate.
  c.classFlops[static_cast<unsigned>(OpClass::Elementwise)] = 1e8;
  w = OpWork{1e8, 1};
  CHECK(getComputeTime(w, OpClass::Elementwise, c) == Approx(1.0));
  CHECK(getComputeTime(w, OpClass::MatMul, c) == Approx(0.1));
}

TEST_CASE("alpha-beta collectives with ring volumes", "[cost]") {
  Fixture f(kMatmul);
  // Bandwidth 1e6 B/s and latency 1 ms on axis 0, 1e9 and 1 us on axis 1.
  ClusterSpec c = cluster(1e9, 1e9, {{1e6, 1e-3}, {1e9, 1e-6}});
  SmallVector<int64_t> shape{8, 16};
  SmallVector<int64_t> grid{4, 2};
  auto type = RankedTensorType::get(shape, Float32Type::get(&f.ctx));
  int64_t bytes = 8 * 16 * 4; // replicated local bytes

  // All-reduce over axis 0 (n = 4): 2(n-1)/n of the bytes, 2(n-1) messages.
  ReshardCost ar =
      getReshardCost(type, f.s({{}, {}}, {0}), f.s({{}, {}}), grid, c);
  CHECK(ar.bytes == 2 * 3 * bytes / 4);
  CHECK(ar.time == Approx(6 * 1e-3 + 2.0 * 3 * bytes / 4 / 1e6));
  CHECK(ar.numSteps == 1);

  // All-gather of rows split over axis 1 (n = 2): (n-1)/n of the result.
  ReshardCost ag = getReshardCost(type, f.s({{1}, {}}), f.s({{}, {}}), grid, c);
  CHECK(ag.bytes == bytes / 2);
  CHECK(ag.time == Approx(1e-6 + bytes / 2 / 1e9));

  // Splitting further is local: free.
  ReshardCost slice =
      getReshardCost(type, f.s({{}, {}}), f.s({{0}, {}}), grid, c);
  CHECK(slice.time == 0);
  CHECK(slice.bytes == 0);

  // A group over both axes runs at the slower link and larger latency.
  AxisLink link = getGroupLink({0, 1}, c);
  CHECK(link.bandwidth == 1e6);
  CHECK(link.latency == 1e-3);

  // No change, no cost.
  CHECK(getReshardCost(type, f.s({{0}, {}}), f.s({{0}, {}}), grid, c).time ==
        0);
}

TEST_CASE("a collective's scratch copy: blocks strided in row-major order",
          "[cost]") {
  Fixture f(kMatmul);
  ClusterSpec c = cluster(1e9, 1e9, {{1e9, 1e-6}, {1e9, 1e-6}});
  SmallVector<int64_t> grid{4, 2};
  auto type = RankedTensorType::get({8, 16}, Float32Type::get(&f.ctx));
  int64_t whole = 8 * 16 * 4;
  ShardingAttr replicated = f.s({{}, {}});
  // Gathering rows: each member's block is contiguous, MPI writes the
  // result in place.
  CHECK(
      getReshardCost(type, f.s({{0}, {}}), replicated, grid, c).scratchBytes ==
      0);
  // Gathering columns: the blocks go through a copy of the gathered buffer
  // (the runtime's all-gather transposes them out of it).
  CHECK(
      getReshardCost(type, f.s({{}, {0}}), replicated, grid, c).scratchBytes ==
      whole);
  // Only the columns over axis 1 are gathered: the copy is of the result,
  // still split over axis 0 along the rows.
  CHECK(getReshardCost(type, f.s({{0}, {1}}), f.s({{0}, {}}), grid, c)
            .scratchBytes == whole / 4);
  // A pending sum scattered along the columns: a copy of the input.
  CHECK(getReshardCost(type, f.s({{}, {}}, {0}), f.s({{}, {0}}), grid, c)
            .scratchBytes == whole);
  CHECK(getReshardCost(type, f.s({{}, {}}, {0}), f.s({{0}, {}}), grid, c)
            .scratchBytes == 0);
  // Slices and all-reduces copy nothing.
  CHECK(
      getReshardCost(type, replicated, f.s({{}, {0}}), grid, c).scratchBytes ==
      0);
  CHECK(getReshardCost(type, f.s({{}, {}}, {0}), replicated, grid, c)
            .scratchBytes == 0);
}

TEST_CASE("a reshard cost cache prices as getReshardCost, for its grid and "
          "links only",
          "[cost]") {
  Fixture f(kMatmul);
  ClusterSpec c = cluster(1e9, 1e9, {{1e6, 1e-3}, {1e9, 1e-6}});
  SmallVector<int64_t> grid{4, 2};
  auto type = RankedTensorType::get({8, 16}, Float32Type::get(&f.ctx));
  ReshardCostCache cache(grid, c);
  ShardingAttr pending = f.s({{}, {}}, {0}), rows = f.s({{1}, {}}),
               whole = f.s({{}, {}});
  for (int repeat = 0; repeat < 2; ++repeat) {
    ReshardCost direct = getReshardCost(type, pending, whole, grid, c);
    const ReshardCost &cached = cache.get(type, pending, whole);
    CHECK(cached.time == direct.time);
    CHECK(cached.bytes == direct.bytes);
    CHECK(cached.numSteps == direct.numSteps);
    CHECK(cache.get(type, rows, whole).time ==
          getReshardCost(type, rows, whole, grid, c).time);
  }
  // Memory and FLOP rates do not price reshards; the grid and links do.
  ClusterSpec moreMemory = c;
  moreMemory.memoryBytes *= 2;
  moreMemory.flops *= 2;
  CHECK(cache.matches(grid, moreMemory));
  CHECK_FALSE(cache.matches(SmallVector<int64_t>{2, 4}, c));
  ClusterSpec slower = c;
  slower.axes[1].bandwidth /= 2;
  CHECK_FALSE(cache.matches(grid, slower));
  ClusterSpec oneAxis = cluster(1e9, 1e9, {{1e6, 1e-3}});
  CHECK_FALSE(cache.matches(grid, oneAxis));
}

TEST_CASE("local bytes follow the split", "[cost]") {
  MLIRContext ctx;
  ctx.loadDialect<AutoparDialect>();
  auto type = RankedTensorType::get({8, 16}, Float32Type::get(&ctx));
  SmallVector<SmallVector<int64_t>> dims{{0}, {1}};
  ShardingAttr s = ShardingAttr::get(&ctx, dims, ArrayRef<int64_t>());
  CHECK(getLocalBytes(type, s, {2, 4}) == 4 * 4 * 4);
  CHECK(getElementBytes(IntegerType::get(&ctx, 1)) == 1);
  CHECK(getElementBytes(IntegerType::get(&ctx, 64)) == 8);
}

TEST_CASE("an op whose bytes fit in the cache streams at its bandwidth",
          "[cost]") {
  ClusterSpec c = cluster(1e12, 1e9, {{1e9, 0}});
  c.classBandwidth[static_cast<unsigned>(OpClass::DataMovement)] = 5e8;
  // Without a cache: the memory bandwidth at any size.
  CHECK(getComputeTime(OpWork{0, 1e3}, OpClass::Elementwise, c) ==
        Approx(1e-6));
  c.cacheBytes = 1000;
  c.cacheBandwidth = 1e10;
  CHECK(getComputeTime(OpWork{0, 1e3}, OpClass::Elementwise, c) ==
        Approx(1e-7));
  // A class with its own bandwidth keeps its fraction of the memory's.
  CHECK(getComputeTime(OpWork{0, 1e3}, OpClass::DataMovement, c) ==
        Approx(2e-7));
  // One byte more than the cache: from memory.
  CHECK(getComputeTime(OpWork{0, 1001}, OpClass::Elementwise, c) ==
        Approx(1.001e-6));
  // A cache slower than the memory changes nothing.
  c.cacheBandwidth = 1e8;
  CHECK(getComputeTime(OpWork{0, 1e3}, OpClass::Elementwise, c) ==
        Approx(1e-6));
}

TEST_CASE("a class's fixed seconds per op add to every op of the class",
          "[cost]") {
  ClusterSpec c = cluster(1e9, 1e9, {{1e9, 0}});
  c.opOverhead = 1e-6;
  c.classFlops[static_cast<unsigned>(OpClass::Conv)] = 1e9;
  c.classOpSeconds[static_cast<unsigned>(OpClass::MatMul)] = 2e-5;
  c.classOpSeconds[static_cast<unsigned>(OpClass::Conv)] = 3e-5;
  OpWork w{1e6, 0};
  CHECK(getComputeTime(w, OpClass::MatMul, c) == Approx(1e-3 + 1e-6 + 2e-5));
  CHECK(getComputeTime(w, OpClass::Conv, c) == Approx(1e-3 + 1e-6 + 3e-5));
  CHECK(getComputeTime(w, OpClass::Elementwise, c) == Approx(1e-3 + 1e-6));
  // A depthwise convolution without a rate of its own is priced as a
  // convolution, fixed seconds included; with its own rate, it has its own
  // (none here).
  CHECK(getComputeTime(w, OpClass::DepthwiseConv, c) ==
        Approx(1e-3 + 1e-6 + 3e-5));
  c.classFlops[static_cast<unsigned>(OpClass::DepthwiseConv)] = 1e9;
  CHECK(getComputeTime(w, OpClass::DepthwiseConv, c) == Approx(1e-3 + 1e-6));
  // An op shorter than the fixed part pays at most its own time again.
  CHECK(getComputeTime(OpWork{1e3, 0}, OpClass::MatMul, c) ==
        Approx(1e-6 + 1e-6 + 1e-6));
  // Views are still free.
  CHECK(getComputeTime(OpWork{}, OpClass::MatMul, c) == 0);
}

TEST_CASE("fitOpTime: the fixed seconds and the rate of a class", "[cost]") {
  // Exact samples of 5 us + FLOPs / 200 GFLOP/s are fitted exactly.
  SmallVector<OpTimeSample> exact;
  for (double flops : {3e7, 2.7e8, 5.4e8})
    exact.push_back({flops, 5e-6 + flops / 2e11});
  std::optional<OpTimeFit> fit = fitOpTime(exact);
  REQUIRE(fit);
  CHECK(fit->rate == Approx(2e11));
  CHECK(fit->fixedSeconds == Approx(5e-6));
  // A negative intercept is clamped to 0 and the rate refitted: samples
  // faster than proportional at small sizes.
  fit = fitOpTime({{1e6, 1e-6}, {1e7, 2e-5}});
  REQUIRE(fit);
  CHECK(fit->fixedSeconds == 0);
  CHECK(fit->rate > 0);
  // Sizes within 4x cannot separate the two terms; non-positive samples and
  // a single sample are no fit.
  CHECK_FALSE(fitOpTime({{1e6, 1e-5}, {3e6, 2e-5}}));
  CHECK(fitOpTime({{1e6, 1e-5}, {3e6, 2e-5}}, /*minSpread=*/2));
  CHECK_FALSE(fitOpTime({{1e6, 0}, {1e8, 1e-3}}));
  CHECK_FALSE(fitOpTime({{1e6, 1e-5}}));
}

TEST_CASE("a gather moves the rows it selects, not its table", "[cost]") {
  Fixture f(R"mlir(
    func.func @f(%e: tensor<50000x64xf32>, %i: tensor<8xi64>,
                 %t: tensor<4x6xf32>, %j: tensor<4x2xi64>)
        -> (tensor<8x64xf32>, tensor<4x2xf32>) {
      %g = autopar.gather %e, %i {axis = 0} : (tensor<50000x64xf32>, tensor<8xi64>) -> tensor<8x64xf32>
      %h = autopar.gather_elements %t, %j {axis = 1} : (tensor<4x6xf32>, tensor<4x2xi64>) -> tensor<4x2xf32>
      return %g, %h : tensor<8x64xf32>, tensor<4x2xf32>
    })mlir");
  auto gather = f.first<GatherOp>();
  FailureOr<ShardingRule> rule = ShardingRule::get(gather);
  REQUIRE(succeeded(rule));
  // 8 rows of 64 floats read, 8 indices, 8 rows written: the 12.8 MB table
  // is not read.
  OpWork work = getOpWork(gather, *rule, LoopAxes(rule->getNumLoops()), {1});
  CHECK(work.bytes == 8 * 64 * 4 + 8 * 8 + 8 * 64 * 4);
  // Split over 2 devices along the rows gathered, each reads its half.
  LoopAxes split(rule->getNumLoops());
  split[0] = {0};
  work = getOpWork(gather, *rule, split, {2});
  CHECK(work.bytes == 4 * 64 * 4 + 4 * 8 + 4 * 64 * 4);

  auto elements = f.first<GatherElementsOp>();
  rule = ShardingRule::get(elements);
  REQUIRE(succeeded(rule));
  work = getOpWork(elements, *rule, LoopAxes(rule->getNumLoops()), {1});
  CHECK(work.bytes == 4 * 2 * 4 + 4 * 2 * 8 + 4 * 2 * 4);
}

TEST_CASE("a transpose keeping the innermost dimension streams rows",
          "[cost]") {
  Fixture f(R"mlir(
    func.func @f(%x: tensor<128x12x64xf32>, %y: tensor<64x12x8xf32>)
        -> (tensor<12x128x64xf32>, tensor<12x64x128xf32>, tensor<12x64x8xf32>) {
      %heads = autopar.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<128x12x64xf32>) -> tensor<12x128x64xf32>
      %keys = autopar.transpose %x {perm = array<i64: 1, 2, 0>} : (tensor<128x12x64xf32>) -> tensor<12x64x128xf32>
      %short = autopar.transpose %y {perm = array<i64: 1, 0, 2>} : (tensor<64x12x8xf32>) -> tensor<12x64x8xf32>
      return %heads, %keys, %short : tensor<12x128x64xf32>, tensor<12x64x128xf32>, tensor<12x64x8xf32>
    })mlir");
  SmallVector<TransposeOp> ops;
  f.module->walk([&](TransposeOp op) { ops.push_back(op); });
  REQUIRE(ops.size() == 3);
  auto work = [](TransposeOp op, int64_t splitLoop, int64_t devices) {
    FailureOr<ShardingRule> rule = ShardingRule::get(op);
    REQUIRE(succeeded(rule));
    LoopAxes loops(rule->getNumLoops());
    if (splitLoop >= 0)
      loops[splitLoop] = {0};
    return getOpWork(op, *rule, loops, {devices});
  };
  // Rows of 64 floats move whole; the keys' transpose moves single floats;
  // rows of 8 floats (32 bytes) are shorter than a cache line.
  CHECK(work(ops[0], -1, 1).streamsRows);
  CHECK_FALSE(work(ops[1], -1, 1).streamsRows);
  CHECK_FALSE(work(ops[2], -1, 1).streamsRows);
  // Split 8 ways along the rows, each device's runs are 32 bytes.
  CHECK(work(ops[0], 0, 8).streamsRows);
  CHECK_FALSE(work(ops[0], 2, 8).streamsRows);

  // Rows stream at the elementwise (memory) bandwidth, single elements at
  // data movement's.
  ClusterSpec c = cluster(1e9, 1e9, {{1e9, 0}});
  c.classBandwidth[static_cast<unsigned>(OpClass::DataMovement)] = 1e8;
  OpWork rows{0, 1e8};
  rows.streamsRows = true;
  OpWork elements{0, 1e8};
  CHECK(getComputeTime(rows, OpClass::DataMovement, c) == Approx(0.1));
  CHECK(getComputeTime(elements, OpClass::DataMovement, c) == Approx(1.0));
}

TEST_CASE("per-op overhead and per-class bandwidth; views are free", "[cost]") {
  ClusterSpec c = cluster(1e9, 1e9, {{1e9, 0}});
  c.opOverhead = 1e-6;
  c.classBandwidth[static_cast<unsigned>(OpClass::DataMovement)] = 1e8;
  OpWork w{0, 1e8};
  CHECK(getComputeTime(w, OpClass::DataMovement, c) == Approx(1.0 + 1e-6));
  CHECK(getComputeTime(w, OpClass::Elementwise, c) == Approx(0.1 + 1e-6));
  CHECK(getComputeTime(OpWork{}, OpClass::Elementwise, c) == 0);

  Fixture f(R"mlir(
    func.func @f(%a: tensor<8x4xf32>) -> tensor<32xf32> {
      %y = autopar.reshape %a : (tensor<8x4xf32>) -> tensor<32xf32>
      return %y : tensor<32xf32>
    })mlir");
  auto op = f.first<ReshapeOp>();
  FailureOr<ShardingRule> rule = ShardingRule::get(op);
  REQUIRE(succeeded(rule));
  OpWork view = getOpWork(op, *rule, LoopAxes(rule->getNumLoops()), {1});
  CHECK(view.flops == 0);
  CHECK(view.bytes == 0);
}
