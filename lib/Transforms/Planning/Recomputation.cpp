//===- Recomputation.cpp - activations recomputed, not stored -------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Regions:
//   - selective: every attention core, found from the graph's structure (a
//     contraction of two activations, Q x K^T, and the ops it reaches up to
//     and including the next such contraction, probabilities x V), so the
//     [b, a, s, s] scores, masks and probabilities are not stored while the
//     core's output (the context) is;
//   - full (k blocks): the first k repeated blocks in program order; a
//     block's results used only inside it are dropped, those that leave it
//     (the next block's input) stay stored.
//
//===----------------------------------------------------------------------===//

#include "Recomputation.h"

#include "autopar/Analysis/Cluster.h"
#include "autopar/Transforms/Autodiff/Markers.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <functional>
#include <set>

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::planning;

StringRef mlir::autopar::stringifyRecomputeKind(RecomputeKind kind) {
  switch (kind) {
  case RecomputeKind::None:
    return "none";
  case RecomputeKind::Selective:
    return "selective";
  case RecomputeKind::Full:
    return "full";
  }
  llvm_unreachable("unknown recomputation kind");
}

std::optional<RecomputeKind>
mlir::autopar::symbolizeRecomputeKind(StringRef name) {
  if (name == "none")
    return RecomputeKind::None;
  if (name == "selective")
    return RecomputeKind::Selective;
  if (name == "full")
    return RecomputeKind::Full;
  return std::nullopt;
}

std::string mlir::autopar::stringifyRecomputeSpec(const RecomputeSpec &spec) {
  std::string text = stringifyRecomputeKind(spec.kind).str();
  if (spec.kind == RecomputeKind::Full && spec.blocks >= 0)
    text += ":" + std::to_string(spec.blocks);
  return text;
}

std::optional<RecomputeSpec> mlir::autopar::parseRecomputeSpec(StringRef text) {
  auto [kindText, count] = text.split(':');
  std::optional<RecomputeKind> kind = symbolizeRecomputeKind(kindText);
  if (!kind)
    return std::nullopt;
  RecomputeSpec spec;
  spec.kind = *kind;
  if (!text.contains(':'))
    return spec;
  unsigned long long blocks;
  if (*kind != RecomputeKind::Full || count.getAsInteger(10, blocks))
    return std::nullopt;
  spec.blocks = int64_t(blocks);
  return spec;
}

std::vector<std::vector<unsigned>>
mlir::autopar::planning::findAttentionCores(const StrategyGraph &graph) {
  const std::vector<Node> &nodes = graph.nodes;
  // Whether a node's value depends on a runtime input (an activation).
  std::vector<bool> data(nodes.size(), false);
  for (unsigned n = 0; n < nodes.size(); ++n) {
    if (nodes[n].kind == NodeKind::Input)
      data[n] = true;
    else if (nodes[n].kind == NodeKind::Compute)
      for (auto [p, r] : nodes[n].operands)
        data[n] = data[n] || data[p];
  }
  auto isActivationContraction = [&](unsigned n) {
    const Node &node = nodes[n];
    if (node.kind != NodeKind::Compute ||
        (node.opClass != OpClass::MatMul &&
         node.opClass != OpClass::BatchedMatMul))
      return false;
    unsigned dataOperands = 0;
    for (auto [p, r] : node.operands)
      dataOperands += data[p];
    return dataOperands >= 2;
  };
  std::vector<std::vector<unsigned>> cores;
  for (unsigned seed : graph.sequence) {
    if (!isActivationContraction(seed))
      continue;
    std::set<unsigned> region{seed};
    std::vector<unsigned> work{seed};
    bool closed = true;
    while (!work.empty() && closed) {
      unsigned n = work.back();
      work.pop_back();
      for (unsigned e : graph.outEdges[n]) {
        unsigned c = graph.edges[e].consumer;
        if (nodes[c].kind != NodeKind::Compute) {
          closed = false; // reaches an output
          break;
        }
        if (!region.insert(c).second)
          continue;
        // The closing contraction belongs to the core (its backward pass
        // needs the probabilities), but what it produces leaves the core.
        if (!isActivationContraction(c))
          work.push_back(c);
      }
    }
    if (closed && region.size() > 1)
      cores.emplace_back(region.begin(), region.end());
  }
  return cores;
}

FailureOr<RecomputeRegions> mlir::autopar::planning::applyRecomputation(
    StrategyGraph &graph, ArrayRef<FoldedBlock> blocks,
    const RecomputeSpec &spec, Location loc) {
  RecomputeRegions result;
  for (const FoldedBlock &b : blocks)
    result.availableBlocks += b.repeats;
  graph.recomputed.assign(graph.nodes.size(), false);
  graph.points.resize(graph.numProgramPoints);
  graph.persistent = graph.parameters;
  if (graph.options.mode != PlanMode::Training ||
      spec.kind == RecomputeKind::None) {
    graph.persistent.append(graph.activations.begin(), graph.activations.end());
    return result;
  }
  if (spec.kind == RecomputeKind::Selective) {
    result.regions = findAttentionCores(graph);
    if (result.regions.empty())
      return emitError(loc)
             << "selective recomputation needs an attention core (a "
                "contraction of two activations followed by ops that lead "
                "only to another one), and this model has none";
  } else if (result.availableBlocks == 0 && graph.options.singleBlockStage) {
    // A pipeline stage of one block: the stage is the block.
    result.availableBlocks = 1;
    if (spec.blocks > 1)
      return emitError(loc) << "full recomputation of " << spec.blocks
                            << " blocks, but the stage holds 1 repeated block";
    if (spec.blocks != 0)
      result.regions.emplace_back(graph.sequence.begin(), graph.sequence.end());
  } else {
    if (result.availableBlocks == 0)
      return emitError(loc) << "full recomputation recomputes repeated "
                               "blocks, and this model has none";
    int64_t k = spec.blocks < 0 ? result.availableBlocks : spec.blocks;
    if (k > int64_t(result.availableBlocks))
      return emitError(loc)
             << "full recomputation of " << k << " blocks, but the model has "
             << result.availableBlocks << " repeated blocks";
    for (const FoldedBlock &b : blocks)
      for (unsigned i = 0; i < b.repeats && int64_t(result.regions.size()) < k;
           ++i) {
        std::vector<unsigned> region;
        for (unsigned q = 0; q < b.period; ++q)
          region.push_back(graph.sequence[b.start + i * b.period + q]);
        result.regions.push_back(std::move(region));
      }
  }
  // Whether every use of (n, r), through views of it, is inside `members`.
  std::function<bool(unsigned, unsigned, const std::set<unsigned> &)>
      usedOnlyInside =
          [&](unsigned n, unsigned r, const std::set<unsigned> &members) {
            for (unsigned e : graph.outEdges[n]) {
              const Edge &edge = graph.edges[e];
              if (edge.result != r)
                continue;
              if (!members.count(edge.consumer))
                return false;
              const Node &c = graph.nodes[edge.consumer];
              if (c.kind == NodeKind::Compute && isViewOp(c.op))
                for (unsigned cr = 0; cr < c.results.size(); ++cr)
                  if (!usedOnlyInside(edge.consumer, cr, members))
                    return false;
            }
            return true;
          };
  // A region's results used only inside it are dropped from the stored
  // activations and live during its backward pass.
  std::set<std::pair<unsigned, unsigned>> dropped;
  for (const std::vector<unsigned> &region : result.regions) {
    std::set<unsigned> members(region.begin(), region.end());
    LivenessPoint working;
    working.node = region.front();
    for (unsigned n : region) {
      graph.recomputed[n] = true;
      for (unsigned r = 0; r < graph.nodes[n].results.size(); ++r)
        if (usedOnlyInside(n, r, members))
          dropped.insert({n, r});
    }
    for (auto v : graph.activations)
      if (members.count(v.first) && dropped.count(v))
        working.live.push_back(v);
    graph.points.push_back(std::move(working));
  }
  for (auto v : graph.activations)
    if (!dropped.count(v))
      graph.persistent.push_back(v);
  return result;
}

LogicalResult mlir::autopar::markRecomputeRegions(ModuleOp module,
                                                  const RecomputeSpec &spec,
                                                  bool singleBlockStage) {
  if (spec.kind == RecomputeKind::None)
    return success();
  auto func = module.lookupSymbol<func::FuncOp>("main");
  if (!func)
    return module.emitError() << "expected a function @main to recompute";
  AutoPlanOptions options;
  options.gridShape = {1};
  options.mode = PlanMode::Training;
  options.recompute = spec;
  options.singleBlockStage = singleBlockStage;
  StrategyGraph graph(func, options);
  if (failed(graph.build()))
    return failure();
  std::vector<FoldedBlock> blocks = foldRepeatedBlocks(graph, false);
  FailureOr<RecomputeRegions> regions =
      applyRecomputation(graph, blocks, spec, func.getLoc());
  if (failed(regions))
    return failure();
  Builder b(module.getContext());
  for (auto [index, region] : llvm::enumerate(regions->regions))
    for (unsigned n : region)
      graph.nodes[n].op->setAttr(kRecomputeRegionAttrName,
                                 b.getI64IntegerAttr(index));
  return success();
}
