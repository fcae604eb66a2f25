//===- RelativeFit.h - Two-term fits on relative errors ---------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The least-squares fit both calibration models share: a time measured over
// sizes spanning orders of magnitude, modelled as seconds = x * a + y * b
// with non-negative coefficients (an op's fixed part and FLOPs at a rate; a
// collective's latency per message and bytes at a bandwidth).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_ANALYSIS_RELATIVEFIT_H
#define AUTOPAR_ANALYSIS_RELATIVEFIT_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"

namespace mlir::autopar {

/// One measurement of a two-term model: `seconds` measured for terms
/// (`first`, `second`), e.g. (1, FLOPs) or (messages, bytes).
struct TwoTermSample {
  double first = 0;
  double second = 0;
  double seconds = 0;
};

/// The coefficients of seconds = firstCoefficient * first +
/// secondCoefficient * second, and the root mean square of the relative
/// residuals over the samples.
struct TwoTermFit {
  double firstCoefficient = 0;
  double secondCoefficient = 0;
  double rmsRelativeError = 0;
};

/// Fits `samples` by least squares on relative errors: each residual is
/// divided by its sample's seconds, so that small measurements, which fix
/// the first term, weigh as much as large ones. A negative coefficient is
/// clamped at 0 (the first one first, the second then refitted alone).
/// Every sample's seconds must be positive.
TwoTermFit fitTwoTermRelative(ArrayRef<TwoTermSample> samples);

} // namespace mlir::autopar

#endif // AUTOPAR_ANALYSIS_RELATIVEFIT_H
