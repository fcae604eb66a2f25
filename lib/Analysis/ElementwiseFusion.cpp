//===- ElementwiseFusion.cpp - elementwise chains run as one pass ---------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements the fused kernels of a block (ElementwiseFusion.h):
// the ops are visited last to first, so that every use of a value is placed
// in its kernel before the value's producer is considered.
//
//===----------------------------------------------------------------------===//

#include "autopar/Analysis/ElementwiseFusion.h"

#include "autopar/Analysis/Cluster.h"
#include "autopar/Dialect/Autopar/IR/Autopar.h"
#include "autopar/Dialect/Autopar/IR/OpTraits.h"

#include "mlir/IR/BuiltinTypes.h"

#include "llvm/ADT/SmallPtrSet.h"

#define DEBUG_TYPE "autopar-elementwise-fusion"

using namespace mlir;
using namespace mlir::autopar;

bool mlir::autopar::isFusibleElementwiseOp(Operation *op) {
  return isa<CostInterface>(op) && !isViewOp(op) &&
         classifyOp(op) == OpClass::Elementwise && op->getNumResults() == 1 &&
         isa<RankedTensorType>(op->getResult(0).getType());
}

bool mlir::autopar::isElementwiseFusionBarrier(Operation *op) {
  if (isa<SendOp, RecvOp, AssignOp>(op))
    return true;
  OpClass c = classifyOp(op);
  return isContractionClass(c) || c == OpClass::Reduction;
}

/// Bytes of a statically shaped tensor (0 otherwise).
static int64_t getTensorBytes(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  return tensor.getNumElements() *
         llvm::divideCeil(tensor.getElementTypeBitWidth(), 8);
}

bool ElementwiseFusion::holdsMore(Operation *producer,
                                  Operation *kernel) const {
  int64_t dying = 0;
  llvm::SmallPtrSet<Value, 4> seen;
  for (Value operand : producer->getOperands()) {
    // Weights, constants and runtime inputs are resident: they never die.
    Operation *def = operand.getDefiningOp();
    if (!def || isa<WeightOp, ConstantOp>(def) || !seen.insert(operand).second)
      continue;
    bool usedLater = llvm::any_of(operand.getUsers(), [&](Operation *user) {
      return user->getBlock() != kernel->getBlock() || user == kernel ||
             kernel->isBeforeInBlock(user) ||
             (producer->isBeforeInBlock(user) && getKernel(user) == kernel);
    });
    if (!usedLater)
      dying += getTensorBytes(operand.getType());
  }
  if (dying <= getTensorBytes(producer->getResult(0).getType()))
    return false;
  for (Operation *op = producer->getNextNode(); op && op != kernel;
       op = op->getNextNode())
    if (isElementwiseFusionBarrier(op))
      return true;
  return false;
}

ElementwiseFusion::ElementwiseFusion(Block &block) {
  for (Operation &op : llvm::reverse(block)) {
    if (!isFusibleElementwiseOp(&op))
      continue;
    Value value = op.getResult(0);
    auto type = cast<RankedTensorType>(value.getType());
    Operation *kernel = nullptr;
    bool fusible = !value.use_empty();
    for (Operation *user : value.getUsers()) {
      if (user->getBlock() != &block || !isFusibleElementwiseOp(user) ||
          cast<RankedTensorType>(user->getResult(0).getType()).getShape() !=
              type.getShape()) {
        fusible = false;
        break;
      }
      Operation *userKernel = getKernel(user);
      if (kernel && userKernel != kernel) {
        fusible = false;
        break;
      }
      kernel = userKernel;
    }
    if (!fusible || holdsMore(&op, kernel))
      continue;
    LLVM_DEBUG(llvm::dbgs() << "fused into the kernel at " << kernel->getLoc()
                            << ": " << op << "\n");
    fused.insert(value);
    kernelOf[&op] = kernel;
  }
  // Each kernel reads a value once, at its first read in program order.
  llvm::DenseMap<Operation *, llvm::SmallPtrSet<Value, 8>> readBy;
  for (Operation &op : block) {
    if (!isFusibleElementwiseOp(&op))
      continue;
    llvm::SmallPtrSet<Value, 8> &read = readBy[getKernel(&op)];
    for (OpOperand &operand : op.getOpOperands())
      if (isFused(operand.get()) || !read.insert(operand.get()).second)
        skippedReads.insert({&op, operand.getOperandNumber()});
  }
}
