//===- Reshard.cpp - decomposing a reshard into collectives ---------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A sharding splits dimension d over an ordered list of grid axes (major
// first). Gathering is only correct for a *suffix* of that list and slicing
// only appends to it, so a reshard first brings every dimension's list down to
// the common prefix with the target (all-gather, or all-to-all when the axis
// reappears as the minor split of another dimension), then appends the
// target's remaining axes (all-slice). Pending sums are reduced before
// anything moves, on the smallest tensor possible (reduce-scatter when the
// target splits a dimension over the reduced axes).
//
//===----------------------------------------------------------------------===//

#include "autopar/Analysis/Reshard.h"

#include "autopar/Dialect/Autopar/IR/ShardLayout.h"

using namespace mlir;
using namespace mlir::autopar;

StringRef mlir::autopar::stringifyReshardKind(ReshardStep::Kind kind) {
  switch (kind) {
  case ReshardStep::Kind::AllReduce:
    return "all_reduce";
  case ReshardStep::Kind::ReduceScatter:
    return "reduce_scatter";
  case ReshardStep::Kind::AllGather:
    return "all_gather";
  case ReshardStep::Kind::AllToAll:
    return "all_to_all";
  case ReshardStep::Kind::AllSlice:
    return "all_slice";
  case ReshardStep::Kind::ToPartial:
    return "to_partial";
  case ReshardStep::Kind::SwapAxes:
    return "swap_grid_axes";
  }
  llvm_unreachable("unknown reshard kind");
}

namespace {
/// Mutable sharding while steps are planned.
struct State {
  SmallVector<SmallVector<int64_t>> dims;
  SmallVector<int64_t> partial;
  ShardingAttr get(MLIRContext *ctx) const {
    return ShardingAttr::get(ctx, dims, partial);
  }
};
} // namespace

static bool isPrefix(ArrayRef<int64_t> prefix, ArrayRef<int64_t> list) {
  return prefix.size() <= list.size() &&
         list.take_front(prefix.size()) == prefix;
}

static size_t commonPrefix(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n])
    ++n;
  return n;
}

SmallVector<ReshardStep> mlir::autopar::planReshard(ShardingAttr from,
                                                    ShardingAttr to) {
  assert(from.getRank() == to.getRank() && "reshard keeps the rank");
  MLIRContext *ctx = from.getContext();
  State cur{from.getDimsVector(), SmallVector<int64_t>(from.getPartial())};
  SmallVector<SmallVector<int64_t>> target = to.getDimsVector();
  ArrayRef<int64_t> targetPartial = to.getPartial();
  SmallVector<ReshardStep> steps;
  auto push = [&](ReshardStep::Kind kind, SmallVector<int64_t> axes,
                  int64_t dim, int64_t otherDim, auto mutate) {
    ReshardStep step{kind, std::move(axes), dim, otherDim, cur.get(ctx), {}};
    mutate();
    step.after = cur.get(ctx);
    steps.push_back(std::move(step));
  };
  int64_t rank = from.getRank();

  // 1. Pending sums the target does not keep.
  SmallVector<int64_t> reduce;
  for (int64_t axis : cur.partial)
    if (!llvm::is_contained(targetPartial, axis))
      reduce.push_back(axis);
  if (!reduce.empty()) {
    for (int64_t d = 0; d < rank; ++d) {
      if (!isPrefix(cur.dims[d], target[d]))
        continue;
      ArrayRef<int64_t> extra = ArrayRef(target[d]).drop_front(cur.dims[d].size());
      // The longest run of reduced axes that the target appends to d.
      SmallVector<int64_t> scatter;
      for (int64_t axis : extra) {
        if (!llvm::is_contained(reduce, axis))
          break;
        scatter.push_back(axis);
      }
      if (scatter.empty())
        continue;
      push(ReshardStep::Kind::ReduceScatter, scatter, d, -1, [&] {
        llvm::append_range(cur.dims[d], scatter);
        llvm::erase_if(cur.partial, [&](int64_t a) {
          return llvm::is_contained(scatter, a);
        });
      });
      llvm::erase_if(reduce,
                     [&](int64_t a) { return llvm::is_contained(scatter, a); });
      break;
    }
    if (!reduce.empty())
      push(ReshardStep::Kind::AllReduce, reduce, -1, -1, [&] {
        llvm::erase_if(cur.partial, [&](int64_t a) {
          return llvm::is_contained(reduce, a);
        });
      });
  }

  // 2. Minor axes that move to another dimension: all-to-all.
  for (int64_t d = 0; d < rank; ++d) {
    while (!isPrefix(cur.dims[d], target[d]) && !cur.dims[d].empty()) {
      int64_t axis = cur.dims[d].back();
      int64_t to = -1;
      for (int64_t e = 0; e < rank; ++e) {
        if (e == d || !isPrefix(cur.dims[e], target[e]))
          continue;
        if (target[e].size() > cur.dims[e].size() &&
            target[e][cur.dims[e].size()] == axis)
          to = e;
      }
      if (to < 0)
        break;
      push(ReshardStep::Kind::AllToAll, {axis}, d, to, [&] {
        cur.dims[d].pop_back();
        cur.dims[to].push_back(axis);
      });
    }
  }

  // 3. Gather every dimension down to its common prefix with the target.
  for (int64_t d = 0; d < rank; ++d) {
    size_t keep = commonPrefix(cur.dims[d], target[d]);
    if (keep == cur.dims[d].size())
      continue;
    SmallVector<int64_t> axes(ArrayRef(cur.dims[d]).drop_front(keep));
    push(ReshardStep::Kind::AllGather, axes, d, -1,
         [&] { cur.dims[d].resize(keep); });
  }

  // 4. Slice locally to the target's splits.
  for (int64_t d = 0; d < rank; ++d) {
    if (cur.dims[d].size() == target[d].size())
      continue;
    SmallVector<int64_t> axes(ArrayRef(target[d]).drop_front(cur.dims[d].size()));
    push(ReshardStep::Kind::AllSlice, axes, d, -1,
         [&] { cur.dims[d] = target[d]; });
  }

  // 5. New pending sums.
  SmallVector<int64_t> add;
  for (int64_t axis : targetPartial)
    if (!llvm::is_contained(cur.partial, axis))
      add.push_back(axis);
  if (!add.empty())
    push(ReshardStep::Kind::ToPartial, add, -1, -1, [&] {
      llvm::append_range(cur.partial, add);
      llvm::sort(cur.partial);
    });
  assert(cur.get(ctx) == to && "reshard reaches its target");
  return steps;
}

int64_t mlir::autopar::getReshardStepBytes(const ReshardStep &step,
                                           ArrayRef<int64_t> globalShape,
                                           int64_t elementBytes,
                                           ArrayRef<int64_t> gridShape) {
  auto localBytes = [&](ShardingAttr sharding) {
    int64_t n = elementBytes;
    for (auto [d, size] : llvm::enumerate(globalShape))
      n *= size / getGroupSize(sharding.getDimAxes(d), gridShape);
    return n;
  };
  int64_t n = step.kind == ReshardStep::Kind::SwapAxes
                  ? gridShape[step.axes.front()]
                  : getGroupSize(step.axes, gridShape);
  switch (step.kind) {
  case ReshardStep::Kind::AllReduce:
    return 2 * (n - 1) * localBytes(step.before) / n;
  case ReshardStep::Kind::ReduceScatter:
  case ReshardStep::Kind::AllToAll:
  case ReshardStep::Kind::SwapAxes:
    return (n - 1) * localBytes(step.before) / n;
  case ReshardStep::Kind::AllGather:
    return (n - 1) * localBytes(step.after) / n;
  case ReshardStep::Kind::AllSlice:
  case ReshardStep::Kind::ToPartial:
    return 0;
  }
  llvm_unreachable("unknown reshard kind");
}
