//===- PipelineSchedule.h - pipeline schedules ------------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The orders in which a pipeline's devices run forward and backward passes.
// Independent of MLIR (the event simulator includes it).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_TRANSFORMS_PLANNING_PIPELINESCHEDULE_H
#define AUTOPAR_TRANSFORMS_PLANNING_PIPELINESCHEDULE_H

namespace mlir::autopar {

enum class PipelineSchedule {
  /// All forwards, then all backwards (inference: forwards only).
  GPipe,
  /// Megatron's one-forward-one-backward.
  OneFOneB,
  /// Megatron's interleaved 1F1B over v model chunks per device.
  Interleaved,
  /// Zero-bubble ZB-H1 (Qi et al. 2024): input and weight gradients split.
  ZeroBubbleH1,
};

} // namespace mlir::autopar

#endif // AUTOPAR_TRANSFORMS_PLANNING_PIPELINESCHEDULE_H
