//===- MixedPrecision.cpp - what a training step keeps in f32 ------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "autopar/Transforms/Autodiff/MixedPrecision.h"

#include "autopar/Dialect/Autopar/IR/Autopar.h"
#include "autopar/Transforms/Autodiff/Markers.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"

using namespace mlir;
using namespace mlir::autopar;

bool mlir::autopar::movesDataOnly(Operation *op) {
  if (isa<shard::ShardDialect>(op->getDialect()))
    return true;
  return isa<TransposeOp, ReshapeOp, ExpandOp, ConcatOp, SplitOp, SliceOp,
             GatherOp, GatherElementsOp, ScatterElementsOp, ScatterNDOp, PadOp,
             ToPartialOp, SwapGridAxesOp, SendOp, RecvOp>(op);
}

llvm::StringSet<> mlir::autopar::getAssignedWeights(Block &body) {
  llvm::StringSet<> names;
  for (auto assign : body.getOps<AssignOp>())
    if (auto weight = assign.getWeight().getDefiningOp<WeightOp>())
      names.insert(weight.getName());
  return names;
}

llvm::DenseSet<Operation *>
mlir::autopar::getMasterRegion(Block &body, const llvm::StringSet<> &assigned) {
  llvm::DenseSet<Operation *> region;
  if (body.getOps<AssignOp>().empty())
    return region;
  for (Operation &op : body)
    if (isa<AssignOp, func::ReturnOp>(op) ||
        op.hasAttr(kOptimizerUpdateAttrName) ||
        op.hasAttr(kGradientExchangeAttrName))
      region.insert(&op);
  llvm::DenseSet<Operation *> seeds = region;
  auto isCollective = [](Operation *op) {
    return isa<shard::ShardDialect>(op->getDialect());
  };
  auto allUsersIn = [](Operation *op, auto &&pred) {
    return !op->use_empty() && llvm::all_of(op->getUsers(), pred);
  };
  // Ops that compute, in reverse program order: users come after their
  // producers in a single block, so one pass reaches the fixed point.
  for (Operation &op : llvm::reverse(body)) {
    if (region.contains(&op) || isa<WeightOp, ConstantOp>(op) ||
        movesDataOnly(&op))
      continue;
    if (allUsersIn(&op, [&](Operation *user) {
          return region.contains(user) ||
                 (isCollective(user) && allUsersIn(user, [&](Operation *next) {
                    return region.contains(next);
                  }));
        }))
      region.insert(&op);
  }
  // A collective only the region reads that carries no gradient (the
  // loss's sum over devices) joins too: the loss stays f32 to the end.
  llvm::DenseSet<Operation *> reachesUpdate;
  for (Operation &op : llvm::reverse(body))
    if (isa<AssignOp>(op) || op.hasAttr(kOptimizerUpdateAttrName) ||
        llvm::any_of(op.getUsers(), [&](Operation *user) {
          return reachesUpdate.contains(user);
        }))
      reachesUpdate.insert(&op);
  for (Operation &op : llvm::reverse(body))
    if (isCollective(&op) && !reachesUpdate.contains(&op) &&
        allUsersIn(&op, [&](Operation *user) { return region.contains(user); }))
      region.insert(&op);
  // Ops moving data (collectives included) join when they move master
  // data only to the region: the largest such set, found by dropping
  // violators from every candidate until none is left (a chain of them
  // joins as a whole). A boundary send or receive never joins unmarked:
  // its peer stage must agree on the type, and it sees only its own side.
  llvm::DenseSet<Operation *> moving;
  for (Operation &op : body)
    if (!region.contains(&op) && movesDataOnly(&op) &&
        !isa<SendOp, RecvOp>(op) && !op.use_empty())
      moving.insert(&op);
  auto isMaster = [&](Value value) {
    if (!isa<FloatType>(getElementTypeOrSelf(value.getType())))
      return true;
    Operation *def = value.getDefiningOp();
    if (!def)
      return false;
    if (auto weight = dyn_cast<WeightOp>(def))
      return assigned.contains(weight.getName());
    return isa<ConstantOp>(def) || seeds.contains(def) || moving.contains(def);
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (Operation &op : body) {
      if (!moving.contains(&op))
        continue;
      bool usersOk = llvm::all_of(op.getUsers(), [&](Operation *user) {
        return region.contains(user) || moving.contains(user);
      });
      if (usersOk && llvm::all_of(op.getOperands(), isMaster))
        continue;
      moving.erase(&op);
      changed = true;
    }
  }
  region.insert(moving.begin(), moving.end());
  return region;
}
