//===- PipelineSimulatorTest.cpp - the simulator against the formulas -----===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "PipelineSimulator.h"
#include "RandomPipeline.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <map>
#include <random>
#include <tuple>

using namespace mlir::autopar::planning;
using mlir::autopar::testing::randomPipelineProblem;

namespace {
/// Uniform stages: every virtual stage has the same times.
PipelineProblem uniform(PipelineSchedule schedule, unsigned p, unsigned m,
                        unsigned v, double f, double b, double w = 0,
                        double transfer = 0) {
  PipelineProblem pb;
  pb.schedule = schedule;
  pb.stages = p;
  pb.microbatches = m;
  pb.chunks = v;
  pb.forward.assign(p * v, f);
  pb.backward.assign(p * v, b);
  pb.weightGrad.assign(p * v, w);
  pb.transfer.assign(p * v, transfer);
  REQUIRE(checkPipelineProblem(pb).empty());
  return pb;
}
} // namespace

TEST_CASE("GPipe and 1F1B take (m + p - 1)(t_f + t_b)", "[pipeline]") {
  for (auto [p, m] : {std::pair{1u, 1u}, {4u, 8u}, {4u, 3u}, {8u, 32u}}) {
    for (PipelineSchedule s :
         {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB}) {
      PipelineResult r = simulatePipeline(uniform(s, p, m, 1, 1.0, 2.0));
      CHECK(r.makespan == Approx((m + p - 1) * 3.0));
      CHECK(r.bubbleFraction == Approx(double(p - 1) / (m + p - 1)));
      // Activations held by the first stage: m (GPipe), min(p, m) (1F1B).
      CHECK(r.peakInFlight[0] ==
            (s == PipelineSchedule::GPipe ? m : std::min(p, m)));
      CHECK(r.peakInFlight[p - 1] == (s == PipelineSchedule::GPipe ? m : 1));
      // One chunk per device: its virtual stage holds what the device does.
      CHECK(r.peakInFlightPerVStage == r.peakInFlight);
    }
  }
}

TEST_CASE("interleaved 1F1B takes (m + (p - 1)/v)(t_f + t_b)", "[pipeline]") {
  for (auto [p, m, v] :
       {std::tuple{4u, 8u, 2u}, {4u, 16u, 4u}, {2u, 4u, 3u}, {8u, 16u, 2u}}) {
    // Each chunk holds 1/v of the stage.
    PipelineResult r = simulatePipeline(
        uniform(PipelineSchedule::Interleaved, p, m, v, 1.0 / v, 2.0 / v));
    CHECK(r.makespan == Approx((m + double(p - 1) / v) * 3.0));
    // Megatron's warm-up: (p-1)·2 + (v-1)·p forwards of chunks, plus one.
    CHECK(r.peakInFlight[0] == std::min((p - 1) * 2 + (v - 1) * p + 1, m * v));
    // Per virtual stage: never more than the device holds at once, at least
    // one, and together at least the device's peak (the chunks peak at
    // different times); the first chunk of device 0 warms up the most.
    REQUIRE(r.peakInFlightPerVStage.size() == p * v);
    for (unsigned d = 0; d < p; ++d) {
      unsigned sum = 0;
      for (unsigned c = 0; c < v; ++c) {
        unsigned held = r.peakInFlightPerVStage[c * p + d];
        CHECK(held >= 1);
        CHECK(held <= r.peakInFlight[d]);
        CHECK(held <= m);
        sum += held;
      }
      CHECK(sum >= r.peakInFlight[d]);
    }
    CHECK(r.peakInFlightPerVStage[0] ==
          *std::max_element(r.peakInFlightPerVStage.begin(),
                            r.peakInFlightPerVStage.end()));
  }
}

TEST_CASE("ZB-H1 leaves a bubble of (p - 1)(T_F + T_B - T_W)", "[pipeline]") {
  for (auto [p, m] : {std::pair{4u, 8u}, {4u, 12u}, {8u, 16u}, {2u, 2u}}) {
    for (auto [f, b, w] : {std::tuple{1.0, 1.0, 1.0}, {1.0, 1.5, 0.5}}) {
      PipelineResult r = simulatePipeline(
          uniform(PipelineSchedule::ZeroBubbleH1, p, m, 1, f, b, w));
      CHECK(r.makespan == Approx(m * (f + b + w) + (p - 1) * (f + b - w)));
      // As much memory as 1F1B's first stage, on every stage.
      CHECK(r.peakInFlight[0] == std::min(p, m));
      for (unsigned held : r.peakInFlight)
        CHECK(held <= std::min(p, m));
    }
  }
}

TEST_CASE("transfers and uneven stages", "[pipeline]") {
  // One microbatch through p stages: the forward chain, the backward chain
  // and two transfers per boundary.
  PipelineResult one = simulatePipeline(
      uniform(PipelineSchedule::OneFOneB, 4, 1, 1, 1.0, 2.0, 0, 0.25));
  CHECK(one.makespan == Approx(4 * 3.0 + 3 * 2 * 0.25));
  // A slow stage sets the pace: sum of stages + (m-1) x the slowest is an
  // upper bound, reached when the slowest stage is the last.
  PipelineProblem pb = uniform(PipelineSchedule::OneFOneB, 3, 6, 1, 1.0, 2.0);
  pb.forward[2] = 2.0;
  pb.backward[2] = 4.0;
  PipelineResult r = simulatePipeline(pb);
  CHECK(r.makespan <= Approx(3 + 3 + 6 + 5 * 6.0));
  CHECK(r.makespan >= 6 * 6.0);
}

TEST_CASE("invalid pipeline problems are named", "[pipeline]") {
  PipelineProblem pb = uniform(PipelineSchedule::OneFOneB, 4, 8, 1, 1, 1);
  pb.schedule = PipelineSchedule::Interleaved;
  CHECK(checkPipelineProblem(pb) ==
        "the interleaved schedule needs at least 2 chunks per device");
  pb = uniform(PipelineSchedule::Interleaved, 4, 8, 2, 1, 1);
  pb.microbatches = 6;
  CHECK(checkPipelineProblem(pb) ==
        "the interleaved schedule needs the microbatches (6) to be a "
        "multiple of the stages (4)");
  pb = uniform(PipelineSchedule::OneFOneB, 4, 8, 1, 1, 1);
  pb.forward.pop_back();
  CHECK(checkPipelineProblem(pb) == "one time per virtual stage is needed");
}

TEST_CASE("the makespan bound of the last device is the bubble formula",
          "[pipeline]") {
  for (auto [p, m] : {std::pair{1u, 1u}, {4u, 8u}, {4u, 3u}, {8u, 32u}}) {
    for (PipelineSchedule s :
         {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB}) {
      PipelineProblem pb = uniform(s, p, m, 1, 1.0, 2.0);
      CHECK(getMakespanLowerBound(pb, p - 1) == Approx((m + p - 1) * 3.0));
      // The lead of the last stage: the other stages' fill and drain.
      CHECK(getMakespanLead(pb, p - 1) == Approx((p - 1) * 3.0));
      // The first stage has no fill: its own work only.
      CHECK(getMakespanLowerBound(pb, 0) == Approx(m * 3.0));
    }
  }
  for (auto [p, m, v] : {std::tuple{4u, 8u, 2u}, {2u, 4u, 3u}, {8u, 16u, 2u}}) {
    PipelineProblem pb =
        uniform(PipelineSchedule::Interleaved, p, m, v, 1.0 / v, 2.0 / v);
    CHECK(getMakespanLowerBound(pb, p - 1) ==
          Approx((m + double(p - 1) / v) * 3.0));
    // The last device's first chunk: the fill and drain, and its other
    // chunks' work.
    CHECK(getMakespanLead(pb, p - 1) ==
          Approx(double(p - 1) * 3.0 / v + m * (v - 1) * 3.0 / v));
  }
  // ZB-H1 with equal F, B and W and m >= p - 1: m (F + B + W) + (p - 1) F,
  // the simulated makespan.
  for (auto [p, m] : {std::pair{4u, 8u}, {8u, 16u}, {2u, 2u}}) {
    PipelineProblem pb =
        uniform(PipelineSchedule::ZeroBubbleH1, p, m, 1, 1.0, 1.0, 1.0);
    CHECK(getMakespanLowerBound(pb, p - 1) ==
          Approx(simulatePipeline(pb).makespan));
  }
  // Forward only: the forward chain and m forwards of the device.
  PipelineProblem inference = uniform(PipelineSchedule::GPipe, 4, 5, 1, 1, 0);
  inference.forwardOnly = true;
  inference.backward.clear();
  CHECK(getMakespanLowerBound(inference, 1) == Approx(5 + 3));
  CHECK(simulatePipeline(inference).makespan == Approx(5 + 3));
}

TEST_CASE("the makespan bounds hold for uneven stages and transfers",
          "[pipeline]") {
  // Random problems of every schedule: no device's bound, and no virtual
  // stage's lead plus its own work, exceeds the simulated makespan.
  std::mt19937 rng(7);
  unsigned checked = 0;
  for (unsigned trial = 0; trial < 400; ++trial) {
    PipelineSchedule s = PipelineSchedule(trial % 4);
    PipelineProblem pb = randomPipelineProblem(
        rng, s, s == PipelineSchedule::GPipe && trial % 8 == 0);
    unsigned p = pb.stages, v = pb.chunks, m = pb.microbatches;
    REQUIRE(checkPipelineProblem(pb).empty());
    double makespan = simulatePipeline(pb).makespan;
    for (unsigned d = 0; d < p; ++d)
      CHECK(getMakespanLowerBound(pb, d) <= makespan * (1 + 1e-12));
    for (unsigned i = 0; i < p * v; ++i) {
      double own = pb.forward[i];
      if (!pb.forwardOnly)
        own += pb.backward[i] + pb.weightGrad[i];
      CHECK(getMakespanLead(pb, i) + m * own <= makespan * (1 + 1e-12));
      // The lead does not depend on the virtual stage's own times.
      PipelineProblem zeroed = pb;
      zeroed.forward[i] = 0;
      if (!pb.forwardOnly)
        zeroed.backward[i] = zeroed.weightGrad[i] = 0;
      CHECK(getMakespanLead(zeroed, i) == getMakespanLead(pb, i));
      ++checked;
    }
  }
  CHECK(checked > 1000);
}

TEST_CASE("the makespan only grows with the times under a fixed order",
          "[pipeline]") {
  // GPipe, 1F1B and interleaved 1F1B run each device's ops in an order
  // fixed by p, v and m alone, so every op's end is a max-plus expression
  // of the times and no longer times make a shorter step: the pipeline
  // planner's bounds with some stages at their compute floors rest on it.
  // Random problems, some times raised (a stage's forward, backward or
  // transfer, or all of them): no device finishes earlier.
  std::mt19937 rng(13);
  std::uniform_real_distribution<double> time(0.0, 1.0);
  unsigned checked = 0, longer = 0;
  for (unsigned trial = 0; trial < 600; ++trial) {
    PipelineSchedule s = std::array<PipelineSchedule, 3>{
        PipelineSchedule::GPipe, PipelineSchedule::OneFOneB,
        PipelineSchedule::Interleaved}[trial % 3];
    PipelineProblem pb = randomPipelineProblem(
        rng, s, s == PipelineSchedule::GPipe && trial % 6 == 0);
    unsigned p = pb.stages, v = pb.chunks;
    REQUIRE(checkPipelineProblem(pb).empty());
    PipelineResult before = simulatePipeline(pb);
    PipelineProblem raised = pb;
    for (unsigned i = 0; i < p * v; ++i) {
      if (rng() % 3 != 0)
        continue;
      raised.forward[i] += 2 * time(rng);
      if (!pb.forwardOnly)
        raised.backward[i] += 2 * time(rng);
      raised.transfer[i] += rng() % 2 ? 0.5 * time(rng) : 0.0;
    }
    PipelineResult after = simulatePipeline(raised);
    CHECK(after.makespan >= before.makespan * (1 - 1e-12));
    longer += after.makespan > before.makespan * (1 + 1e-9);
    for (unsigned d = 0; d < p; ++d)
      CHECK(after.finish[d] >= before.finish[d] * (1 - 1e-12));
    // Every op ends no earlier: the events of both runs, matched by op.
    std::map<std::tuple<char, unsigned, unsigned>, double> ends;
    for (const PipelineEvent &e : before.events)
      ends[{e.kind, e.vstage, e.microbatch}] = e.end;
    for (const PipelineEvent &e : after.events) {
      auto it = ends.find({e.kind, e.vstage, e.microbatch});
      REQUIRE(it != ends.end());
      CHECK(e.end >= it->second * (1 - 1e-12));
      ++checked;
    }
  }
  CHECK(checked > 10000);
  CHECK(longer > 100);
}
