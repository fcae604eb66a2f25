//===- ThreadTeams.h - the grain of threaded loops --------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The default grain of threaded loops (the work model of LoopWork.h), shared
// by autopar-chunk-parallel-loops, autopar-size-thread-teams and the lowering
// pipeline's options.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_TRANSFORMS_LOWERING_THREADTEAMS_H
#define AUTOPAR_TRANSFORMS_LOWERING_THREADTEAMS_H

#include <cstdint>

namespace mlir::autopar {

/// FLOPs each thread of a parallel loop must get for the loop to be threaded
/// (autopar-size-thread-teams): a fork and join of the OpenMP team, taken as
/// 5 us, times the fastest per-core rate, about 200 GFLOP/s.
constexpr int64_t kDefaultMinFlopsPerThread = 1000000;

/// FLOPs a byte moved counts as in a loop's work: the per-core FLOP rate
/// (200 GFLOP/s) over the rate one core moves data through its L2 and L3
/// caches, taken as 50 GB/s (a thread's grain is then about 250 KB moved).
constexpr int64_t kDefaultFlopsPerByte = 4;

} // namespace mlir::autopar

#endif // AUTOPAR_TRANSFORMS_LOWERING_THREADTEAMS_H
