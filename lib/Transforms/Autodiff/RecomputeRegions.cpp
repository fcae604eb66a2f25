//===- RecomputeRegions.cpp - activation recomputation -------------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements autopar-recompute-regions: the backward pass of a
// training step reads clones of the recomputed regions' forward ops instead
// of their stored results (Korthikanti et al. 2022).
//
//===----------------------------------------------------------------------===//

#include "autopar/Transforms/Autodiff/Markers.h"
#include "autopar/Transforms/Passes.h"

#include "autopar/Dialect/Autopar/IR/Autopar.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::autopar {
#define GEN_PASS_DEF_RECOMPUTEREGIONSPASS
#include "autopar/Transforms/Passes.h.inc"
} // namespace mlir::autopar

using namespace mlir;
using namespace mlir::autopar;

namespace {
struct RecomputeRegionsPass
    : public mlir::autopar::impl::RecomputeRegionsPassBase<
          RecomputeRegionsPass> {
  using Base::Base;
  void runOnOperation() override;
};
} // namespace

/// The region of a forward op, if it is in one.
static std::optional<int64_t> getRegion(Operation *op) {
  if (!op || op->hasAttr(kBackwardAttrName))
    return std::nullopt;
  auto region = op->getAttrOfType<IntegerAttr>(kRecomputeRegionAttrName);
  if (!region)
    return std::nullopt;
  return region.getInt();
}

/// Whether the backward pass recomputes `value` rather than reading it: a
/// pure region op's result that depends on the step's data (`activations`:
/// what weights and constants alone give, such as a transposed weight, is
/// the same for every microbatch and kept) and that no forward op outside
/// the region reads (what leaves the region is stored).
static bool isRecomputed(Value value,
                         const llvm::DenseSet<Operation *> &activations) {
  Operation *def = value.getDefiningOp();
  std::optional<int64_t> region = getRegion(def);
  if (!region || !isPure(def) || !activations.contains(def))
    return false;
  for (Operation *user : value.getUsers()) {
    if (user->hasAttr(kBackwardAttrName) || user->hasAttr(kRecomputedAttrName))
      continue;
    if (getRegion(user) != region)
      return false;
  }
  return true;
}

void RecomputeRegionsPass::runOnOperation() {
  ModuleOp module = getOperation();
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main || !main.getBody().hasOneBlock()) {
    module.emitError() << "expected a one-block function @main";
    return signalPassFailure();
  }
  Block &body = main.getBody().front();
  MLIRContext *ctx = &getContext();
  // Ops whose results depend on the step's inputs or received tensors.
  llvm::DenseSet<Operation *> activations;
  for (Operation &op : body)
    if (isa<RecvOp>(op) || llvm::any_of(op.getOperands(), [&](Value v) {
          Operation *def = v.getDefiningOp();
          return !def || activations.contains(def);
        }))
      activations.insert(&op);
  DenseMap<Value, Value> clones;
  OpBuilder b(ctx);
  // The clone of a recomputed value, built (with the clones of the
  // recomputed values it reads) before the builder's insertion point.
  std::function<Value(Value)> recompute = [&](Value value) -> Value {
    if (Value done = clones.lookup(value))
      return done;
    Operation *def = value.getDefiningOp();
    SmallVector<Value> operands;
    for (Value operand : def->getOperands())
      operands.push_back(isRecomputed(operand, activations) ? recompute(operand)
                                                            : operand);
    Operation *copy = b.clone(*def);
    copy->setOperands(operands);
    copy->removeAttr(kRecomputeRegionAttrName);
    copy->setAttr(kBackwardAttrName, UnitAttr::get(ctx));
    copy->setAttr(kRecomputedAttrName, UnitAttr::get(ctx));
    ++numRecomputed;
    for (auto [original, cloned] :
         llvm::zip(def->getResults(), copy->getResults()))
      clones[original] = cloned;
    return clones.lookup(value);
  };
  SmallVector<Operation *> backward;
  for (Operation &op : body)
    if (op.hasAttr(kBackwardAttrName))
      backward.push_back(&op);
  for (Operation *op : backward) {
    b.setInsertionPoint(op);
    for (OpOperand &operand : op->getOpOperands())
      if (isRecomputed(operand.get(), activations))
        operand.set(recompute(operand.get()));
  }
  for (Operation &op : body)
    op.removeAttr(kRecomputeRegionAttrName);
}
