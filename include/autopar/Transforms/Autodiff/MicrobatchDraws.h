//===- MicrobatchDraws.h - a microbatch's block of a random draw -*- C++
//-*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Where a microbatch's random values lie in the whole batch's draw. A
// pipeline runs the program of one microbatch; its random ops
// (`autopar.random_uniform` with `whole_shape`, the shape of the
// single-device program's draw) draw microbatch j's block, so that the
// pipeline draws the single-device values. The rule is stated here once: a
// training stage step places each microbatch's copy at compile time
// (autopar-build-stage-step), an inference pipeline at run time from the
// runtime's microbatch index (autopar-lower-program-to-runtime).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_TRANSFORMS_AUTODIFF_MICROBATCHDRAWS_H
#define AUTOPAR_TRANSFORMS_AUTODIFF_MICROBATCHDRAWS_H

#include "autopar/Dialect/Autopar/IR/Autopar.h"

#include <optional>

namespace mlir::autopar {

/// The dimension along which each of `m` microbatches draws its block of
/// `random`'s whole draw (`whole_shape`): the one dimension whose whole
/// extent is m times the op's own; block j starts at j times the op's
/// extent there (the microbatches split the batch in order). nullopt when
/// the op has no `whole_shape` or draws the whole shape (then every
/// microbatch draws the same values, as the single-device program broadcasts
/// them). Fails with a diagnostic on the op when the draw is not one of m
/// blocks along one dimension.
FailureOr<std::optional<int64_t>> getMicrobatchDrawDim(RandomUniformOp random,
                                                       int64_t m);

} // namespace mlir::autopar

#endif // AUTOPAR_TRANSFORMS_AUTODIFF_MICROBATCHDRAWS_H
