//===- autopar-runner.cpp - Run a device program on every MPI rank --------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A thin main: the runner's logic lives in lib/Runtime (runnerMain).
//
//===----------------------------------------------------------------------===//

#include "autopar/Runtime/Runner.h"

int main(int argc, char **argv) {
  return autopar::runtime::runnerMain(argc, argv);
}
