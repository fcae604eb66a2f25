//===- autopar.cpp - the autopar command-line tool ------------------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "autopar/Driver/Driver.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

int main(int argc, char **argv) {
#ifdef __GLIBC__
  // The plan search builds and frees many integer programs of a few MB each
  // (COIN-OR's matrices and factorizations). With glibc's defaults each is
  // mapped and unmapped, or trimmed back to the system, on every solve: 20%
  // of GPT-3 175B's training-plan search went to page faults and zeroing.
  // Keep blocks below 32 MiB in the heap and up to 512 MiB of freed heap
  // for reuse (peak RSS +4% there).
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
#endif
  return mlir::autopar::runMain(argc, argv);
}
