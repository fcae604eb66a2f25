//===- IlpSolver.h - mixed-integer programs for the planner -------*- C++
//-*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A minimal builder for 0-1 mixed-integer programs and the call into COIN-OR
// CBC that solves them to proven optimality. Only this file knows the solver.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_LIB_TRANSFORMS_PLANNING_ILPSOLVER_H
#define AUTOPAR_LIB_TRANSFORMS_PLANNING_ILPSOLVER_H

#include <limits>
#include <string>
#include <vector>

namespace mlir::autopar {

/// minimize obj . x subject to rows, lb <= x <= ub, some x integral.
class IlpProblem {
public:
  int addVariable(double objective, bool integer, double lb = 0,
                  double ub = 1) {
    obj.push_back(objective);
    isInteger.push_back(integer);
    lower.push_back(lb);
    upper.push_back(ub);
    return static_cast<int>(obj.size()) - 1;
  }
  void addObjective(int var, double c) { obj[var] += c; }
  /// sense: 'L' (<=), 'G' (>=), 'E' (==).
  void addRow(std::vector<int> cols, std::vector<double> coefs, char sense,
              double rhs) {
    rows.push_back({std::move(cols), std::move(coefs), sense, rhs});
  }
  size_t getNumVariables() const { return obj.size(); }
  size_t getNumRows() const { return rows.size(); }

  struct Row {
    std::vector<int> cols;
    std::vector<double> coefs;
    char sense;
    double rhs;
  };
  std::vector<double> obj, lower, upper;
  std::vector<bool> isInteger;
  std::vector<Row> rows;
};

struct IlpSolution {
  /// Optimal: proven. Feasible: a solution, stopped at the time limit.
  /// TimeLimit: stopped at the time limit without any solution (nothing is
  /// known about feasibility). Infeasible: proven to have no solution.
  enum class Status { Optimal, Feasible, TimeLimit, Infeasible, Failed } status;
  std::vector<double> values;
  double objective = 0;
  /// Relative gap between the solution and the proven bound (0 if optimal).
  double gap = 0;
};

/// Solves `problem` with CBC on one thread (deterministic) within
/// `timeLimitSeconds`; `initial` (may be empty) is a feasible start. With a
/// finite `cutoff`, only solutions whose objective is at most `cutoff` are
/// sought: without one the result is Infeasible.
IlpSolution solveIlp(const IlpProblem &problem, double timeLimitSeconds,
                     const std::vector<double> &initial = {},
                     double cutoff = std::numeric_limits<double>::infinity());

/// What relaxing a problem's '<=' rows found (relaxLessEqualRows).
struct RelaxedRows {
  /// Whether the LP relaxation proved the problem infeasible.
  bool infeasible = false;
  /// A lower bound on the problem's optimum (-infinity: none).
  double bound = -std::numeric_limits<double>::infinity();
  /// A solution that satisfies every row (empty: none found), and its
  /// objective.
  std::vector<double> solution;
  double objective = std::numeric_limits<double>::infinity();
};

/// Bounds `problem` from below and looks for a solution cheaply, for
/// problems whose '<=' rows are knapsacks over otherwise easy rows (the plan
/// programs' memory rows). The LP relaxation gives a bound and the '<='
/// rows' duals; then, in up to `rounds` rounds, the problem without its
/// '<=' rows, their duals times 1, 2, 4, ... in its objective, is solved:
/// each round's optimum bounds the problem too (Lagrangian relaxation), and
/// the first that satisfies the '<=' rows is the solution. Nothing here
/// proves optimality by itself: the caller compares `objective` with
/// `bound`, or hands `solution` to solveIlp as its start.
RelaxedRows relaxLessEqualRows(const IlpProblem &problem,
                               double timeLimitSeconds, unsigned rounds);

} // namespace mlir::autopar

#endif // AUTOPAR_LIB_TRANSFORMS_PLANNING_ILPSOLVER_H
