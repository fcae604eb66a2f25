//===- BlockFolding.cpp - repeated blocks share a strategy ----------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "BlockFolding.h"

#include "llvm/ADT/Hashing.h"

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::planning;
namespace json = llvm::json;

/// The attributes that make two ops the same op of two repeated blocks. A
/// random op's key differs from block to block (each node draws its own
/// values) without changing its strategies or cost, so it is left out.
static DictionaryAttr getStructuralAttrs(Operation *op) {
  DictionaryAttr attrs = op->getAttrDictionary();
  if (!op->hasTrait<UsesGlobalPosition>() || !attrs.contains("seed"))
    return attrs;
  NamedAttrList list(attrs);
  list.erase("seed");
  return list.getDictionary(op->getContext());
}

std::vector<FoldedBlock>
mlir::autopar::planning::foldRepeatedBlocks(StrategyGraph &graph, bool share) {
  std::vector<Node> &nodes = graph.nodes;
  const std::vector<unsigned> &sequence = graph.sequence;
  std::vector<FoldedBlock> blocks;
  size_t n = sequence.size();
  if (n < 2)
    return blocks;
  // Structural signature of each compute op: name, attributes, types, and
  // the kinds of its producers.
  std::vector<llvm::hash_code> sig(n);
  for (size_t i = 0; i < n; ++i) {
    const Node &node = nodes[sequence[i]];
    Operation *op = node.op;
    llvm::hash_code h =
        llvm::hash_combine(op->getName().getStringRef(),
                           getStructuralAttrs(op).getAsOpaquePointer());
    for (Type t : op->getOperandTypes())
      h = llvm::hash_combine(h, t.getAsOpaquePointer());
    for (Type t : op->getResultTypes())
      h = llvm::hash_combine(h, t.getAsOpaquePointer());
    for (auto [p, r] : node.operands) {
      const Node &pn = nodes[p];
      // Inputs and op results both count as activations (the first block
      // reads a graph input where later blocks read an op result).
      NodeKind kind = pn.kind == NodeKind::Input ? NodeKind::Compute : pn.kind;
      h = llvm::hash_combine(h, (int)kind, r);
      if (pn.kind == NodeKind::Constant)
        h = llvm::hash_combine(h,
                               pn.op->getAttrDictionary().getAsOpaquePointer());
    }
    sig[i] = h;
  }
  // Ops i and j = i + period correspond when their signatures agree and each
  // operand comes from the same relative position, or the same value.
  auto matches = [&](size_t i, size_t j, size_t period) {
    if (sig[i] != sig[j])
      return false;
    const Node &a = nodes[sequence[i]];
    const Node &b = nodes[sequence[j]];
    // Shared variables need identical strategy lists (the signature makes
    // this so; a hash collision must not break it).
    if (a.op->getName() != b.op->getName() ||
        a.strategies.size() != b.strategies.size() ||
        getStructuralAttrs(a.op) != getStructuralAttrs(b.op) ||
        a.op->getOperandTypes() != b.op->getOperandTypes() ||
        a.op->getResultTypes() != b.op->getResultTypes())
      return false;
    for (unsigned o = 0; o < a.operands.size(); ++o) {
      auto [pa, ra] = a.operands[o];
      auto [pb, rb] = b.operands[o];
      if (pa == pb)
        continue;
      const Node &na = nodes[pa];
      const Node &nb = nodes[pb];
      // The first block reads a graph input where later ones read the
      // previous block's output.
      if (na.kind == NodeKind::Input && nb.kind == NodeKind::Compute &&
          nb.seqPos < j)
        continue;
      if (na.kind != nb.kind || ra != rb)
        return false;
      if (na.kind == NodeKind::Compute) {
        if (nb.seqPos != na.seqPos + period)
          return false;
      } else if (na.kind == NodeKind::Input) {
        return false;
      }
      // Weights and constants of the same type (and value) correspond.
    }
    return true;
  };
  std::vector<bool> covered(n, false);
  for (int round = 0; round < 8; ++round) {
    size_t bestCover = 0, bestStart = 0, bestPeriod = 0, bestRepeats = 0;
    for (size_t period = 1; period <= n / 2; ++period) {
      size_t run = 0;
      for (size_t i = 0; i + period < n; ++i) {
        bool ok = !covered[i] && !covered[i + period] &&
                  matches(i, i + period, period);
        run = ok ? run + 1 : 0;
        // A run of `run` matches ending at i covers [i-run+1, i+period].
        if (run >= period) {
          size_t repeats = run / period + 1;
          size_t cover = repeats * period;
          size_t start = i + 1 - run;
          if (cover > bestCover ||
              (cover == bestCover && period < bestPeriod)) {
            bestCover = cover;
            bestStart = start;
            bestPeriod = period;
            bestRepeats = repeats;
          }
        }
      }
    }
    // Fold only what saves a meaningful amount of work.
    if (bestRepeats < 2 || bestCover - bestPeriod < 4)
      break;
    blocks.push_back(
        {(unsigned)bestStart, (unsigned)bestPeriod, (unsigned)bestRepeats});
    for (size_t k = 0; k < bestRepeats * bestPeriod; ++k)
      covered[bestStart + k] = true;
    for (size_t k = 1; share && k < bestRepeats; ++k)
      for (size_t q = 0; q < bestPeriod; ++q) {
        unsigned repNode = sequence[bestStart + q];
        unsigned member = sequence[bestStart + k * bestPeriod + q];
        nodes[member].rep = repNode;
        // Weights and constants used at the same operand follow.
        for (unsigned o = 0; o < nodes[member].operands.size(); ++o) {
          unsigned pm = nodes[member].operands[o].first;
          unsigned pr = nodes[repNode].operands[o].first;
          NodeKind kind = nodes[pm].kind;
          if (pm == pr ||
              (kind != NodeKind::Weight && kind != NodeKind::Constant))
            continue;
          if (nodes[pm].rep == pm && nodes[pr].rep == pr &&
              nodes[pm].strategies.size() == nodes[pr].strategies.size())
            nodes[pm].rep = pr;
        }
      }
  }
  llvm::sort(blocks, [](const FoldedBlock &a, const FoldedBlock &b) {
    return a.start < b.start;
  });
  return blocks;
}

json::Array
mlir::autopar::planning::describeBlocks(const StrategyGraph &graph,
                                        ArrayRef<FoldedBlock> blocks) {
  const std::vector<Node> &nodes = graph.nodes;
  const std::vector<unsigned> &sequence = graph.sequence;
  json::Array out;
  for (const FoldedBlock &b : blocks) {
    const Node &first = nodes[sequence[b.start]];
    const Node &last = nodes[sequence[b.start + b.period - 1]];
    out.push_back(json::Object{{"first_node", first.name},
                               {"last_node", last.name},
                               {"ops_per_block", (int64_t)b.period},
                               {"repeats", (int64_t)b.repeats}});
  }
  return out;
}
