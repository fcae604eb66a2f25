//===- SizeThreadTeams.cpp - threads in proportion to a loop's work -------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements autopar-size-thread-teams: each OpenMP work-sharing
// loop (as convert-scf-to-openmp makes of an scf.parallel) gets at most as
// many threads as it has iterations and as its work fills with
// `min-flops-per-thread` FLOPs each; a loop that would get fewer than two runs
// sequentially, without a fork and join of the thread team.
//
//===----------------------------------------------------------------------===//

#include "autopar/Transforms/Lowering/Passes.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"

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
// Work estimate
//===----------------------------------------------------------------------===//

/// `a * b`, saturating at the largest uint64_t.
uint64_t mul(uint64_t a, uint64_t b) { return llvm::SaturatingMultiply(a, b); }

/// `a + b`, saturating at the largest uint64_t.
uint64_t add(uint64_t a, uint64_t b) { return llvm::SaturatingAdd(a, b); }

/// The elements of a value of type `type`: 1 for a scalar, nullopt for a
/// shaped type of dynamic shape.
std::optional<uint64_t> getNumElements(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped)
    return 1;
  if (!shaped.hasStaticShape())
    return std::nullopt;
  return static_cast<uint64_t>(shaped.getNumElements());
}

/// The iterations of a loop from `lb` to `ub` (exclusive) by `step`, when all
/// three are constants.
std::optional<uint64_t> getStaticTripCount(Value lb, Value ub, Value step) {
  std::optional<int64_t> low = getConstantIntValue(lb);
  std::optional<int64_t> high = getConstantIntValue(ub);
  std::optional<int64_t> by = getConstantIntValue(step);
  if (!low || !high || !by || *by <= 0)
    return std::nullopt;
  if (*high <= *low)
    return 0;
  return llvm::divideCeil(static_cast<uint64_t>(*high - *low),
                          static_cast<uint64_t>(*by));
}

std::optional<uint64_t> estimateRegionFlops(Region &region);

/// The FLOPs of one execution of `op` (its regions included), or nullopt when
/// they depend on values known only at run time:
/// - a contraction (`vector.contract`, `x86vector.avx512.dot`,
///   `amx.tile_mulf/muli`, `vector.fma`, `vector.outerproduct`): 2 per
///   multiply-add;
/// - a linalg op: its iterations times the arithmetic ops of its body (at
///   least one);
/// - another arith or math op on non-index values: one per element of its
///   result;
/// - `scf.for`: its trip count times its body; `scf.if`: both branches;
///   `memref.alloca_scope`: its body;
/// - anything else without regions (memory accesses, index arithmetic,
///   calls): none. Data movement is not counted: a loop that only moves data
///   has no work here.
std::optional<uint64_t> estimateOpFlops(Operation *op) {
  if (auto contract = dyn_cast<vector::ContractionOp>(op)) {
    SmallVector<int64_t> bounds;
    contract.getIterationBounds(bounds);
    uint64_t flops = 2;
    for (int64_t bound : bounds)
      flops = mul(flops, static_cast<uint64_t>(bound));
    return flops;
  }
  if (auto dot = dyn_cast<x86vector::DotBF16Op>(op))
    return mul(2, static_cast<uint64_t>(dot.getA().getType().getNumElements()));
  if (isa<amx::TileMulFOp, amx::TileMulIOp>(op)) {
    // lhs M x K, acc M x N.
    ArrayRef<int64_t> lhs =
        cast<amx::TileType>(op->getOperand(0).getType()).getShape();
    ArrayRef<int64_t> acc =
        cast<amx::TileType>(op->getOperand(2).getType()).getShape();
    return mul(mul(mul(2, static_cast<uint64_t>(lhs.front())),
                   static_cast<uint64_t>(lhs.back())),
               static_cast<uint64_t>(acc.back()));
  }
  if (auto fma = dyn_cast<vector::FMAOp>(op))
    return mul(2, static_cast<uint64_t>(fma.getVectorType().getNumElements()));
  if (auto outer = dyn_cast<vector::OuterProductOp>(op))
    return mul(
        2, static_cast<uint64_t>(outer.getResultVectorType().getNumElements()));
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
    uint64_t perIteration = 0;
    for (Operation &inner : linalgOp.getBlock()->without_terminator())
      if (isa_and_nonnull<arith::ArithDialect, math::MathDialect>(
              inner.getDialect()))
        ++perIteration;
    uint64_t flops = std::max<uint64_t>(perIteration, 1);
    for (int64_t range : linalgOp.getStaticLoopRanges()) {
      if (ShapedType::isDynamic(range))
        return std::nullopt;
      flops = mul(flops, static_cast<uint64_t>(range));
    }
    return flops;
  }
  if (auto loop = dyn_cast<scf::ForOp>(op)) {
    std::optional<uint64_t> trips = getStaticTripCount(
        loop.getLowerBound(), loop.getUpperBound(), loop.getStep());
    std::optional<uint64_t> body = estimateRegionFlops(loop.getRegion());
    if (!trips || !body)
      return std::nullopt;
    return mul(*trips, *body);
  }
  if (isa<scf::IfOp, memref::AllocaScopeOp>(op)) {
    uint64_t flops = 0;
    for (Region &region : op->getRegions()) {
      std::optional<uint64_t> inner = estimateRegionFlops(region);
      if (!inner)
        return std::nullopt;
      flops = add(flops, *inner);
    }
    return flops;
  }
  if (op->getNumRegions() != 0)
    return std::nullopt;
  if (isa_and_nonnull<arith::ArithDialect, math::MathDialect>(
          op->getDialect()) &&
      !isa<arith::ConstantOp>(op) && op->getNumResults() == 1 &&
      !getElementTypeOrSelf(op->getResult(0).getType()).isIndex())
    return getNumElements(op->getResult(0).getType());
  return 0;
}

/// The FLOPs of one execution of `region` (estimateOpFlops).
std::optional<uint64_t> estimateRegionFlops(Region &region) {
  uint64_t flops = 0;
  for (Block &block : region)
    for (Operation &op : block) {
      std::optional<uint64_t> inner = estimateOpFlops(&op);
      if (!inner)
        return std::nullopt;
      flops = add(flops, *inner);
    }
  return flops;
}

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
    if (minFlopsPerThread < 0) {
      module.emitError() << "autopar-size-thread-teams: min-flops-per-thread "
                            "must not be negative, got: "
                         << minFlopsPerThread.getValue();
      return signalPassFailure();
    }
    // 0: every loop keeps the whole team.
    if (minFlopsPerThread == 0)
      return;
    auto grain = static_cast<uint64_t>(minFlopsPerThread.getValue());

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
      std::optional<uint64_t> perIteration =
          estimateRegionFlops(nest.getRegion());
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
                         ? std::optional<uint64_t>(mul(*iterations, *trips))
                         : std::nullopt;
      }
      if (iterations) {
        uint64_t flops = mul(*iterations, *perIteration);
        uint64_t threads = std::min(*iterations, flops / grain);
        LLVM_DEBUG(llvm::dbgs()
                   << parallel.getLoc() << ": " << *iterations
                   << " iterations, " << flops << " FLOPs, at most " << threads
                   << " threads\n");
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
      if (*perIteration == 0) {
        runSequentially(rewriter, parallel, nest);
        ++numSequential;
        continue;
      }
      setDynamicThreads(rewriter, parallel, nest, *perIteration, grain);
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
  /// no more than its iterations. `perIteration` is positive.
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
