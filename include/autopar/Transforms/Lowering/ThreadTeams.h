//===- ThreadTeams.h - the grain of threaded loops --------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The default grain of autopar-size-thread-teams, shared by the pass and the
// lowering pipeline's options.
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

} // namespace mlir::autopar

#endif // AUTOPAR_TRANSFORMS_LOWERING_THREADTEAMS_H
