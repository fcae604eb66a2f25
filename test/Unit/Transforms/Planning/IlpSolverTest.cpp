//===- IlpSolverTest.cpp - the relaxation of '<=' rows against brute force ===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// relaxLessEqualRows on random programs shaped like the plan programs (one-of
// choices, pairwise costs through linking variables, knapsack rows): its
// bound never exceeds the optimum found by trying every choice, its solution
// satisfies every row and is priced right, and solveIlp started from it
// finds the same optimum.
//
//===----------------------------------------------------------------------===//

#include "IlpSolver.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>

using namespace mlir::autopar;

namespace {
/// A random program: `groups` one-of choices of `options` each, a linking
/// variable per neighbouring pair with its cost (e(a, b) >= x(a) + x(b) - 1),
/// and `knapsacks` '<=' rows over the choices.
struct RandomProgram {
  IlpProblem ilp;
  std::vector<std::vector<int>> x;
  std::vector<std::vector<double>> memory; ///< per knapsack, per column
  std::vector<double> limits;

  RandomProgram(std::mt19937 &rng, unsigned groups, unsigned options,
                unsigned knapsacks, double tightness) {
    std::uniform_real_distribution<double> cost(1, 100), bytes(0, 10);
    for (unsigned g = 0; g < groups; ++g) {
      std::vector<int> cols;
      for (unsigned o = 0; o < options; ++o)
        cols.push_back(ilp.addVariable(cost(rng), /*integer=*/true));
      ilp.addRow(cols, std::vector<double>(options, 1), 'E', 1);
      x.push_back(cols);
    }
    for (unsigned g = 0; g + 1 < groups; ++g)
      for (unsigned a = 0; a < options; ++a)
        for (unsigned b = 0; b < options; ++b) {
          int e = ilp.addVariable(cost(rng) / 4, /*integer=*/false);
          ilp.addRow({e, x[g][a], x[g + 1][b]}, {1, -1, -1}, 'G', -1);
        }
    for (unsigned k = 0; k < knapsacks; ++k) {
      std::vector<double> perColumn(ilp.getNumVariables(), 0);
      std::vector<int> cols;
      std::vector<double> coefs;
      double least = 0, most = 0;
      for (unsigned g = 0; g < groups; ++g) {
        double lo = std::numeric_limits<double>::infinity(), hi = 0;
        for (int c : x[g]) {
          perColumn[c] = bytes(rng);
          cols.push_back(c);
          coefs.push_back(perColumn[c]);
          lo = std::min(lo, perColumn[c]);
          hi = std::max(hi, perColumn[c]);
        }
        least += lo;
        most += hi;
      }
      double limit = least + tightness * (most - least);
      ilp.addRow(cols, coefs, 'L', limit);
      memory.push_back(std::move(perColumn));
      limits.push_back(limit);
    }
  }

  /// The cheapest choice that fits, by trying every one (infinity: none).
  double bruteForce() const {
    size_t groups = x.size(), options = x.front().size();
    std::vector<unsigned> pick(groups, 0);
    double best = std::numeric_limits<double>::infinity();
    while (true) {
      bool fits = true;
      for (size_t k = 0; k < limits.size() && fits; ++k) {
        double used = 0;
        for (size_t g = 0; g < groups; ++g)
          used += memory[k][x[g][pick[g]]];
        fits = used <= limits[k] + 1e-9;
      }
      if (fits) {
        double price = 0;
        for (size_t g = 0; g < groups; ++g)
          price += ilp.obj[x[g][pick[g]]];
        // The linking variables come after the choices, pair by pair.
        int firstLink = static_cast<int>(groups * options);
        for (size_t g = 0; g + 1 < groups; ++g)
          price += ilp.obj[firstLink + (g * options + pick[g]) * options +
                           pick[g + 1]];
        best = std::min(best, price);
      }
      size_t g = 0;
      for (; g < groups; ++g) {
        if (++pick[g] < options)
          break;
        pick[g] = 0;
      }
      if (g == groups)
        return best;
    }
  }

  /// Whether `values` satisfies every row.
  bool satisfies(const std::vector<double> &values) const {
    for (const IlpProblem::Row &row : ilp.rows) {
      double activity = 0;
      for (size_t i = 0; i < row.cols.size(); ++i)
        activity += row.coefs[i] * values[row.cols[i]];
      if ((row.sense == 'L' && activity > row.rhs + 1e-6) ||
          (row.sense == 'G' && activity < row.rhs - 1e-6) ||
          (row.sense == 'E' && std::fabs(activity - row.rhs) > 1e-6))
        return false;
    }
    return true;
  }
};
} // namespace

TEST_CASE("relaxing the knapsack rows bounds the optimum and finds plans "
          "that fit",
          "[ilp]") {
  std::mt19937 rng(20261208);
  unsigned found = 0, proven = 0, instances = 0;
  for (unsigned i = 0; i < 60; ++i) {
    unsigned groups = 3 + i % 4, options = 2 + i % 3, knapsacks = 1 + i % 3;
    double tightness = 0.1 + 0.8 * ((i * 7) % 10) / 10.0;
    RandomProgram program(rng, groups, options, knapsacks, tightness);
    double optimum = program.bruteForce();
    INFO("instance " << i << ": optimum " << optimum);
    RelaxedRows relaxed = relaxLessEqualRows(program.ilp, 60, /*rounds=*/4);
    if (std::isinf(optimum)) {
      // Nothing fits: no solution can come back.
      CHECK(relaxed.solution.empty());
      continue;
    }
    ++instances;
    CHECK_FALSE(relaxed.infeasible);
    CHECK(relaxed.bound <= optimum + 1e-6);
    if (!relaxed.solution.empty()) {
      ++found;
      CHECK(program.satisfies(relaxed.solution));
      double objective = 0;
      for (size_t c = 0; c < relaxed.solution.size(); ++c)
        objective += program.ilp.obj[c] * relaxed.solution[c];
      CHECK(relaxed.objective == Approx(objective).epsilon(1e-9));
      CHECK(relaxed.objective >= optimum - 1e-6);
      proven += relaxed.objective <= relaxed.bound + 1e-6;
    }
    // Branch and bound started from the relaxation's plan, or without one.
    IlpSolution solved = solveIlp(program.ilp, 60, relaxed.solution);
    REQUIRE(solved.status == IlpSolution::Status::Optimal);
    CHECK(solved.objective == Approx(optimum).epsilon(1e-9));
  }
  // The rounds do their job on most instances: a plan that fits, and on
  // some a proof that it is optimal.
  INFO(found << " solutions, " << proven << " proven, of " << instances);
  CHECK(found * 2 > instances);
  CHECK(proven > 0);
}
