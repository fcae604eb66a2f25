//===- Passes.h - autopar lowering passes -------------------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Passes that lower a partitioned device program towards the LLVM dialect:
// graph I/O, weights and collectives to calls of the runtime ABI
// (autopar/Runtime/RuntimeABI.h), and autopar compute ops to linalg.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_CONVERSION_PASSES_H
#define AUTOPAR_CONVERSION_PASSES_H

#include "autopar/Dialect/Autopar/IR/Autopar.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::autopar {

#define GEN_PASS_DECL
#include "autopar/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "autopar/Conversion/Passes.h.inc"

} // namespace mlir::autopar

#endif // AUTOPAR_CONVERSION_PASSES_H
