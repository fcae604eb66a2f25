//===- PipelineSplitTest.cpp - stage block counts against brute force -----===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "PipelineSplit.h"

#include <catch2/catch.hpp>

#include <functional>
#include <random>

using namespace mlir::autopar::planning;

namespace {
/// A problem whose stage s with k blocks takes k * block seconds plus the
/// stage position's extra (embedding on the first, head on the last), with
/// random per-(s, k) noise and some infeasible (out of memory) entries.
SplitProblem randomProblem(std::mt19937 &rng, unsigned p, unsigned blocks,
                           unsigned m, PipelineSchedule schedule,
                           std::vector<std::vector<StageCost>> &table) {
  std::uniform_real_distribution<double> noise(0.8, 1.2), extra(0, 3);
  std::bernoulli_distribution oom(0.1);
  SplitProblem pb;
  pb.stages = p;
  pb.blocks = blocks;
  pb.kMin = 1;
  pb.kMax = blocks - (p - 1);
  pb.schedule.schedule = schedule;
  pb.schedule.stages = p;
  pb.schedule.microbatches = m;
  table.assign(p, std::vector<StageCost>(pb.kMax + 1));
  double first = extra(rng), last = extra(rng);
  for (unsigned s = 0; s < p; ++s)
    for (unsigned k = pb.kMin; k <= pb.kMax; ++k) {
      StageCost &c = table[s][k];
      c.feasible = !oom(rng);
      double f =
          k * noise(rng) + (s == 0 ? first : 0) + (s + 1 == p ? last : 0);
      c.forward = f;
      c.backward = 2 * f;
      c.perStep = 0.1 * k;
      c.receive = 0.01;
    }
  pb.cost = [&table](unsigned s, unsigned k) { return table[s][k]; };
  return pb;
}

/// Every split, by brute force.
void forEach(const SplitProblem &pb, std::vector<unsigned> &blocks, unsigned s,
             unsigned used,
             const std::function<void(const std::vector<unsigned> &)> &f) {
  if (s == pb.stages) {
    if (used == pb.blocks)
      f(blocks);
    return;
  }
  for (unsigned k = pb.kMin; k <= pb.kMax && used + k <= pb.blocks; ++k) {
    blocks[s] = k;
    forEach(pb, blocks, s + 1, used + k, f);
  }
}
} // namespace

TEST_CASE("the dynamic program minimizes (m-1) max t + sum t exactly",
          "[pipeline]") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    unsigned p = 2 + trial % 4, blocks = p + trial % 7, m = 1 + trial % 9;
    std::vector<std::vector<StageCost>> table;
    SplitProblem pb =
        randomProblem(rng, p, blocks, m, PipelineSchedule::OneFOneB, table);
    std::optional<double> brute;
    std::vector<unsigned> scratch(p);
    forEach(pb, scratch, 0, 0, [&](const std::vector<unsigned> &b) {
      double sum = 0, most = 0;
      for (unsigned s = 0; s < p; ++s) {
        if (!table[s][b[s]].feasible)
          return;
        double t = table[s][b[s]].forward + table[s][b[s]].backward;
        sum += t;
        most = std::max(most, t);
      }
      double v = (m - 1) * most + sum;
      if (!brute || v < *brute)
        brute = v;
    });
    std::optional<double> dp = minimizeSplitFormula(pb);
    REQUIRE(brute.has_value() == dp.has_value());
    if (brute)
      CHECK(*dp == Approx(*brute).epsilon(1e-12));
  }
}

TEST_CASE("the exhaustive search finds the fastest simulated split, and the "
          "dynamic program's proposals are never faster",
          "[pipeline]") {
  std::mt19937 rng(11);
  for (PipelineSchedule schedule :
       {PipelineSchedule::OneFOneB, PipelineSchedule::ZeroBubbleH1,
        PipelineSchedule::GPipe}) {
    for (int trial = 0; trial < 40; ++trial) {
      unsigned p = 2 + trial % 3, blocks = p + trial % 6, m = 1 + trial % 8;
      std::vector<std::vector<StageCost>> table;
      SplitProblem pb = randomProblem(rng, p, blocks, m, schedule, table);
      if (schedule == PipelineSchedule::ZeroBubbleH1)
        pb.schedule.weightGrad.assign(p, 0);
      std::optional<SplitResult> all = searchSplit(pb);
      std::optional<SplitResult> dp = searchSplit(pb, true);
      std::optional<double> brute;
      std::vector<unsigned> scratch(p);
      forEach(pb, scratch, 0, 0, [&](const std::vector<unsigned> &b) {
        for (unsigned s = 0; s < p; ++s)
          if (!table[s][b[s]].feasible)
            return;
        double step = simulateSplit(pb, b).step;
        if (!brute || step < *brute)
          brute = step;
      });
      REQUIRE(all.has_value() == brute.has_value());
      REQUIRE(dp.has_value() == brute.has_value());
      if (!brute)
        continue;
      CHECK(all->exhaustive);
      CHECK(all->step == Approx(*brute).epsilon(1e-12));
      CHECK(dp->step >= *brute * (1 - 1e-12));
      unsigned total = 0;
      for (unsigned k : all->blocks)
        total += k;
      CHECK(total == blocks);
    }
  }
}

TEST_CASE("a heavy last stage gets fewer blocks", "[pipeline]") {
  // 8 blocks of 1 s on 2 stages; the head costs 2 blocks' worth.
  SplitProblem pb;
  pb.stages = 2;
  pb.blocks = 8;
  pb.kMin = 1;
  pb.kMax = 7;
  pb.schedule.schedule = PipelineSchedule::OneFOneB;
  pb.schedule.stages = 2;
  pb.schedule.microbatches = 8;
  pb.cost = [](unsigned s, unsigned k) {
    StageCost c;
    c.feasible = true;
    c.forward = k + (s == 1 ? 2.0 : 0.0);
    c.backward = 2 * c.forward;
    return c;
  };
  std::optional<SplitResult> r = searchSplit(pb);
  REQUIRE(r);
  CHECK(r->blocks == std::vector<unsigned>{5, 3});
  CHECK(countSplits(pb) == 7);
}
