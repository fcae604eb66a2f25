//===- FreeBuffersEarly.cpp - dealloc buffers after their last use --------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements autopar-free-buffers-early: the deallocation pipeline
// frees a straight-line program's buffers at the end of the function; this
// pass frees each right after the last use of the buffer or an alias.
//
//===----------------------------------------------------------------------===//

#include "autopar/Transforms/Lowering/Passes.h"

#include "mlir/Dialect/Bufferization/Transforms/BufferViewFlowAnalysis.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir::autopar {
#define GEN_PASS_DEF_FREEBUFFERSEARLYPASS
#include "autopar/Transforms/Lowering/Passes.h.inc"
} // namespace mlir::autopar

using namespace mlir;
using namespace mlir::autopar;

namespace {

struct FreeBuffersEarlyPass
    : public autopar::impl::FreeBuffersEarlyPassBase<FreeBuffersEarlyPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    BufferViewFlowAnalysis aliases(func);
    SmallVector<memref::DeallocOp> deallocs;
    func.walk([&](memref::DeallocOp dealloc) { deallocs.push_back(dealloc); });
    for (memref::DeallocOp dealloc : deallocs) {
      Value buffer = dealloc.getMemref();
      auto alloc = buffer.getDefiningOp<memref::AllocOp>();
      Block *block = dealloc->getBlock();
      if (!alloc || alloc->getBlock() != block)
        continue;
      Operation *last = alloc;
      bool escapes = false;
      // Weights and runtime inputs stay resident for the whole step, as a
      // serving process keeps them (and as the cost model counts them).
      bool resident = false;
      for (Value alias : aliases.resolve(buffer))
        for (Operation *user : alias.getUsers())
          if (auto call = dyn_cast<func::CallOp>(user))
            resident |=
                call.getCallee().starts_with("autopar_rt_load_weight") ||
                call.getCallee().starts_with("autopar_rt_read_input");
      if (resident)
        continue;
      for (Value alias : aliases.resolve(buffer)) {
        for (Operation *user : alias.getUsers()) {
          if (user == dealloc.getOperation())
            continue;
          Operation *ancestor = block->findAncestorOpInBlock(*user);
          if (!ancestor) {
            escapes = true;
            break;
          }
          if (last->isBeforeInBlock(ancestor))
            last = ancestor;
        }
        // An alias defined by a block argument or in another block is not
        // tracked here.
        if (Operation *def = alias.getDefiningOp()) {
          Operation *ancestor = block->findAncestorOpInBlock(*def);
          if (!ancestor)
            escapes = true;
          else if (last->isBeforeInBlock(ancestor))
            last = ancestor;
        } else if (alias != buffer) {
          escapes = true;
        }
        if (escapes)
          break;
      }
      if (escapes || last == dealloc.getOperation() ||
          !last->isBeforeInBlock(dealloc))
        continue;
      // Nothing to gain when the dealloc already follows the last use.
      if (last->getNextNode() == dealloc.getOperation())
        continue;
      dealloc->moveAfter(last);
      ++numMoved;
    }
  }
};

} // namespace
