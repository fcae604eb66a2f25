//===- ReshardSearch.cpp - cheapest sequence of collectives ---------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A reshard is a path in the graph of shardings of one value, where an edge
// is a single-step collective on one grid axis:
//
//   pending sum over a  -> summed             all_reduce      2(n-1)/n S
//   pending sum over a  -> a appended to d    reduce_scatter   (n-1)/n S
//   a last on d         -> gathered           all_gather       (n-1)/n S'
//   a last on d         -> a appended to e    all_to_all       (n-1)/n S
//   a unused            -> a appended to d    all_slice        0
//   a unused            -> pending sum        to_partial       0
//   a split or pending, b unused, |a| = |b|
//                       -> b takes a's place  swap_grid_axes   (n-1)/n S
//
// (S: local bytes before the step, S': after; n: size of axis a). Dijkstra
// finds the path with the fewest bytes per device, then the fewest steps.
// Only axes of the source or target sharding move, and a state is only
// reached when every split it implies divides, so every step is valid.
//
//===----------------------------------------------------------------------===//

#include "autopar/Analysis/Reshard.h"

#include "autopar/Dialect/Autopar/IR/ShardLayout.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"

#include <queue>

using namespace mlir;
using namespace mlir::autopar;

namespace {

/// A sharding during the search.
struct State {
  SmallVector<SmallVector<int64_t>> dims;
  SmallVector<int64_t> partial; ///< sorted

  std::string key() const {
    std::string k;
    for (const SmallVector<int64_t> &axes : dims) {
      for (int64_t a : axes)
        k += char('a' + a);
      k += '|';
    }
    k += 'p';
    for (int64_t a : partial)
      k += char('a' + a);
    return k;
  }
  bool uses(int64_t axis) const {
    if (llvm::is_contained(partial, axis))
      return true;
    return llvm::any_of(dims, [&](const SmallVector<int64_t> &axes) {
      return llvm::is_contained(axes, axis);
    });
  }
};

/// Cost of a path: bytes per device, then number of steps.
struct Cost {
  int64_t bytes = 0;
  int64_t steps = 0;
  bool operator<(const Cost &o) const {
    return std::tie(bytes, steps) < std::tie(o.bytes, o.steps);
  }
  bool operator>(const Cost &o) const { return o < *this; }
};

struct Node {
  State state;
  Cost cost;
  int64_t parent = -1;     ///< index in the node table
  ReshardStep::Kind kind{}; ///< step that reached this node
  int64_t axis = -1, dim = -1, otherDim = -1;
};

} // namespace

/// Local element count of `state`, or nullopt when a split does not divide.
static std::optional<int64_t> localElements(const State &state,
                                            ArrayRef<int64_t> shape,
                                            ArrayRef<int64_t> grid) {
  int64_t n = 1;
  for (auto [d, size] : llvm::enumerate(shape)) {
    int64_t parts = getGroupSize(state.dims[d], grid);
    if (size % parts != 0)
      return std::nullopt;
    n *= size / parts;
  }
  return n;
}

/// Merges runs of single-axis steps that one multi-axis collective does with
/// the same bytes and fewer messages: consecutive all-reduces, to-partials,
/// and gathers, slices or reduce-scatters of the same dimension.
static SmallVector<ReshardStep> mergeSteps(ArrayRef<ReshardStep> steps) {
  using Kind = ReshardStep::Kind;
  SmallVector<ReshardStep> merged;
  for (const ReshardStep &step : steps) {
    if (!merged.empty()) {
      ReshardStep &last = merged.back();
      bool sameKind = last.kind == step.kind && last.dim == step.dim;
      if (sameKind && (step.kind == Kind::AllReduce ||
                       step.kind == Kind::ToPartial)) {
        llvm::append_range(last.axes, step.axes);
        llvm::sort(last.axes);
        last.after = step.after;
        continue;
      }
      if (sameKind && (step.kind == Kind::AllSlice ||
                       step.kind == Kind::ReduceScatter)) {
        // Appended minor after major: the list is major first.
        llvm::append_range(last.axes, step.axes);
        last.after = step.after;
        continue;
      }
      if (sameKind && step.kind == Kind::AllGather) {
        // The minor axis was gathered first; the group lists major first.
        SmallVector<int64_t> axes(step.axes);
        llvm::append_range(axes, last.axes);
        last.axes = std::move(axes);
        last.after = step.after;
        continue;
      }
    }
    merged.push_back(step);
  }
  return merged;
}

std::optional<SmallVector<ReshardStep>> mlir::autopar::searchCheapestReshard(
    ShardingAttr from, ShardingAttr to, ArrayRef<int64_t> globalShape,
    int64_t elementBytes, ArrayRef<int64_t> gridShape, int64_t maxStates) {
  assert(from.getRank() == to.getRank() && "reshard keeps the rank");
  MLIRContext *ctx = from.getContext();
  State source{from.getDimsVector(), SmallVector<int64_t>(from.getPartial())};
  State target{to.getDimsVector(), SmallVector<int64_t>(to.getPartial())};
  std::string targetKey = target.key();
  if (!localElements(source, globalShape, gridShape) ||
      !localElements(target, globalShape, gridShape))
    return std::nullopt;

  llvm::SetVector<int64_t> axes;
  for (const State *s : {&source, &target}) {
    for (const SmallVector<int64_t> &dimAxes : s->dims)
      axes.insert(dimAxes.begin(), dimAxes.end());
    axes.insert(s->partial.begin(), s->partial.end());
  }
  int64_t rank = globalShape.size();

  std::vector<Node> nodes;
  llvm::StringMap<int64_t> best; // key -> node index with the best cost
  using Entry = std::pair<Cost, int64_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;

  auto push = [&](State state, Cost cost, int64_t parent,
                  ReshardStep::Kind kind, int64_t axis, int64_t dim,
                  int64_t otherDim) {
    llvm::sort(state.partial);
    if (!localElements(state, globalShape, gridShape))
      return;
    std::string key = state.key();
    auto it = best.find(key);
    if (it != best.end() && !(cost < nodes[it->second].cost))
      return;
    nodes.push_back(Node{std::move(state), cost, parent, kind, axis, dim,
                         otherDim});
    best[key] = nodes.size() - 1;
    queue.push({cost, (int64_t)nodes.size() - 1});
  };
  push(source, Cost{}, -1, ReshardStep::Kind::AllReduce, -1, -1, -1);

  int64_t found = -1;
  while (!queue.empty()) {
    auto [cost, index] = queue.top();
    queue.pop();
    if (best[nodes[index].state.key()] != index)
      continue; // superseded
    if (nodes[index].state.key() == targetKey) {
      found = index;
      break;
    }
    if ((int64_t)nodes.size() > maxStates)
      return std::nullopt;
    const State cur = nodes[index].state;
    int64_t bytes = *localElements(cur, globalShape, gridShape) * elementBytes;
    auto next = [&](const State &s, int64_t stepBytes, ReshardStep::Kind kind,
                    int64_t axis, int64_t dim, int64_t otherDim) {
      push(s, Cost{cost.bytes + stepBytes, cost.steps + 1}, index, kind, axis,
           dim, otherDim);
    };
    for (int64_t axis : axes) {
      int64_t n = gridShape[axis];
      // Point to point: another unused axis of the same size takes this
      // axis's place (in a dimension's list or among the pending sums).
      if (cur.uses(axis)) {
        for (int64_t other : axes) {
          if (other == axis || cur.uses(other) || gridShape[other] != n)
            continue;
          State swapped = cur;
          for (SmallVector<int64_t> &dimAxes : swapped.dims)
            llvm::replace(dimAxes, axis, other);
          llvm::replace(swapped.partial, axis, other);
          next(swapped, (n - 1) * bytes / n, ReshardStep::Kind::SwapAxes,
               axis, /*dim=*/-1, /*otherDim=*/other);
        }
      }
      if (llvm::is_contained(cur.partial, axis)) {
        State reduced = cur;
        llvm::erase_if(reduced.partial, [&](int64_t a) { return a == axis; });
        next(reduced, 2 * (n - 1) * bytes / n, ReshardStep::Kind::AllReduce,
             axis, -1, -1);
        for (int64_t d = 0; d < rank; ++d) {
          State scattered = reduced;
          scattered.dims[d].push_back(axis);
          next(scattered, (n - 1) * bytes / n,
               ReshardStep::Kind::ReduceScatter, axis, d, -1);
        }
        continue;
      }
      if (!cur.uses(axis)) {
        for (int64_t d = 0; d < rank; ++d) {
          State sliced = cur;
          sliced.dims[d].push_back(axis);
          next(sliced, 0, ReshardStep::Kind::AllSlice, axis, d, -1);
        }
        if (llvm::is_contained(target.partial, axis)) {
          State pending = cur;
          pending.partial.push_back(axis);
          next(pending, 0, ReshardStep::Kind::ToPartial, axis, -1, -1);
        }
        continue;
      }
      for (int64_t d = 0; d < rank; ++d) {
        if (cur.dims[d].empty() || cur.dims[d].back() != axis)
          continue;
        State gathered = cur;
        gathered.dims[d].pop_back();
        if (std::optional<int64_t> after =
                localElements(gathered, globalShape, gridShape))
          next(gathered, (n - 1) * *after * elementBytes / n,
               ReshardStep::Kind::AllGather, axis, d, -1);
        for (int64_t e = 0; e < rank; ++e) {
          if (e == d)
            continue;
          State moved = gathered;
          moved.dims[e].push_back(axis);
          next(moved, (n - 1) * bytes / n, ReshardStep::Kind::AllToAll, axis,
               d, e);
        }
      }
    }
  }
  if (found < 0)
    return std::nullopt;

  // Walk back to the source.
  SmallVector<ReshardStep> steps;
  for (int64_t index = found; nodes[index].parent >= 0;
       index = nodes[index].parent) {
    const Node &node = nodes[index];
    const Node &parent = nodes[node.parent];
    ReshardStep step;
    step.kind = node.kind;
    if (node.kind == ReshardStep::Kind::SwapAxes) {
      step.axes = {node.axis, node.otherDim};
    } else {
      step.axes = {node.axis};
      step.dim = node.dim;
      step.otherDim = node.otherDim;
    }
    step.before = ShardingAttr::get(ctx, parent.state.dims, parent.state.partial);
    step.after = ShardingAttr::get(ctx, node.state.dims, node.state.partial);
    steps.push_back(std::move(step));
  }
  std::reverse(steps.begin(), steps.end());
  return mergeSteps(steps);
}

SmallVector<ReshardStep> mlir::autopar::planCheapestReshard(
    ShardingAttr from, ShardingAttr to, ArrayRef<int64_t> globalShape,
    int64_t elementBytes, ArrayRef<int64_t> gridShape) {
  if (std::optional<SmallVector<ReshardStep>> steps = searchCheapestReshard(
          from, to, globalShape, elementBytes, gridShape))
    return std::move(*steps);
  return planReshard(from, to);
}
