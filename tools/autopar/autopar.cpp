//===- autopar.cpp - the autopar command-line tool ------------------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "autopar/Driver/Driver.h"

int main(int argc, char **argv) { return mlir::autopar::runMain(argc, argv); }
