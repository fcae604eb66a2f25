//===- ProgramToRuntime.h - device program to runtime calls -------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// What the compiler driver shares with autopar-lower-program-to-runtime: the
// numbering of weights, which decides the files `w<id>.bin` the runtime loads.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_CONVERSION_PROGRAMTORUNTIME_H
#define AUTOPAR_CONVERSION_PROGRAMTORUNTIME_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>

namespace mlir::autopar {

/// Names of the weights (`autopar.weight`) used by `func` in order of first
/// appearance (pre-order walk). Weight `i` of this list is loaded by the
/// lowered program as weight id `i`, i.e. from `<weights>/rank<R>/w<i>.bin`.
SmallVector<std::string> getProgramWeightOrder(func::FuncOp func);

} // namespace mlir::autopar

#endif // AUTOPAR_CONVERSION_PROGRAMTORUNTIME_H
