//===- Passes.h - autopar planning and partitioning passes --------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_TRANSFORMS_PASSES_H
#define AUTOPAR_TRANSFORMS_PASSES_H

#include "autopar/Dialect/Autopar/IR/Autopar.h"

#include "mlir/Pass/Pass.h"

namespace mlir::autopar {

#define GEN_PASS_DECL
#include "autopar/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "autopar/Transforms/Passes.h.inc"

} // namespace mlir::autopar

#endif // AUTOPAR_TRANSFORMS_PASSES_H
