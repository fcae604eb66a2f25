//===- LoopWork.h - static work estimate of loops and linalg ops -*- C++
//-*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The work model shared by the passes that decide what runs on the rank's
// threads: autopar-chunk-parallel-loops (whether a linalg op on tensors is
// split into chunks, and into how many) and autopar-size-thread-teams (how
// many threads an OpenMP loop gets). Work is the arithmetic an op performs
// (FLOPs) and the bytes it moves between memory and registers; the two are
// compared with a fork and join of the thread team through one exchange
// rate, FLOPs per byte (ThreadTeams.h has the defaults and their reasons).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_TRANSFORMS_LOWERING_LOOPWORK_H
#define AUTOPAR_TRANSFORMS_LOWERING_LOOPWORK_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Region.h"
#include "mlir/IR/Value.h"

#include "llvm/ADT/DenseMap.h"

#include <cstdint>
#include <optional>

namespace mlir::linalg {
class LinalgOp;
} // namespace mlir::linalg

namespace mlir::autopar {

/// The work of one execution of some IR: its arithmetic and the bytes its
/// loads and stores move, by buffer. Sums and products saturate at the
/// largest uint64_t.
struct LoopWork {
  /// Arithmetic: 2 per multiply-add of a contraction, one per element of
  /// any other arith or math result (index arithmetic excluded).
  uint64_t flops = 0;
  /// Bytes read and written (the elements of every load, store, vector
  /// transfer and linalg operand), by the buffer or tensor they are in: the
  /// source of their views (getAccessedRoot).
  llvm::SmallDenseMap<Value, uint64_t, 4> bytesByRoot;

  /// Adds `bytes` accessed through `value` (a view or the buffer itself).
  void addBytes(Value value, uint64_t bytes);
  LoopWork &operator+=(const LoopWork &other);
  /// The work of `times` executions.
  LoopWork scaled(uint64_t times) const;
  /// The bytes moved: each buffer's accesses, at most its size when static
  /// (what is read again is taken to come from a cache: a register tile
  /// loads the same packed panel once per row tile, an im2col copy reads
  /// each input element once per kernel offset).
  uint64_t getBytes() const;
  /// The time of the work on one core in FLOPs (a roofline): the larger of
  /// its FLOPs and its bytes counted as `flopsPerByte` FLOPs each (the time
  /// one core takes to move a byte, in FLOPs of that core).
  uint64_t getEquivalentFlops(uint64_t flopsPerByte) const;
};

/// The buffer or tensor that `value` views: the source of its memref views
/// (subviews, casts, reshapes) and tensor slices and reshapes.
Value getAccessedRoot(Value value);

/// The work of one execution of `op`, its regions included, or nullopt when
/// it depends on values known only at run time:
/// - a contraction (`vector.contract`, `x86vector.avx512.dot`,
///   `amx.tile_mulf/muli`, `vector.fma`, `vector.outerproduct`): 2 FLOPs per
///   multiply-add;
/// - a linalg op, on tensors or buffers (estimateLinalgWork);
/// - a load or store (`memref`, `affine`, `vector` loads and stores and
///   transfers, AMX tile loads and stores) moves its elements; `memref.copy`
///   reads and writes its elements;
/// - another arith or math op on non-index values: one FLOP per element of
///   its result;
/// - `scf.for`: its static trip count times its body; `scf.if`, `scf.
///   execute_region` and `memref.alloca_scope`: all their regions;
/// - anything else without regions (index arithmetic, views, calls): none.
std::optional<LoopWork> estimateOpWork(Operation *op);

/// The work of one execution of `region` (estimateOpWork of each op).
std::optional<LoopWork> estimateRegionWork(Region &region);

/// The work of `op`, a linalg op of static loop ranges: its iterations times
/// the arith and math ops of its body, and every shaped operand's elements
/// read or written once (the views of one tensor, such as a pooling's window
/// views of its padded input, count at most that tensor). Nullopt for
/// dynamic ranges or shapes.
std::optional<LoopWork> estimateLinalgWork(linalg::LinalgOp op);

/// The iterations of a loop from `lb` to `ub` (exclusive) by `step`, when all
/// three are constants.
std::optional<uint64_t> getStaticTripCount(Value lb, Value ub, Value step);

/// The threads that a loop of `iterations` iterations and `work` (all its
/// iterations) fills, each with at least `minFlopsPerThread` equivalent FLOPs
/// (getEquivalentFlops with `flopsPerByte`): min(iterations, floor(work /
/// minFlopsPerThread)).
/// `minFlopsPerThread` is positive.
uint64_t getThreadsFilled(uint64_t iterations, const LoopWork &work,
                          uint64_t minFlopsPerThread, uint64_t flopsPerByte);

} // namespace mlir::autopar

#endif // AUTOPAR_TRANSFORMS_LOWERING_LOOPWORK_H
