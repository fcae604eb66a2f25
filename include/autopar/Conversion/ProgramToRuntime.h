//===- ProgramToRuntime.h - device program to runtime calls -------*- C++
//-*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// What the compiler driver shares with autopar-lower-program-to-runtime: the
// numbering of weights, which decides the files `w<id>.bin` the runtime loads,
// and the marker of the random draws an inference pipeline places per
// microbatch at run time.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_CONVERSION_PROGRAMTORUNTIME_H
#define AUTOPAR_CONVERSION_PROGRAMTORUNTIME_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace mlir::autopar {

/// Names of the weights (`autopar.weight`) used by `func` in order of first
/// appearance (pre-order walk). Weight `i` of this list is loaded by the
/// lowered program as weight id `i`, i.e. from `<weights>/rank<R>/w<i>.bin`.
SmallVector<std::string> getProgramWeightOrder(func::FuncOp func);

/// On an `autopar.random_uniform` of an inference pipeline's microbatch
/// program whose `whole_shape` is the whole batch's draw (and which has no
/// `whole_offsets`): the dimension (an i64) along which the microbatches
/// split that draw (getMicrobatchDrawDim). The runner calls the program once
/// per microbatch; autopar-lower-program-to-runtime adds
/// `autopar_rt_microbatch_index()` times the op's global extent along that
/// dimension to the op's offsets, so that each call draws its microbatch's
/// block of the single-device values.
inline constexpr llvm::StringLiteral kMicrobatchDrawAttrName =
    "autopar.microbatch_draw";

} // namespace mlir::autopar

#endif // AUTOPAR_CONVERSION_PROGRAMTORUNTIME_H
