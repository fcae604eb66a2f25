//===- SizeThreadTeams.cpp - threads in proportion to a loop's work -------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements autopar-size-thread-teams: each OpenMP work-sharing
// loop (as convert-scf-to-openmp makes of an scf.parallel) gets at most as
// many threads as it has iterations and as its work (LoopWork.h: FLOPs, and
// bytes moved at `flops-per-byte`) fills with `min-flops-per-thread` each; a
// loop that would get fewer than two runs sequentially, without a fork and
// join of the thread team.
//
//===----------------------------------------------------------------------===//

#include "autopar/Transforms/Lowering/Passes.h"

#include "autopar/Transforms/Lowering/LoopWork.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

#include "llvm/Support/Debug.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <limits>

#define DEBUG_TYPE "autopar-size-thread-teams"

namespace mlir::autopar {
#define GEN_PASS_DEF_SIZETHREADTEAMSPASS
#include "autopar/Transforms/Lowering/Passes.h.inc"
} // namespace mlir::autopar

using namespace mlir;
using namespace mlir::autopar;

namespace {

/// The OpenMP runtime's thread count for the next parallel region
/// (`omp_get_max_threads`: `--threads`, as the runner set it).
constexpr StringLiteral kMaxThreadsFn = "omp_get_max_threads";

//===----------------------------------------------------------------------===//
// Rewrites
//===----------------------------------------------------------------------===//

/// The loop of `parallel` when it has the form convert-scf-to-openmp gives
/// an scf.parallel without reductions: `omp.parallel` without clauses holding
/// one `omp.wsloop` without clauses (and `omp.terminator`), which wraps one
/// `omp.loop_nest` with exclusive bounds and one block ending in
/// `omp.yield`. Null otherwise.
omp::LoopNestOp getWorkSharingLoop(omp::ParallelOp parallel) {
  if (parallel.getIfExpr() || parallel.getNumThreads() ||
      !parallel.getPrivateVars().empty() ||
      !parallel.getReductionVars().empty() ||
      !parallel.getAllocateVars().empty() ||
      !parallel.getRegion().hasOneBlock())
    return {};
  Block &block = parallel.getRegion().front();
  if (block.getNumArguments() != 0 || !llvm::hasNItems(block, 2) ||
      !isa<omp::TerminatorOp>(&block.back()))
    return {};
  auto wsloop = dyn_cast<omp::WsloopOp>(&block.front());
  if (!wsloop || !wsloop.getReductionVars().empty() ||
      !wsloop.getPrivateVars().empty() || !wsloop.getLinearVars().empty() ||
      !wsloop.getAllocateVars().empty() || wsloop.getScheduleKind() ||
      wsloop.getOrdered() || !wsloop.getRegion().hasOneBlock())
    return {};
  Block &wrapped = wsloop.getRegion().front();
  if (wrapped.getNumArguments() != 0 || !llvm::hasSingleElement(wrapped))
    return {};
  auto nest = dyn_cast<omp::LoopNestOp>(&wrapped.front());
  if (!nest || nest.getLoopInclusive() || nest.getTileSizes() ||
      !nest.getRegion().hasOneBlock())
    return {};
  auto yield = dyn_cast<omp::YieldOp>(&nest.getRegion().front().back());
  if (!yield || yield->getNumOperands() != 0)
    return {};
  return nest;
}

/// Replaces `parallel` by `scf.for` loops over the bounds of its loop
/// `nest`, outermost first, around the loop's body in an
/// `scf.execute_region`: the body holds `memref.alloca_scope`s (one from
/// convert-scf-to-openmp around it, those of AMX scratch tiles), whose
/// lowering (finalize-memref-to-llvm, before scf-to-cf) splits their block,
/// which an `scf.for` body may not have but an `scf.execute_region` may.
void runSequentially(RewriterBase &rewriter, omp::ParallelOp parallel,
                     omp::LoopNestOp nest) {
  Location loc = parallel.getLoc();
  rewriter.setInsertionPoint(parallel);
  SmallVector<Value> ivs;
  for (auto [lb, ub, step] :
       llvm::zip(nest.getLoopLowerBounds(), nest.getLoopUpperBounds(),
                 nest.getLoopSteps())) {
    auto loop = scf::ForOp::create(rewriter, loc, lb, ub, step);
    ivs.push_back(loop.getInductionVar());
    rewriter.setInsertionPoint(loop.getBody()->getTerminator());
  }
  auto region = scf::ExecuteRegionOp::create(rewriter, loc, TypeRange());
  Block *block = rewriter.createBlock(&region.getRegion());
  Block &body = nest.getRegion().front();
  rewriter.eraseOp(body.getTerminator());
  rewriter.inlineBlockBefore(&body, block, block->end(), ivs);
  rewriter.setInsertionPointToEnd(block);
  scf::YieldOp::create(rewriter, loc);
  rewriter.eraseOp(parallel);
}

/// Makes the work-sharing loop of `nest` `nowait`: the end of its parallel
/// region, right after it, is a barrier already (the join), so the loop's own
/// closing barrier is a second wait of every thread for nothing.
void dropLoopBarrier(RewriterBase &rewriter, omp::LoopNestOp nest) {
  auto wsloop = cast<omp::WsloopOp>(nest->getParentOp());
  rewriter.modifyOpInPlace(wsloop, [&] { wsloop.setNowait(true); });
}

/// Returns the declaration of `omp_get_max_threads` in `module` (the module
/// of the calls), adding it if missing.
func::FuncOp getMaxThreadsFn(RewriterBase &rewriter, ModuleOp module) {
  if (auto fn = module.lookupSymbol<func::FuncOp>(kMaxThreadsFn))
    return fn;
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(module.getBody());
  auto fn = func::FuncOp::create(
      rewriter, module.getLoc(), kMaxThreadsFn,
      rewriter.getFunctionType({}, {rewriter.getI32Type()}));
  fn.setPrivate();
  return fn;
}

struct SizeThreadTeamsPass
    : public autopar::impl::SizeThreadTeamsPassBase<SizeThreadTeamsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (minFlopsPerThread < 0 || flopsPerByte < 0) {
      module.emitError() << "autopar-size-thread-teams: min-flops-per-thread "
                            "and flops-per-byte must not be negative, got: "
                         << minFlopsPerThread.getValue() << " and "
                         << flopsPerByte.getValue();
      return signalPassFailure();
    }
    // 0: every loop keeps the whole team.
    if (minFlopsPerThread == 0)
      return;
    auto grain = static_cast<uint64_t>(minFlopsPerThread.getValue());
    auto perByte = static_cast<uint64_t>(flopsPerByte.getValue());

    // The outermost parallel regions (a nested one runs on the thread of its
    // enclosing iteration).
    SmallVector<omp::ParallelOp> regions;
    module.walk<WalkOrder::PreOrder>([&](omp::ParallelOp parallel) {
      regions.push_back(parallel);
      return WalkResult::skip();
    });
    IRRewriter rewriter(&getContext());
    for (omp::ParallelOp parallel : regions) {
      omp::LoopNestOp nest = getWorkSharingLoop(parallel);
      if (!nest)
        continue;
      std::optional<LoopWork> perIteration =
          estimateRegionWork(nest.getRegion());
      if (!perIteration) {
        LLVM_DEBUG(llvm::dbgs()
                   << "work unknown: " << parallel.getLoc() << "\n");
        ++numUnknownWork;
        continue;
      }
      // Static bounds: the team's size is known here.
      std::optional<uint64_t> iterations = 1;
      for (auto [lb, ub, step] :
           llvm::zip(nest.getLoopLowerBounds(), nest.getLoopUpperBounds(),
                     nest.getLoopSteps())) {
        std::optional<uint64_t> trips = getStaticTripCount(lb, ub, step);
        iterations = trips && iterations
                         ? std::optional<uint64_t>(
                               llvm::SaturatingMultiply(*iterations, *trips))
                         : std::nullopt;
      }
      if (iterations) {
        LoopWork work = perIteration->scaled(*iterations);
        uint64_t threads = getThreadsFilled(*iterations, work, grain, perByte);
        LLVM_DEBUG(llvm::dbgs()
                   << parallel.getLoc() << ": " << *iterations
                   << " iterations, " << work.flops << " FLOPs, " << work.bytes
                   << " bytes, at most " << threads << " threads\n");
        if (threads < 2) {
          runSequentially(rewriter, parallel, nest);
          ++numSequential;
          continue;
        }
        setThreads(rewriter, parallel,
                   static_cast<int64_t>(std::min<uint64_t>(
                       threads, std::numeric_limits<int32_t>::max())),
                   /*dynamicLimit=*/Value());
        dropLoopBarrier(rewriter, nest);
        ++numSized;
        continue;
      }
      // Bounds known at run time: without work, sequential; otherwise the
      // team is sized when the loop starts.
      uint64_t equivalent = perIteration->getEquivalentFlops(perByte);
      if (equivalent == 0) {
        runSequentially(rewriter, parallel, nest);
        ++numSequential;
        continue;
      }
      setDynamicThreads(rewriter, parallel, nest, equivalent, grain);
      dropLoopBarrier(rewriter, nest);
      ++numSized;
    }
  }

  /// Gives `parallel` `num_threads(min(omp_get_max_threads(), limit))`,
  /// `limit` the constant `staticLimit` or, when set, the i32 value
  /// `dynamicLimit`.
  void setThreads(RewriterBase &rewriter, omp::ParallelOp parallel,
                  int64_t staticLimit, Value dynamicLimit) {
    Location loc = parallel.getLoc();
    rewriter.setInsertionPoint(parallel);
    func::FuncOp maxThreadsFn =
        getMaxThreadsFn(rewriter, parallel->getParentOfType<ModuleOp>());
    Value available =
        func::CallOp::create(rewriter, loc, maxThreadsFn).getResult(0);
    Value limit = dynamicLimit ? dynamicLimit
                               : arith::ConstantIntOp::create(
                                     rewriter, loc, staticLimit, /*width=*/32)
                                     .getResult();
    Value threads = arith::MinSIOp::create(rewriter, loc, available, limit);
    rewriter.modifyOpInPlace(
        parallel, [&] { parallel.getNumThreadsMutable().assign(threads); });
  }

  /// Bounds known at run time: `parallel` runs in parallel `if` its team
  /// would have two threads, with at most `iterations / ceil(grain /
  /// perIteration)` threads (each at least a grain of whole iterations) and
  /// no more than its iterations. `perIteration`, the equivalent FLOPs of one
  /// iteration, is positive.
  void setDynamicThreads(RewriterBase &rewriter, omp::ParallelOp parallel,
                         omp::LoopNestOp nest, uint64_t perIteration,
                         uint64_t grain) {
    Location loc = parallel.getLoc();
    rewriter.setInsertionPoint(parallel);
    auto index = [&](int64_t value) {
      return arith::ConstantIndexOp::create(rewriter, loc, value).getResult();
    };
    Value zero = index(0);
    Value iterations = index(1);
    for (auto [lb, ub, step] :
         llvm::zip(nest.getLoopLowerBounds(), nest.getLoopUpperBounds(),
                   nest.getLoopSteps())) {
      Value extent = arith::MaxSIOp::create(
          rewriter, loc, arith::SubIOp::create(rewriter, loc, ub, lb), zero);
      Value trips = arith::CeilDivSIOp::create(rewriter, loc, extent, step);
      iterations = arith::MulIOp::create(rewriter, loc, iterations, trips);
    }
    // Iterations that fill one thread's grain (at least 1).
    int64_t perThread = static_cast<int64_t>(
        std::max<uint64_t>(llvm::divideCeil(grain, perIteration), 1));
    Value filled =
        arith::DivSIOp::create(rewriter, loc, iterations, index(perThread));
    Value limit = arith::MinSIOp::create(rewriter, loc, iterations, filled);
    Value parallelIf = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::sge, limit, index(2));
    // At least 1 (num_threads must be positive even when `if` is false).
    limit = arith::MaxSIOp::create(rewriter, loc, limit, index(1));
    limit = arith::MinSIOp::create(rewriter, loc, limit,
                                   index(std::numeric_limits<int32_t>::max()));
    Value limit32 =
        arith::IndexCastOp::create(rewriter, loc, rewriter.getI32Type(), limit);
    rewriter.modifyOpInPlace(
        parallel, [&] { parallel.getIfExprMutable().assign(parallelIf); });
    setThreads(rewriter, parallel, /*staticLimit=*/0, limit32);
  }
};

} // namespace
