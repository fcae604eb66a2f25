//===- IlpSolver.cpp - COIN-OR CBC behind the planner's ILP ---------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "IlpSolver.h"

#include <coin/Cbc_C_Interface.h>
#include <coin/Clp_C_Interface.h>

#include "llvm/ADT/STLExtras.h"

#include <chrono>
#include <cmath>
#include <limits>

using namespace mlir::autopar;

namespace {
/// A problem's matrix by columns, with its row bounds, as COIN-OR's loaders
/// take it.
struct ColumnMajor {
  std::vector<CoinBigIndex> start;
  std::vector<int> index;
  std::vector<double> value, rowLower, rowUpper;

  explicit ColumnMajor(const IlpProblem &problem) {
    int numCols = static_cast<int>(problem.getNumVariables());
    int numRows = static_cast<int>(problem.getNumRows());
    std::vector<std::vector<std::pair<int, double>>> columns(numCols);
    rowLower.resize(numRows);
    rowUpper.resize(numRows);
    const double inf = std::numeric_limits<double>::infinity();
    for (int r = 0; r < numRows; ++r) {
      const IlpProblem::Row &row = problem.rows[r];
      for (size_t i = 0; i < row.cols.size(); ++i)
        columns[row.cols[i]].push_back({r, row.coefs[i]});
      rowLower[r] = row.sense == 'L' ? -inf : row.rhs;
      rowUpper[r] = row.sense == 'G' ? inf : row.rhs;
    }
    start.assign(numCols + 1, 0);
    for (int c = 0; c < numCols; ++c) {
      start[c] = static_cast<CoinBigIndex>(index.size());
      for (auto [r, v] : columns[c]) {
        index.push_back(r);
        value.push_back(v);
      }
    }
    start[numCols] = static_cast<CoinBigIndex>(index.size());
  }
};

/// Seconds since `start`.
double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}
} // namespace

IlpSolution mlir::autopar::solveIlp(const IlpProblem &problem,
                                    double timeLimitSeconds,
                                    const std::vector<double> &initial,
                                    double cutoff) {
  IlpSolution result;
  int numCols = static_cast<int>(problem.getNumVariables());
  ColumnMajor matrix(problem);
  Cbc_Model *model = Cbc_newModel();
  Cbc_setLogLevel(model, 0);
  Cbc_loadProblem(model, numCols, static_cast<int>(problem.getNumRows()),
                  matrix.start.data(), matrix.index.data(), matrix.value.data(),
                  problem.lower.data(), problem.upper.data(),
                  problem.obj.data(), matrix.rowLower.data(),
                  matrix.rowUpper.data());
  for (int c = 0; c < numCols; ++c)
    if (problem.isInteger[c])
      Cbc_setInteger(model, c);
  Cbc_setAllowableGap(model, 0);
  Cbc_setAllowableFractionGap(model, 0);
  // Serial branch and bound: "threads 1" runs the tree in CBC's parallel
  // mode with one worker thread, whose hand-offs cost 25-40% of the
  // memory-constrained stage programs' solve time (GPT-3 175B's).
  Cbc_setParameter(model, "threads", "0");
  // Branch and bound on the LP bound alone. The plan programs' LP
  // relaxations are tight except at the memory rows, where CBC's cut
  // generators add cuts that are never active and its primal heuristics
  // (feasibility pump, RINS, ...) rarely find the solution the tree finds
  // next: both cost more than they save (GPT-3's and Megatron-LM Table 1
  // row 5's memory-constrained stage programs: 38.5 s -> 10.1 s of CBC in
  // all, every one faster). Optimality is proven either way.
  Cbc_setParameter(model, "cuts", "off");
  Cbc_setParameter(model, "heuristicsOnOff", "off");
  // Without memory rows (the only '<=' rows: the '>=' rows of shared
  // reshards and of the optimizer's split ties are no knapsacks) the LP
  // optimum is integral or nearly so, and CBC's preprocessing and Clp's
  // presolve cost more than the whole search after them: each halves the
  // solve of GPT-3 175B's stage programs without memory rows.
  // CBC (2.10) can crash in CglPreProcess::postProcess when its time limit
  // stops it inside or right after preprocessing (seen in a few percent of
  // runs at a limit of 1e-9 s): a limit too short for preprocessing to pay
  // off also skips it.
  constexpr double kMinSecondsForPreprocessing = 1.0;
  bool memoryRows = llvm::any_of(problem.rows, [](const IlpProblem::Row &row) {
    return row.sense == 'L';
  });
  if (!memoryRows)
    Cbc_setParameter(model, "presolve", "off");
  if (!memoryRows || timeLimitSeconds < kMinSecondsForPreprocessing)
    Cbc_setParameter(model, "preprocess", "off");
  Cbc_setMaximumSeconds(model, timeLimitSeconds);
  if (std::isfinite(cutoff))
    Cbc_setCutoff(model, cutoff);
  std::vector<int> startIdx;
  std::vector<double> startVal;
  if (!initial.empty()) {
    for (int c = 0; c < numCols; ++c)
      if (problem.isInteger[c]) {
        startIdx.push_back(c);
        startVal.push_back(initial[c]);
      }
    Cbc_setMIPStartI(model, static_cast<int>(startIdx.size()), startIdx.data(),
                     startVal.data());
  }
  Cbc_solve(model);

  if (Cbc_isProvenInfeasible(model)) {
    result.status = IlpSolution::Status::Infeasible;
    Cbc_deleteModel(model);
    return result;
  }
  const double *solution = Cbc_getColSolution(model);
  bool optimal = Cbc_isProvenOptimal(model);
  bool timedOut = !optimal && Cbc_isSecondsLimitReached(model);
  if (!solution) {
    result.status =
        timedOut ? IlpSolution::Status::TimeLimit : IlpSolution::Status::Failed;
    Cbc_deleteModel(model);
    return result;
  }
  result.values.assign(solution, solution + numCols);
  // A solution must satisfy the one-of constraints; CBC returns the LP
  // point when it found no integer solution.
  bool integral = true;
  for (int c = 0; c < numCols; ++c)
    if (problem.isInteger[c] &&
        std::fabs(result.values[c] - std::round(result.values[c])) > 1e-6)
      integral = false;
  if (!integral) {
    // Without an integer solution, only a proof says there is none: a
    // solver stopped by its time limit says nothing about feasibility.
    if (timedOut)
      result.status = IlpSolution::Status::TimeLimit;
    else
      result.status = optimal ? IlpSolution::Status::Failed
                              : IlpSolution::Status::Infeasible;
    Cbc_deleteModel(model);
    return result;
  }
  result.objective = Cbc_getObjValue(model);
  double bound = Cbc_getBestPossibleObjValue(model);
  result.status =
      optimal ? IlpSolution::Status::Optimal : IlpSolution::Status::Feasible;
  result.gap = optimal || result.objective == 0
                   ? 0
                   : std::max(0.0, (result.objective - bound) /
                                       std::fabs(result.objective));
  Cbc_deleteModel(model);
  return result;
}

RelaxedRows mlir::autopar::relaxLessEqualRows(const IlpProblem &problem,
                                              double timeLimitSeconds,
                                              unsigned rounds) {
  auto startTime = std::chrono::steady_clock::now();
  RelaxedRows result;
  int numCols = static_cast<int>(problem.getNumVariables());
  int numRows = static_cast<int>(problem.getNumRows());
  // 1. The LP relaxation: a bound, and the duals of the '<=' rows.
  std::vector<double> multipliers(numRows, 0);
  {
    ColumnMajor matrix(problem);
    Clp_Simplex *lp = Clp_newModel();
    Clp_setLogLevel(lp, 0);
    Clp_loadProblem(
        lp, numCols, numRows, matrix.start.data(), matrix.index.data(),
        matrix.value.data(), problem.lower.data(), problem.upper.data(),
        problem.obj.data(), matrix.rowLower.data(), matrix.rowUpper.data());
    Clp_setMaximumSeconds(lp, timeLimitSeconds);
    Clp_dual(lp, 0);
    if (Clp_isProvenPrimalInfeasible(lp)) {
      result.infeasible = true;
    } else if (Clp_isProvenOptimal(lp)) {
      result.bound = Clp_objectiveValue(lp);
      // A '<=' row's dual is <= 0 when minimizing; its magnitude is the
      // row's Lagrange multiplier (any multiplier >= 0 gives a valid
      // bound below).
      const double *prices = Clp_getRowPrice(lp);
      for (int r = 0; r < numRows; ++r)
        if (problem.rows[r].sense == 'L')
          multipliers[r] = std::fabs(prices[r]);
    }
    Clp_deleteModel(lp);
  }
  if (result.infeasible)
    return result;
  // Without a binding '<=' row in the LP, the rounds below have nothing to
  // weigh the rows by: one round without them (mu = 0) is all they can do.
  bool binding = llvm::any_of(multipliers, [](double m) { return m > 0; });

  // 2. Lagrangian rounds: the '<=' rows leave the problem and enter its
  // objective with mu times the LP's multipliers, until an optimum of that
  // problem satisfies them: mu = 1 (the LP's own weights), doubled while
  // the rows do not hold, then halving the interval between the largest mu
  // whose optimum breaks a row and the smallest whose optimum keeps them,
  // for a faster plan that fits. Without '<=' rows the LP optimum of the
  // plan programs is integral or nearly so, and each round is as cheap as a
  // solve without memory rows.
  IlpProblem penalized;
  penalized.lower = problem.lower;
  penalized.upper = problem.upper;
  penalized.isInteger = problem.isInteger;
  std::vector<int> lessEqual;
  for (auto [r, row] : llvm::enumerate(problem.rows)) {
    if (row.sense == 'L')
      lessEqual.push_back(static_cast<int>(r));
    else
      penalized.rows.push_back(row);
  }
  double mu = binding ? 1 : 0, breaks = 0, keeps = -1;
  for (unsigned round = 0; round < (binding ? rounds : 1); ++round) {
    double remaining = timeLimitSeconds - secondsSince(startTime);
    if (remaining <= 0)
      break;
    penalized.obj = problem.obj;
    double constant = 0;
    for (int r : lessEqual) {
      const IlpProblem::Row &row = problem.rows[r];
      double m = mu * multipliers[r];
      for (size_t i = 0; i < row.cols.size(); ++i)
        penalized.obj[row.cols[i]] += m * row.coefs[i];
      constant -= m * row.rhs;
    }
    IlpSolution relaxed = solveIlp(penalized, remaining);
    if (relaxed.status != IlpSolution::Status::Optimal &&
        relaxed.status != IlpSolution::Status::Feasible)
      break;
    // A proven optimum of the penalized problem bounds the original one:
    // at any x that satisfies the '<=' rows the penalty is <= 0.
    if (relaxed.status == IlpSolution::Status::Optimal)
      result.bound = std::max(result.bound, relaxed.objective + constant);
    bool satisfies = llvm::all_of(lessEqual, [&](int r) {
      const IlpProblem::Row &row = problem.rows[r];
      double activity = 0, scale = std::fabs(row.rhs);
      for (size_t i = 0; i < row.cols.size(); ++i) {
        activity += row.coefs[i] * relaxed.values[row.cols[i]];
        scale = std::max(scale, std::fabs(row.coefs[i]));
      }
      return activity <= row.rhs + 1e-9 * scale;
    });
    if (satisfies) {
      double objective = 0;
      for (int c = 0; c < numCols; ++c)
        objective += problem.obj[c] * relaxed.values[c];
      if (objective < result.objective) {
        result.solution = std::move(relaxed.values);
        result.objective = objective;
      }
      // Nothing to find below a solution as good as the bound.
      if (result.objective <= result.bound)
        break;
      keeps = mu;
    } else {
      breaks = mu;
    }
    mu = keeps < 0 ? 2 * mu : (breaks + keeps) / 2;
  }
  return result;
}
