//===- PipelineSplit.cpp - block counts of pipeline stages ----------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "PipelineSplit.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <set>

using namespace mlir::autopar::planning;

static constexpr double kInf = std::numeric_limits<double>::infinity();

unsigned long
mlir::autopar::planning::countSplits(const SplitProblem &problem) {
  // Compositions of `blocks` into `stages` parts in [kMin, kMax], capped.
  std::vector<unsigned long> ways(problem.blocks + 1, 0);
  ways[0] = 1;
  const unsigned long cap = std::numeric_limits<unsigned long>::max() / 4;
  for (unsigned s = 0; s < problem.stages; ++s) {
    std::vector<unsigned long> next(problem.blocks + 1, 0);
    for (unsigned j = 0; j <= problem.blocks; ++j)
      for (unsigned k = problem.kMin;
           k <= problem.kMax && j + k <= problem.blocks; ++k)
        next[j + k] = std::min(cap, next[j + k] + ways[j]);
    ways = std::move(next);
  }
  return ways[problem.blocks];
}

SplitResult
mlir::autopar::planning::simulateSplit(const SplitProblem &problem,
                                       const std::vector<unsigned> &blocks) {
  PipelineProblem pb = problem.schedule;
  unsigned p = problem.stages;
  bool zb = pb.schedule == PipelineSchedule::ZeroBubbleH1;
  pb.forward.assign(p, 0);
  pb.transfer.assign(p, 0);
  if (!pb.forwardOnly)
    pb.backward.assign(p, 0);
  if (zb)
    pb.weightGrad.assign(p, 0);
  double perStep = 0;
  for (unsigned s = 0; s < p; ++s) {
    StageCost c = problem.cost(s, blocks[s]);
    pb.forward[s] = c.forward;
    if (!pb.forwardOnly) {
      // ZB-H1 splits the backward into its input- and weight-gradient
      // halves (one contraction each per forward one).
      pb.backward[s] = zb ? c.backward / 2 : c.backward;
      if (zb)
        pb.weightGrad[s] = c.backward / 2;
    }
    perStep = std::max(perStep, c.perStep);
    if (s + 1 < p)
      pb.transfer[s] = problem.cost(s + 1, blocks[s + 1]).receive;
  }
  assert(checkPipelineProblem(pb).empty() && "bad split problem");
  SplitResult r;
  r.blocks = blocks;
  r.run = simulatePipeline(pb);
  r.problem = std::move(pb);
  r.step = r.run.makespan + perStep;
  r.simulated = 1;
  return r;
}

/// Calls `f` on every split.
static void
forEachSplit(const SplitProblem &problem,
             const std::function<void(std::vector<unsigned> &)> &f) {
  std::vector<unsigned> blocks(problem.stages, 0);
  std::function<void(unsigned, unsigned)> rec = [&](unsigned s, unsigned used) {
    if (s == problem.stages) {
      if (used == problem.blocks)
        f(blocks);
      return;
    }
    for (unsigned k = problem.kMin;
         k <= problem.kMax && used + k <= problem.blocks; ++k) {
      blocks[s] = k;
      rec(s + 1, used + k);
    }
  };
  rec(0, 0);
}

static double stageTime(const StageCost &c) { return c.forward + c.backward; }

/// Per bound on the busiest stage: the split with the least total under it.
static std::vector<std::pair<double, std::vector<unsigned>>>
boundedSplits(const SplitProblem &problem) {
  unsigned p = problem.stages, n = problem.blocks;
  std::vector<double> bounds;
  for (unsigned s = 0; s < p; ++s)
    for (unsigned k = problem.kMin; k <= problem.kMax; ++k)
      if (StageCost c = problem.cost(s, k); c.feasible)
        bounds.push_back(stageTime(c));
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  std::vector<std::pair<double, std::vector<unsigned>>> out;
  for (double bound : bounds) {
    std::vector<std::vector<double>> dp(p + 1,
                                        std::vector<double>(n + 1, kInf));
    std::vector<std::vector<unsigned>> pick(p + 1,
                                            std::vector<unsigned>(n + 1, 0));
    dp[0][0] = 0;
    for (unsigned s = 0; s < p; ++s)
      for (unsigned j = 0; j <= n; ++j) {
        if (dp[s][j] == kInf)
          continue;
        for (unsigned k = problem.kMin; k <= problem.kMax && j + k <= n; ++k) {
          StageCost c = problem.cost(s, k);
          if (!c.feasible || stageTime(c) > bound)
            continue;
          double total = dp[s][j] + stageTime(c);
          if (total < dp[s + 1][j + k]) {
            dp[s + 1][j + k] = total;
            pick[s + 1][j + k] = k;
          }
        }
      }
    if (dp[p][n] == kInf)
      continue;
    std::vector<unsigned> blocks(p);
    for (unsigned s = p, j = n; s > 0; --s) {
      blocks[s - 1] = pick[s][j];
      j -= pick[s][j];
    }
    out.push_back({bound, std::move(blocks)});
  }
  return out;
}

std::optional<double>
mlir::autopar::planning::minimizeSplitFormula(const SplitProblem &problem) {
  double m = problem.schedule.microbatches;
  std::optional<double> best;
  for (auto &[bound, blocks] : boundedSplits(problem)) {
    double sum = 0, most = 0;
    for (unsigned s = 0; s < problem.stages; ++s) {
      double t = stageTime(problem.cost(s, blocks[s]));
      sum += t;
      most = std::max(most, t);
    }
    double value = (m - 1) * most + sum;
    if (!best || value < *best)
      best = value;
  }
  return best;
}

std::optional<SplitResult>
mlir::autopar::planning::searchSplit(const SplitProblem &problem,
                                     bool forceDynamicProgram) {
  std::optional<SplitResult> best;
  unsigned simulated = 0;
  auto consider = [&](const std::vector<unsigned> &blocks) {
    for (unsigned s = 0; s < problem.stages; ++s)
      if (!problem.cost(s, blocks[s]).feasible)
        return;
    SplitResult r = simulateSplit(problem, blocks);
    ++simulated;
    if (!best || r.step < best->step)
      best = std::move(r);
  };
  bool exhaustive =
      !forceDynamicProgram && countSplits(problem) <= problem.exhaustiveLimit;
  if (exhaustive) {
    forEachSplit(problem, consider);
  } else {
    std::set<std::vector<unsigned>> tried;
    for (auto &[bound, blocks] : boundedSplits(problem))
      if (tried.insert(blocks).second)
        consider(blocks);
  }
  if (best) {
    best->simulated = simulated;
    best->exhaustive = exhaustive;
  }
  return best;
}
