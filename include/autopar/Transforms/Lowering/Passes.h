//===- Passes.h - autopar lowering transforms ---------------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Transforms of the lowering stage that are not conversions of autopar ops:
// they work on linalg, memref and cf (buffer placement, strided copies,
// runtime checks) between `autopar-convert-to-linalg` and the LLVM dialect.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_TRANSFORMS_LOWERING_PASSES_H
#define AUTOPAR_TRANSFORMS_LOWERING_PASSES_H

#include "autopar/Transforms/Lowering/ThreadTeams.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::autopar {

#define GEN_PASS_DECL
#include "autopar/Transforms/Lowering/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "autopar/Transforms/Lowering/Passes.h.inc"

} // namespace mlir::autopar

#endif // AUTOPAR_TRANSFORMS_LOWERING_PASSES_H
