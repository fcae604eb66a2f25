//===- MixedPrecision.h - What a training step keeps in f32 -----*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The split of a training step between the lower precision and f32, shared
// by autopar-lower-precision (which converts the program) and the plan's
// memory model (which counts its bytes).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_TRANSFORMS_AUTODIFF_MIXEDPRECISION_H
#define AUTOPAR_TRANSFORMS_AUTODIFF_MIXEDPRECISION_H

#include "mlir/IR/Block.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::autopar {

/// Ops whose result is a rearrangement (or a sum over devices) of their
/// operands' elements: exact in any element type, so they move the lower
/// type instead of converting around it (the `shard` collectives, pipeline
/// sends and receives, transpose, reshape, slice, gather, ...).
bool movesDataOnly(Operation *op);

/// The names of the weights a training step assigns (`autopar.assign`): its
/// parameters and optimizer state, which stay f32.
llvm::StringSet<> getAssignedWeights(Block &body);

/// The ops of a training step (a block with `autopar.assign`s) that stay in
/// f32: the assigns, the optimizer update (ops carrying
/// `autopar.optimizer_update`), the tied-gradient exchange
/// (`autopar.gradient_exchange`), the return (the loss); every op computing
/// results that only these read, directly or through a collective (the
/// accumulation of each weight's gradient over its loads and microbatches,
/// the Adam step count, the loss's last reduction); a collective only the
/// region reads that carries no gradient (the loss's sum over devices); and
/// every op or collective moving master data (an assigned weight's, or the
/// update's) only to the region (a ZeRO update's slice of its weight, the
/// all-gather of the updated slices). Gradients are communicated in the
/// lower type: an f32 accumulated gradient is rounded once for its
/// reduction. Empty for inference programs. `assigned` is
/// getAssignedWeights(body).
llvm::DenseSet<Operation *> getMasterRegion(Block &body,
                                            const llvm::StringSet<> &assigned);

} // namespace mlir::autopar

#endif // AUTOPAR_TRANSFORMS_AUTODIFF_MIXEDPRECISION_H
