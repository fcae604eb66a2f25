//===- Markers.h - Attributes the training passes leave on ops --*- C++ -*-===//
//
// Part of the autopar project, under the Apache License v2.0 with LLVM
// Exceptions.
//
//===----------------------------------------------------------------------===//
//
// The discardable attributes by which the training passes
// (autopar-build-stage-step, autopar-differentiate,
// autopar-schedule-microbatches) and the driver that packages their output
// talk to each other. Each name is spelled here only.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_TRANSFORMS_AUTODIFF_MARKERS_H
#define AUTOPAR_TRANSFORMS_AUTODIFF_MARKERS_H

#include "llvm/ADT/StringRef.h"

namespace mlir::autopar {

/// On an `autopar.weight` the differentiation created (an optimizer state):
/// the compiler writes zeros for it instead of reading an initializer.
inline constexpr llvm::StringLiteral kZeroInitAttrName = "autopar.zero_init";

/// On every op of a stage step's microbatch clone: the microbatch index
/// (an i64), so that the scheduler can order the clones.
inline constexpr llvm::StringLiteral kMicrobatchAttrName = "autopar.microbatch";

/// On every op the differentiation created for the backward pass of a
/// microbatch (unit attribute).
inline constexpr llvm::StringLiteral kBackwardAttrName = "autopar.backward";

/// On every load of a trainable weight that several pipeline stages read
/// (tied embeddings), in each of those stages: a dictionary `{stages = [s,
/// ...], self = s, tag = t}` naming the stages in ascending order, this
/// stage, and the message tag of the gradient exchange. autopar-differentiate
/// sends this stage's gradient to the others and sums all of them in stage
/// order, so every stage applies the same update to its copy.
inline constexpr llvm::StringLiteral kTiedAttrName = "autopar.tied";

/// On the sends, receives and sums by which the stages sharing a weight
/// exchange its gradient (unit attribute): that exchange belongs to the
/// optimizer, so autopar-lower-precision keeps it in f32 (every stage must
/// sum the same bits).
inline constexpr llvm::StringLiteral kGradientExchangeAttrName =
    "autopar.gradient_exchange";
/// On every forward op of a region an executed training step recomputes
/// (activation recomputation): the region's index (an i64). Set by the
/// planner (markRecomputeRegions) on a stage's forward program; the values
/// a region produces and only its own ops read are recomputed before the
/// backward pass reads them (autopar-recompute-regions).
inline constexpr llvm::StringLiteral kRecomputeRegionAttrName =
    "autopar.recompute_region";
/// On the ops autopar-recompute-regions cloned (unit attribute).
inline constexpr llvm::StringLiteral kRecomputedAttrName = "autopar.recomputed";
/// On every op of one trainable weight's optimizer update (its optimizer
/// state loads, the update arithmetic and the stores of the state and of the
/// weight): the weight's name (a string), so that autopar-shard-optimizer-state
/// can shard the update over the weight's replicas (ZeRO-1).
inline constexpr llvm::StringLiteral kOptimizerUpdateAttrName =
    "autopar.optimizer_update";

} // namespace mlir::autopar

#endif // AUTOPAR_TRANSFORMS_AUTODIFF_MARKERS_H
