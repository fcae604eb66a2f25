//===- RelativeFitTest.cpp - two-term fits on relative errors -------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "autopar/Analysis/RelativeFit.h"

#include "llvm/ADT/SmallVector.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace mlir;
using namespace mlir::autopar;

TEST_CASE("fitTwoTermRelative: exact samples are fitted exactly", "[fit]") {
  // A collective: 20 us per message and 10 GB/s.
  SmallVector<TwoTermSample> samples;
  for (double messages : {1.0, 2.0, 6.0})
    for (double bytes : {1e3, 1e6, 1e8})
      samples.push_back({messages, bytes, messages * 2e-5 + bytes / 1e10});
  TwoTermFit fit = fitTwoTermRelative(samples);
  CHECK(fit.firstCoefficient == Approx(2e-5));
  CHECK(fit.secondCoefficient == Approx(1e-10));
  CHECK(fit.rmsRelativeError == Approx(0).margin(1e-9));
}

TEST_CASE("fitTwoTermRelative: residuals are relative", "[fit]") {
  // Samples 1000x apart around a 1 + x model, 10% off each: an absolute
  // fit would follow the largest sample and miss the smallest by 18%; the
  // relative fit misses each by at most 13%, the two outer ones equally.
  SmallVector<TwoTermSample> samples = {
      {1, 1e-3, 1.1 * (1 + 1e-3)}, {1, 1, 0.9 * 2}, {1, 1e3, 1.1 * (1 + 1e3)}};
  TwoTermFit fit = fitTwoTermRelative(samples);
  CHECK(fit.firstCoefficient == Approx(1.0144876).epsilon(1e-6));
  CHECK(fit.secondCoefficient == Approx(1.0144876).epsilon(1e-6));
  SmallVector<double> residuals;
  for (const TwoTermSample &s : samples)
    residuals.push_back(
        (fit.firstCoefficient * s.first + fit.secondCoefficient * s.second) /
            s.seconds -
        1);
  CHECK(residuals[0] == Approx(-0.0777385).epsilon(1e-5));
  CHECK(residuals[1] == Approx(0.1272085).epsilon(1e-5));
  CHECK(residuals[2] == Approx(residuals[0]));
  double rms = std::sqrt(
      (2 * residuals[0] * residuals[0] + residuals[1] * residuals[1]) / 3);
  CHECK(fit.rmsRelativeError == Approx(rms));
}

TEST_CASE("fitTwoTermRelative: a negative first term is clamped", "[fit]") {
  // Faster than proportional at small sizes: the intercept would be
  // negative, so it is 0 and the slope is refitted alone.
  TwoTermFit fit = fitTwoTermRelative({{1, 1e6, 1e-6}, {1, 1e7, 2e-5}});
  CHECK(fit.firstCoefficient == 0);
  CHECK(fit.secondCoefficient > 0);
  // The slope alone minimises the relative residuals of y * x = seconds.
  double a = 1e6 / 1e-6, b = 1e7 / 2e-5;
  CHECK(fit.secondCoefficient == Approx((a + b) / (a * a + b * b)));
}

TEST_CASE("fitTwoTermRelative: no samples", "[fit]") {
  TwoTermFit fit = fitTwoTermRelative({});
  CHECK(fit.firstCoefficient == 0);
  CHECK(fit.secondCoefficient == 0);
  CHECK(fit.rmsRelativeError == 0);
}
