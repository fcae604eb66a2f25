//===- VectorCleanup.h - shared vector simplification -----------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_LIB_TRANSFORMS_LOWERING_VECTORCLEANUP_H
#define AUTOPAR_LIB_TRANSFORMS_LOWERING_VECTORCLEANUP_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::autopar {

/// Folds tensor slices into vector transfers, lowers transfer permutation
/// maps, and drops leading unit dimensions of vectors (a `vector<1x16xf32>`
/// transfer becomes a `vector<16xf32>` one), with the vector, tensor and scf
/// canonicalizations: what the vector lowering expects of the vectorized
/// register tiles and elementwise loops.
LogicalResult simplifyVectors(func::FuncOp func);

} // namespace mlir::autopar

#endif // AUTOPAR_LIB_TRANSFORMS_LOWERING_VECTORCLEANUP_H
