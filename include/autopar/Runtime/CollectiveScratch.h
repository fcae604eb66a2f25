//===- CollectiveScratch.h - when collectives copy their buffer -*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The rule by which the runtime's collectives (lib/Runtime/Runtime.cpp) go
// through a scratch copy of a whole buffer, shared with the cost model
// (lib/Analysis/CostModel.cpp), which counts that copy in the memory of a
// reshard. MPI moves one contiguous block per group member; when a tensor is
// gathered, scattered or split along a dimension that has a non-unit
// dimension before it, each member's block is strided in the row-major
// buffer, and the runtime transposes the blocks through a copy of the whole
// buffer (all-gather: the gathered result; reduce-scatter: the input;
// all-to-all: the input along the split dimension and the output along the
// concatenated one).
//
// Header only, with no dependency: the runtime links no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_RUNTIME_COLLECTIVESCRATCH_H
#define AUTOPAR_RUNTIME_COLLECTIVESCRATCH_H

#include <cstdint>

namespace autopar::runtime {

/// Whether the blocks of a row-major buffer of shape `shape` (at least
/// `dim + 1` extents) cut along dimension `dim` are strided, so that a
/// collective over that dimension moves them through a scratch copy: some
/// dimension before `dim` has an extent other than 1.
inline bool needsBlockTranspose(const int64_t *shape, int64_t dim) {
  int64_t outer = 1;
  for (int64_t d = 0; d < dim; ++d)
    outer *= shape[d];
  return outer != 1;
}

} // namespace autopar::runtime

#endif // AUTOPAR_RUNTIME_COLLECTIVESCRATCH_H
