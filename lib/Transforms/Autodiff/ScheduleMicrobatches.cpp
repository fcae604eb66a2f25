//===- ScheduleMicrobatches.cpp - a stage step in pipeline order ----------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements autopar-schedule-microbatches: the ops of a pipeline
// stage's training step (autopar-build-stage-step, then
// autopar-differentiate) are put in the order of the pipeline schedule, each
// microbatch's forward and backward pass as one group, so that program order
// is execution order: 1F1B keeps at most P - s microbatches' activations
// alive on stage s of P, and every stage sends and receives its boundary
// tensors in an order that cannot deadlock.
//
//===----------------------------------------------------------------------===//

#include "autopar/Transforms/Autodiff/Markers.h"
#include "autopar/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::autopar {
#define GEN_PASS_DEF_SCHEDULEMICROBATCHESPASS
#include "autopar/Transforms/Passes.h.inc"
} // namespace mlir::autopar

using namespace mlir;
using namespace mlir::autopar;

namespace {
struct ScheduleMicrobatchesPass
    : public mlir::autopar::impl::ScheduleMicrobatchesPassBase<
          ScheduleMicrobatchesPass> {
  using Base::Base;
  void runOnOperation() override;
};
} // namespace

/// One group of the schedule: the forward or backward pass of a microbatch.
struct Group {
  int64_t microbatch;
  bool backward;
};

/// The groups of stage `s` of `p` over `m` microbatches in `schedule` order.
static SmallVector<Group> getScheduleOrder(StringRef schedule, int64_t s,
                                           int64_t p, int64_t m) {
  SmallVector<Group> order;
  if (schedule == "gpipe") {
    for (int64_t j = 0; j < m; ++j)
      order.push_back({j, false});
    for (int64_t j = 0; j < m; ++j)
      order.push_back({j, true});
    return order;
  }
  // 1F1B: P - 1 - s warm-up forwards, then one forward and one backward in
  // turn, then the remaining backwards.
  int64_t warmup = std::min(p - 1 - s, m);
  for (int64_t j = 0; j < warmup; ++j)
    order.push_back({j, false});
  for (int64_t j = 0; j + warmup < m; ++j) {
    order.push_back({j + warmup, false});
    order.push_back({j, true});
  }
  for (int64_t j = m - warmup; j < m; ++j)
    order.push_back({j, true});
  return order;
}

void ScheduleMicrobatchesPass::runOnOperation() {
  ModuleOp module = getOperation();
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main || !main.getBody().hasOneBlock()) {
    module.emitError() << "expected a one-block function @main";
    return signalPassFailure();
  }
  if (schedule != "1f1b" && schedule != "gpipe") {
    module.emitError() << "unknown schedule '" << schedule
                       << "', expected 1f1b or gpipe";
    return signalPassFailure();
  }
  if (stages < 1 || stage < 0 || stage >= stages) {
    module.emitError() << "stage " << stage << " is not one of " << stages
                       << " stages";
    return signalPassFailure();
  }
  Block &body = main.getBody().front();
  Operation *ret = body.getTerminator();

  // Loads of one weight by several microbatches become one load before
  // them all: the step reads each weight once, and its gradients still add
  // up (autopar-differentiate summed them per load, in microbatch order).
  llvm::MapVector<std::pair<StringAttr, Type>, WeightOp> firstLoad;
  SmallVector<WeightOp> loads(main.getOps<WeightOp>());
  for (WeightOp w : loads) {
    auto [it, inserted] =
        firstLoad.try_emplace(std::make_pair(w.getNameAttr(), w.getType()), w);
    if (inserted) {
      w->removeAttr(kMicrobatchAttrName);
      w->moveBefore(&body.front());
      continue;
    }
    w.replaceAllUsesWith(it->second.getResult());
    w.erase();
  }

  // The groups, each in program order.
  int64_t m = 0;
  std::map<std::pair<int64_t, bool>, SmallVector<Operation *>> groups;
  SmallVector<Operation *> untagged;
  for (Operation &op : body.without_terminator()) {
    auto microbatch = op.getAttrOfType<IntegerAttr>(kMicrobatchAttrName);
    if (!microbatch) {
      untagged.push_back(&op);
      continue;
    }
    m = std::max(m, microbatch.getInt() + 1);
    groups[{microbatch.getInt(), op.hasAttr(kBackwardAttrName)}].push_back(&op);
  }

  // Emission: an op after the ops it reads. Ops of no group (the loss, the
  // gradient sums, the optimizer update) go as early as their operands
  // allow, except those with side effects (weight stores), which go last.
  DenseSet<Operation *> emitted;
  SmallVector<Operation *> order;
  std::function<void(Operation *)> emit = [&](Operation *op) {
    if (!emitted.insert(op).second)
      return;
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp();
          def && def->getBlock() == &body && !emitted.contains(def))
        emit(def);
    order.push_back(op);
  };
  auto emitReady = [&]() {
    for (Operation *op : untagged) {
      if (emitted.contains(op) || !isPure(op))
        continue;
      if (llvm::all_of(op->getOperands(), [&](Value v) {
            Operation *def = v.getDefiningOp();
            return !def || def->getBlock() != &body || emitted.contains(def);
          }))
        emit(op);
    }
  };
  emitReady();
  for (Group group : getScheduleOrder(schedule, stage, stages, m)) {
    auto it = groups.find({group.microbatch, group.backward});
    if (it == groups.end())
      continue;
    for (Operation *op : it->second)
      emit(op);
    emitReady();
  }
  for (Operation &op : body.without_terminator())
    emit(&op);
  for (Operation *op : order)
    op->moveBefore(ret);
  for (Operation &op : body.without_terminator()) {
    op.removeAttr(kMicrobatchAttrName);
    op.removeAttr(kBackwardAttrName);
  }
}
