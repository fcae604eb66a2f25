//===- IlpSolver.cpp - COIN-OR CBC behind the planner's ILP ---------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "IlpSolver.h"

#include <coin/Cbc_C_Interface.h>

#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <limits>

using namespace mlir::autopar;

IlpSolution mlir::autopar::solveIlp(const IlpProblem &problem,
                                    double timeLimitSeconds,
                                    const std::vector<double> &initial,
                                    double cutoff) {
  IlpSolution result;
  int numCols = static_cast<int>(problem.getNumVariables());
  int numRows = static_cast<int>(problem.getNumRows());
  // Column-major matrix.
  std::vector<std::vector<std::pair<int, double>>> columns(numCols);
  std::vector<double> rowLower(numRows), rowUpper(numRows);
  const double inf = std::numeric_limits<double>::infinity();
  for (int r = 0; r < numRows; ++r) {
    const IlpProblem::Row &row = problem.rows[r];
    for (size_t i = 0; i < row.cols.size(); ++i)
      columns[row.cols[i]].push_back({r, row.coefs[i]});
    rowLower[r] = row.sense == 'L' ? -inf : row.rhs;
    rowUpper[r] = row.sense == 'G' ? inf : row.rhs;
  }
  std::vector<CoinBigIndex> start(numCols + 1, 0);
  std::vector<int> index;
  std::vector<double> value;
  for (int c = 0; c < numCols; ++c) {
    start[c] = static_cast<CoinBigIndex>(index.size());
    for (auto [r, v] : columns[c]) {
      index.push_back(r);
      value.push_back(v);
    }
  }
  start[numCols] = static_cast<CoinBigIndex>(index.size());

  Cbc_Model *model = Cbc_newModel();
  Cbc_setLogLevel(model, 0);
  Cbc_loadProblem(model, numCols, numRows, start.data(), index.data(),
                  value.data(), problem.lower.data(), problem.upper.data(),
                  problem.obj.data(), rowLower.data(), rowUpper.data());
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
