//===- IntegerProgram.cpp - the plan search as an integer program ---------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "IntegerProgram.h"

#include "llvm/ADT/SetVector.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::planning;

/// Solves `ilp`; with `memoryRows` (the fastest plan under a memory limit,
/// whose '<=' rows are the memory rows) the relaxation of those rows comes
/// first (relaxLessEqualRows). Its bound above the cutoff proves there is no
/// plan under it, and its plan that fits, when as fast as the bound, is the
/// optimum: either way branch and bound is skipped. Otherwise that plan
/// starts branch and bound, which finds the optimum with fewer nodes: on
/// GPT-3 175B's memory-constrained stage programs it finds plans within
/// 0.1-6% of the optimum, which without it is first found after tens of
/// nodes.
static IlpSolution solveWithMemoryRows(const IlpProblem &ilp, bool memoryRows,
                                       double timeLimitSeconds, double cutoff) {
  if (!memoryRows)
    return solveIlp(ilp, timeLimitSeconds, /*initial=*/{}, cutoff);
  auto start = std::chrono::steady_clock::now();
  constexpr unsigned kRounds = 4;
  RelaxedRows relaxed = relaxLessEqualRows(ilp, timeLimitSeconds, kRounds);
  // The objective is in microseconds: ties far below a microsecond.
  auto atMost = [](double a, double b) {
    return a <= b + 1e-9 * std::max(1.0, std::fabs(b));
  };
  IlpSolution sol;
  if (relaxed.infeasible || !atMost(relaxed.bound, cutoff)) {
    sol.status = IlpSolution::Status::Infeasible;
    return sol;
  }
  bool found = !relaxed.solution.empty() && atMost(relaxed.objective, cutoff);
  if (found && atMost(relaxed.objective, relaxed.bound)) {
    sol.status = IlpSolution::Status::Optimal;
    sol.values = std::move(relaxed.solution);
    sol.objective = relaxed.objective;
    return sol;
  }
  double remaining =
      timeLimitSeconds -
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return solveIlp(ilp, std::max(remaining, 0.0),
                  found ? relaxed.solution : std::vector<double>{}, cutoff);
}

SolvedProgram mlir::autopar::planning::solvePlanProgram(
    const StrategyGraph &graph, const PlanPricer &pricer, double memoryLimit,
    bool minimizeMemory, double timeLimitSeconds, double cutoffSeconds) {
  const std::vector<Node> &nodes = graph.nodes;
  const std::vector<Edge> &edges = graph.edges;
  auto nodeCost = [&](unsigned n, unsigned s) { return pricer.nodeCost(n, s); };
  auto edgeCost = [&](const Edge &e, unsigned s, unsigned t, bool rec) {
    return pricer.edgeCost(e, s, t, rec);
  };
  auto valueBytes = [&](unsigned n, unsigned r, ShardingAttr layout) {
    return pricer.valueBytes(n, r, layout);
  };
  auto transientBytes = [&](const Edge &e, unsigned s, unsigned t) {
    return pricer.transientBytes(e, s, t);
  };
  IlpProblem ilp;
  // Per representative and strategy, the cost of all the nodes it stands
  // for (members may differ in whether they are recomputed).
  std::vector<std::vector<double>> repCost(nodes.size());
  for (unsigned n = 0; n < nodes.size(); ++n) {
    std::vector<double> &cost = repCost[nodes[n].rep];
    cost.resize(nodes[nodes[n].rep].strategies.size(), 0);
    for (unsigned s = 0; s < cost.size(); ++s)
      cost[s] += nodeCost(n, s);
  }
  // x variables (-1: a single strategy, fixed).
  std::vector<std::vector<int>> x(nodes.size());
  double objScale = minimizeMemory ? 0 : 1e6; // microseconds
  // The part of the objective no variable controls.
  double objConstant = 0;
  for (unsigned n = 0; n < nodes.size(); ++n) {
    if (nodes[n].rep != n)
      continue;
    size_t k = nodes[n].strategies.size();
    if (k == 1) {
      x[n] = {-1};
      objConstant += objScale * repCost[n][0];
      continue;
    }
    std::vector<int> cols;
    std::vector<double> ones(k, 1.0);
    for (unsigned s = 0; s < k; ++s)
      cols.push_back(ilp.addVariable(objScale * repCost[n][s],
                                     /*integer=*/true));
    ilp.addRow(cols, ones, 'E', 1);
    x[n] = std::move(cols);
  }

  // A linear expression over the variables, plus a constant.
  struct Expr {
    std::map<int, double> terms;
    double constant = 0;
  };
  auto addX = [&](Expr &expr, unsigned n, unsigned s, double c) {
    if (c == 0)
      return;
    if (x[n].size() == 1 && x[n][0] == -1)
      expr.constant += c;
    else
      expr.terms[x[n][s]] += c;
  };

  // The distributed optimizer's split (StrategyGraph::splitTies): a node
  // takes strategy t whenever its weight takes a strategy under which the
  // split gives it t, x(node, t) >= sum of those x(weight, s). A weight the
  // split leaves as planned constrains nothing. Folded nodes have the
  // strategy lists of their representatives, whose variables they use.
  for (const SplitTie &tie : graph.splitTies) {
    std::map<int, Expr> rows;
    for (unsigned s = 0; s < tie.strategies.size(); ++s)
      if (int t = tie.strategies[s]; t >= 0)
        addX(rows[t], nodes[tie.weight].rep, s, -1);
    for (auto &entry : rows) {
      Expr &row = entry.second;
      addX(row, nodes[tie.node].rep, entry.first, 1);
      if (row.terms.empty()) {
        assert(row.constant >= 0 && "a fixed node contradicts its split");
        continue;
      }
      std::vector<int> cols;
      std::vector<double> coefs;
      for (auto [col, c] : row.terms) {
        cols.push_back(col);
        coefs.push_back(c);
      }
      ilp.addRow(cols, coefs, 'G', -row.constant);
    }
  }

  // The edges whose value has several readers sharing its reshards
  // (PlanPricer::isReshardShared): priced once per value, kind and key on
  // the r variables below, not on their own edge. A value read once keeps
  // the price on its edge, which is the same.
  std::vector<bool> perValue(edges.size(), false);
  for (unsigned n = 0; n < nodes.size(); ++n) {
    std::map<unsigned, std::vector<unsigned>> byResult;
    for (unsigned i : graph.outEdges[n])
      if (pricer.isReshardShared(edges[i]))
        byResult[edges[i].result].push_back(i);
    for (const auto &entry : byResult)
      if (entry.second.size() > 1)
        for (unsigned i : entry.second)
          perValue[i] = true;
  }

  // Folded edges with multiplicities: how many of the edges a folded edge
  // stands for, and whose price is their own (not perValue), end at a
  // consumer that is not / is recomputed.
  std::map<std::tuple<unsigned, unsigned, unsigned, unsigned>,
           std::pair<double, double>>
      foldedCount;
  std::vector<unsigned> edgeToFolded(edges.size());
  std::vector<std::tuple<unsigned, unsigned, unsigned, unsigned>> foldedKeys;
  {
    std::map<std::tuple<unsigned, unsigned, unsigned, unsigned>, unsigned> ids;
    for (auto [i, e] : llvm::enumerate(edges)) {
      auto key = std::make_tuple(nodes[e.producer].rep, e.result,
                                 nodes[e.consumer].rep, e.operand);
      auto [it, inserted] = ids.try_emplace(key, foldedKeys.size());
      if (inserted)
        foldedKeys.push_back(key);
      edgeToFolded[i] = it->second;
      std::pair<double, double> &count = foldedCount[key];
      if (!perValue[i])
        (graph.isRecomputed(e.consumer) ? count.second : count.first) += 1;
    }
  }
  // Per folded edge: groups of producer strategies (by layout) and consumer
  // strategies (by required layout and gradient layout), and e variables
  // over group pairs when both sides vary.
  struct FoldedEdge {
    Edge edge;
    std::vector<unsigned> prodGroup, consGroup; ///< strategy -> group
    std::vector<unsigned> prodRep, consRep;     ///< group -> a strategy
    std::vector<int> e;                         ///< g * |H| + h -> column
    bool self = false;
    /// Seconds of all the edges it stands for, given the end strategies.
    std::function<double(const Edge &, unsigned, unsigned)> cost;
  };
  std::vector<FoldedEdge> folded(foldedKeys.size());
  Expr objective;
  for (auto [i, key] : llvm::enumerate(foldedKeys)) {
    auto [p, r, c, o] = key;
    FoldedEdge &fe = folded[i];
    fe.edge = {p, r, c, o};
    fe.self = p == c;
    llvm::DenseMap<Attribute, unsigned> pg;
    for (const Strategy &s : nodes[p].strategies) {
      auto [it, ins] = pg.try_emplace(s.results[r], fe.prodRep.size());
      if (ins)
        fe.prodRep.push_back(&s - nodes[p].strategies.data());
      fe.prodGroup.push_back(it->second);
    }
    // The layouts of earlier operands that read the same value belong to
    // the group: the edge shares their reshard when it matches one
    // (PlanPricer::sharesReshard).
    SmallVector<unsigned> sameValue;
    for (unsigned o2 = 0; o2 < o; ++o2)
      if (nodes[c].operands[o2] == nodes[c].operands[o])
        sameValue.push_back(o2);
    std::map<std::vector<const void *>, unsigned> cg;
    for (const Strategy &s : nodes[c].strategies) {
      std::vector<const void *> group = {s.operands[o].getAsOpaquePointer(),
                                         s.grads[o].getAsOpaquePointer()};
      for (unsigned o2 : sameValue)
        group.push_back(s.operands[o2].getAsOpaquePointer());
      auto [it, ins] = cg.try_emplace(std::move(group), fe.consRep.size());
      if (ins)
        fe.consRep.push_back(&s - nodes[c].strategies.data());
      fe.consGroup.push_back(it->second);
    }
    auto [plain, recomputed] = foldedCount[key];
    auto foldedEdgeCost = [&, plain = plain, recomputed = recomputed](
                              const Edge &edge, unsigned s, unsigned t) {
      double cost = 0;
      if (plain)
        cost += plain * edgeCost(edge, s, t, false);
      if (recomputed)
        cost += recomputed * edgeCost(edge, s, t, true);
      return cost;
    };
    fe.cost = foldedEdgeCost;
    size_t G = fe.prodRep.size(), H = fe.consRep.size();
    bool pFixed = x[p].size() == 1 && x[p][0] == -1;
    bool cFixed = x[c].size() == 1 && x[c][0] == -1;
    if (fe.self || G == 1 || H == 1 || pFixed || cFixed)
      continue; // linear in the x's (handled by the callers below)
    fe.e.assign(G * H, -1);
    for (size_t g = 0; g < G; ++g)
      for (size_t h = 0; h < H; ++h) {
        double cost =
            minimizeMemory
                ? 0
                : objScale * fe.cost(fe.edge, fe.prodRep[g], fe.consRep[h]);
        fe.e[g * H + h] = ilp.addVariable(cost, /*integer=*/false);
      }
    // Marginals: sum_h e(g,h) = sum_{s in g} x(p,s); likewise for h.
    for (size_t g = 0; g < G; ++g) {
      std::vector<int> cols;
      std::vector<double> coefs;
      for (size_t h = 0; h < H; ++h) {
        cols.push_back(fe.e[g * H + h]);
        coefs.push_back(1);
      }
      for (unsigned s = 0; s < fe.prodGroup.size(); ++s)
        if (fe.prodGroup[s] == g) {
          cols.push_back(x[p][s]);
          coefs.push_back(-1);
        }
      ilp.addRow(cols, coefs, 'E', 0);
    }
    for (size_t h = 0; h < H; ++h) {
      std::vector<int> cols;
      std::vector<double> coefs;
      for (size_t g = 0; g < G; ++g) {
        cols.push_back(fe.e[g * H + h]);
        coefs.push_back(1);
      }
      for (unsigned t = 0; t < fe.consGroup.size(); ++t)
        if (fe.consGroup[t] == h) {
          cols.push_back(x[c][t]);
          coefs.push_back(-1);
        }
      ilp.addRow(cols, coefs, 'E', 0);
    }
  }
  // f(s, t) over a folded edge as a linear expression.
  auto addEdgeTerm = [&](Expr &expr, const FoldedEdge &fe, double m, auto f) {
    unsigned p = fe.edge.producer, c = fe.edge.consumer;
    if (fe.self) {
      for (unsigned s = 0; s < nodes[p].strategies.size(); ++s)
        addX(expr, p, s, m * f(s, s));
      return;
    }
    if (!fe.e.empty()) {
      size_t H = fe.consRep.size();
      for (size_t g = 0; g < fe.prodRep.size(); ++g)
        for (size_t h = 0; h < H; ++h) {
          double v = m * f(fe.prodRep[g], fe.consRep[h]);
          if (v != 0)
            expr.terms[fe.e[g * H + h]] += v;
        }
      return;
    }
    bool pFixed = x[p].size() == 1 && x[p][0] == -1;
    bool cFixed = x[c].size() == 1 && x[c][0] == -1;
    if (pFixed && cFixed) {
      expr.constant += m * f(0, 0);
    } else if (pFixed || fe.prodRep.size() == 1) {
      // Only the consumer matters (every producer strategy gives the same
      // layout): pick any producer strategy.
      unsigned s = pFixed ? 0 : fe.prodRep[0];
      for (unsigned t = 0; t < nodes[c].strategies.size(); ++t)
        addX(expr, c, t, m * f(s, t));
    } else {
      unsigned t = cFixed ? 0 : fe.consRep[0];
      for (unsigned s = 0; s < nodes[p].strategies.size(); ++s)
        addX(expr, p, s, m * f(s, t));
    }
  };
  if (!minimizeMemory)
    for (FoldedEdge &fe : folded) {
      if (!fe.e.empty())
        continue; // priced on the e variables
      addEdgeTerm(objective, fe, objScale, [&](unsigned s, unsigned t) {
        return fe.cost(fe.edge, s, t);
      });
    }
  // Shared reshards. Per value with several readers, kind of reshard
  // (PlanPricer::ReshardKind), source layout g and key L (the layout a
  // reader needs, or the one its gradient arrives in): r(g, L) >= [the
  // producer gives g and reader c's key is L] for every reader c with a
  // reshard of that kind, that indicator written exactly over the x and e
  // variables (addEdgeTerm), with the reshard's seconds on r. At integer x
  // the cheapest r is 1 exactly when some reader's key is L, so each reshard
  // is priced once, as PlanPricer::getReshardTime prices it. Values of
  // folded blocks whose readers map onto the same folded edges share their
  // r variables, with their count as multiplicity.
  if (!minimizeMemory) {
    using Kind = PlanPricer::ReshardKind;
    // (representative producer, result, kind, folded readers) -> values.
    std::map<std::tuple<unsigned, unsigned, Kind, std::vector<unsigned>>,
             double>
        sharedValues;
    for (unsigned n = 0; n < nodes.size(); ++n) {
      for (Kind kind : PlanPricer::kReshardKinds) {
        std::map<unsigned, std::vector<unsigned>> readers;
        for (unsigned i : graph.outEdges[n])
          if (perValue[i] && pricer.hasReshard(kind, edges[i]))
            readers[edges[i].result].push_back(edgeToFolded[i]);
        for (auto &entry : readers) {
          std::vector<unsigned> &ids = entry.second;
          llvm::sort(ids);
          ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
          sharedValues[{nodes[n].rep, entry.first, kind, ids}] += 1;
        }
      }
    }
    for (const auto &entry : sharedValues) {
      unsigned p = std::get<0>(entry.first), r = std::get<1>(entry.first);
      Kind kind = std::get<2>(entry.first);
      const std::vector<unsigned> &readers = std::get<3>(entry.first);
      double count = entry.second;
      const Node &producer = nodes[p];
      // Source layouts, each with a strategy that gives it.
      SmallVector<std::pair<Attribute, unsigned>> sources;
      for (unsigned s = 0; s < producer.strategies.size(); ++s) {
        Attribute layout = producer.strategies[s].results[r];
        if (llvm::none_of(sources, [&](const auto &source) {
              return source.first == layout;
            }))
          sources.push_back({layout, s});
      }
      // Keys: what any reader's strategy gives.
      llvm::SetVector<Attribute> keys;
      for (unsigned f : readers) {
        const Edge &edge = folded[f].edge;
        for (unsigned t = 0; t < nodes[edge.consumer].strategies.size(); ++t)
          keys.insert(pricer.getReshardKey(kind, edge, t));
      }
      const Edge &valueEdge = folded[readers.front()].edge;
      for (const auto &source : sources) {
        Attribute have = source.first;
        unsigned s0 = source.second;
        for (Attribute key : keys) {
          double seconds = pricer.getKeyedReshardTime(kind, valueEdge, s0,
                                                      cast<ShardingAttr>(key));
          if (seconds <= 0)
            continue;
          double cost = objScale * count * seconds;
          // Per reader, [producer gives `have` and the reader's key is
          // `key`].
          std::vector<Expr> needs;
          bool always = false;
          for (unsigned f : readers) {
            const FoldedEdge &fe = folded[f];
            Edge edge = fe.edge;
            Expr need;
            addEdgeTerm(need, fe, 1, [&](unsigned s, unsigned t) {
              return producer.strategies[s].results[r] == have &&
                             pricer.getReshardKey(kind, edge, t) == key
                         ? 1.0
                         : 0.0;
            });
            if (need.terms.empty())
              always |= need.constant > 0.5;
            else
              needs.push_back(std::move(need));
          }
          if (always) {
            objConstant += cost;
            continue;
          }
          if (needs.empty())
            continue;
          // One reader can have that key: the reshard is its own, priced
          // on its indicator directly.
          if (needs.size() == 1) {
            for (auto [term, c] : needs.front().terms)
              objective.terms[term] += cost * c;
            objective.constant += cost * needs.front().constant;
            continue;
          }
          int col = ilp.addVariable(cost, /*integer=*/false);
          for (const Expr &need : needs) {
            std::vector<int> cols{col};
            std::vector<double> coefs{1};
            for (auto [term, c] : need.terms) {
              cols.push_back(term);
              coefs.push_back(-c);
            }
            ilp.addRow(cols, coefs, 'G', need.constant);
          }
        }
      }
    }
  }

  for (auto [col, c] : objective.terms)
    ilp.addObjective(col, c);
  objConstant += objective.constant;

  // Memory rows, deduplicated.
  double scale = 1e-9; // gigabytes keep the coefficients well scaled
  int peakVar = -1;
  if (minimizeMemory)
    peakVar = ilp.addVariable(1.0, /*integer=*/false, 0, 1e30);
  if (memoryLimit >= 0 || minimizeMemory) {
    Expr base;
    for (auto [n, r] : graph.persistent) {
      unsigned rep = nodes[n].rep;
      for (unsigned s = 0; s < nodes[rep].strategies.size(); ++s)
        addX(base, rep, s,
             scale * graph.getStoredCopies(n) *
                 valueBytes(n, r, nodes[n].strategies[s].results[r]));
    }
    std::set<std::vector<std::pair<int, double>>> seen;
    auto addMemoryRow = [&](const Expr &row) {
      std::vector<std::pair<int, double>> key(row.terms.begin(),
                                              row.terms.end());
      key.push_back({-1, row.constant});
      if (!seen.insert(key).second)
        return;
      std::vector<int> cols;
      std::vector<double> coefs;
      for (auto [col, c] : row.terms) {
        cols.push_back(col);
        coefs.push_back(c);
      }
      if (minimizeMemory) {
        cols.push_back(peakVar);
        coefs.push_back(-1);
        ilp.addRow(cols, coefs, 'L', -row.constant);
      } else {
        ilp.addRow(cols, coefs, 'L', scale * memoryLimit - row.constant);
      }
    };
    auto add = [](Expr &into, const Expr &from) {
      for (auto [col, c] : from.terms)
        into.terms[col] += c;
      into.constant += from.constant;
    };
    // As PlanPricer::evaluate: a row for the op, and one per collective
    // with a scratch copy while the operands are resharded.
    for (const LivenessPoint &pt : graph.points) {
      Expr live = base, own;
      for (auto [n, r] : pt.live) {
        unsigned rep = nodes[n].rep;
        for (unsigned s = 0; s < nodes[rep].strategies.size(); ++s)
          addX(n == pt.node ? own : live, rep, s,
               scale * valueBytes(n, r, nodes[n].strategies[s].results[r]));
      }
      Expr copies;
      for (unsigned e : pt.transient) {
        const FoldedEdge &fe = folded[edgeToFolded[e]];
        const Edge &orig = edges[e];
        addEdgeTerm(copies, fe, scale, [&](unsigned s, unsigned t) {
          return transientBytes(orig, s, t);
        });
        Expr scratch;
        addEdgeTerm(scratch, fe, scale, [&](unsigned s, unsigned t) {
          return pricer.collectiveScratchBytes(orig, s, t);
        });
        if (scratch.terms.empty() && scratch.constant == 0)
          continue;
        // The op's own row covers this one when, whatever the choice, the
        // scratch is no larger than what the op then holds in its place
        // (its results and per-call buffers): leave it out.
        bool covered = true;
        const Node &consumer = nodes[orig.consumer];
        for (unsigned t = 0; t < consumer.strategies.size() && covered; ++t) {
          double held = pricer.scratchBytes(pt.node, t);
          for (auto [n, r] : pt.live)
            if (n == pt.node)
              held += valueBytes(n, r, consumer.strategies[t].results[r]);
          for (unsigned s = 0;
               s < nodes[orig.producer].strategies.size() && covered; ++s)
            covered = pricer.collectiveScratchBytes(orig, s, t) <= held;
        }
        if (covered)
          continue;
        Expr row = live;
        add(row, copies);
        add(row, scratch);
        addMemoryRow(row);
      }
      Expr row = live;
      add(row, own);
      add(row, copies);
      if (graph.nodes[pt.node].kind == NodeKind::Compute) {
        unsigned rep = nodes[pt.node].rep;
        for (unsigned s = 0; s < nodes[rep].strategies.size(); ++s)
          if (double scratch = pricer.scratchBytes(pt.node, s))
            addX(row, rep, s, scale * scratch);
      }
      addMemoryRow(row);
    }
  }

  SolvedProgram result;
  result.variables = ilp.getNumVariables();
  result.rows = ilp.getNumRows();
  IlpSolution sol;
  if (ilp.getNumVariables() == 0) {
    // Nothing to choose (a grid of one device).
    sol.status = IlpSolution::Status::Optimal;
    bool fits = true;
    for (const IlpProblem::Row &row : ilp.rows)
      fits &= row.sense != 'L' || row.rhs >= 0;
    if (!fits)
      sol.status = IlpSolution::Status::Infeasible;
  } else {
    // The cutoff in the program's units: the objective leaves out the part
    // no variable controls.
    double cutoff = cutoffSeconds >= 0 && !minimizeMemory
                        ? objScale * cutoffSeconds - objConstant
                        : std::numeric_limits<double>::infinity();
    sol = solveWithMemoryRows(ilp, memoryLimit >= 0 && !minimizeMemory,
                              timeLimitSeconds, cutoff);
  }
  result.status = sol.status;
  result.gap = sol.gap;
  result.objective = sol.objective + objConstant;
  if (sol.status != IlpSolution::Status::Optimal &&
      sol.status != IlpSolution::Status::Feasible)
    return result;
  std::vector<unsigned> repChoice(nodes.size(), 0);
  for (unsigned n = 0; n < nodes.size(); ++n) {
    if (nodes[n].rep != n || x[n][0] == -1)
      continue;
    for (unsigned s = 0; s < x[n].size(); ++s)
      if (sol.values[x[n][s]] > 0.5)
        repChoice[n] = s;
  }
  result.choice = graph.expand(repChoice);
  return result;
}
