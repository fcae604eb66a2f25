//===- RelativeFit.cpp - Two-term fits on relative errors -----------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "autopar/Analysis/RelativeFit.h"

#include <cassert>
#include <cmath>

using namespace mlir;
using namespace mlir::autopar;

TwoTermFit mlir::autopar::fitTwoTermRelative(ArrayRef<TwoTermSample> samples) {
  // The relative residual (x * first + y * second - seconds) / seconds is
  // linear in (x, y), with coefficients a = first / seconds and
  // b = second / seconds, and target 1: the normal equations below.
  double saa = 0, sab = 0, sbb = 0, sa = 0, sb = 0;
  for (const TwoTermSample &sample : samples) {
    assert(sample.seconds > 0 && "a sample's seconds must be positive");
    double a = sample.first / sample.seconds;
    double b = sample.second / sample.seconds;
    saa += a * a;
    sab += a * b;
    sbb += b * b;
    sa += a;
    sb += b;
  }
  TwoTermFit fit;
  double det = saa * sbb - sab * sab;
  if (det > 0) {
    fit.firstCoefficient = (sa * sbb - sb * sab) / det;
    fit.secondCoefficient = (saa * sb - sab * sa) / det;
  }
  if (fit.firstCoefficient < 0 || fit.secondCoefficient <= 0) {
    fit.firstCoefficient = 0;
    fit.secondCoefficient = sbb > 0 ? sb / sbb : 0;
  }
  double sum = 0;
  for (const TwoTermSample &sample : samples) {
    double predicted = fit.firstCoefficient * sample.first +
                       fit.secondCoefficient * sample.second;
    sum += std::pow((predicted - sample.seconds) / sample.seconds, 2);
  }
  fit.rmsRelativeError = samples.empty() ? 0 : std::sqrt(sum / samples.size());
  return fit;
}
