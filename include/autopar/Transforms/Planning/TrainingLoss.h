//===- TrainingLoss.h - a loss appended for training plans ------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A training step ends in a scalar loss. For planning, the loss is appended
// to @main so that nothing but that scalar is returned (the model's outputs,
// a GPT's logits for one, then never need to be gathered on every device).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_TRANSFORMS_PLANNING_TRAININGLOSS_H
#define AUTOPAR_TRANSFORMS_PLANNING_TRAININGLOSS_H

#include "mlir/IR/BuiltinOps.h"

#include <optional>

namespace mlir::autopar {

enum class LossKind {
  /// The model's single output already is the scalar loss.
  Output,
  /// Token cross-entropy over the last output (logits `[..., V]`) against a
  /// new int64 input `labels` shaped like the logits without the last
  /// dimension: the mean over all positions of -log softmax(logits)[label].
  CrossEntropy,
  /// Mean squared error of the single output against a new float input
  /// `target` of its shape, averaged over all elements.
  MeanSquaredError,
};

/// `output`, `cross_entropy` or `mse`.
StringRef stringifyLossKind(LossKind kind);
std::optional<LossKind> symbolizeLossKind(StringRef name);

/// Rewrites @main of `module` (imported, unannotated) to return the scalar
/// loss of `kind` only, adding the labels or target input it needs. Fails
/// with a diagnostic when the outputs do not fit the loss.
LogicalResult appendTrainingLoss(ModuleOp module, LossKind kind);

} // namespace mlir::autopar

#endif // AUTOPAR_TRANSFORMS_PLANNING_TRAININGLOSS_H
