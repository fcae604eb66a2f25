//===- RandomPipeline.h - random pipeline problems for the tests -*- C++
//-*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The random pipeline problems the simulator's property tests run on:
// uneven stages (some ten times heavier than the others) and transfers on
// about half the virtual stages.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_TEST_UNIT_TRANSFORMS_PLANNING_RANDOMPIPELINE_H
#define AUTOPAR_TEST_UNIT_TRANSFORMS_PLANNING_RANDOMPIPELINE_H

#include "PipelineSimulator.h"

#include <random>

namespace mlir::autopar::testing {

/// A random problem of `schedule` drawn from `rng`: 1-6 stages, 2-3 chunks
/// per device for the interleaved schedule (1 otherwise), 1-9 microbatches
/// (a multiple of the stages, at most 3 of them, when interleaved), each
/// virtual stage's forward and backward in [0, 1) times 1 or, one time in
/// four, 10, weight gradients of the same scale for ZB-H1 (zero
/// otherwise), and a transfer in [0, 0.1) on about half of them. A
/// `forwardOnly` problem (GPipe only) has no backward.
inline planning::PipelineProblem
randomPipelineProblem(std::mt19937 &rng, planning::PipelineSchedule schedule,
                      bool forwardOnly = false) {
  using planning::PipelineSchedule;
  std::uniform_real_distribution<double> time(0.0, 1.0);
  bool interleaved = schedule == PipelineSchedule::Interleaved;
  unsigned p = 1 + rng() % 6;
  unsigned v = interleaved ? 2 + rng() % 2 : 1;
  unsigned m = 1 + rng() % 9;
  if (interleaved)
    m = p * (1 + rng() % 3);
  planning::PipelineProblem pb;
  pb.schedule = schedule;
  pb.stages = p;
  pb.microbatches = m;
  pb.chunks = v;
  pb.forwardOnly = forwardOnly;
  for (unsigned i = 0; i < p * v; ++i) {
    double scale = rng() % 4 == 0 ? 10.0 : 1.0;
    pb.forward.push_back(scale * time(rng));
    if (!forwardOnly)
      pb.backward.push_back(scale * time(rng));
    pb.weightGrad.push_back(
        schedule == PipelineSchedule::ZeroBubbleH1 ? scale * time(rng) : 0.0);
    pb.transfer.push_back(rng() % 2 ? 0.1 * time(rng) : 0.0);
  }
  return pb;
}

} // namespace mlir::autopar::testing

#endif // AUTOPAR_TEST_UNIT_TRANSFORMS_PLANNING_RANDOMPIPELINE_H
