//===- PipelineSimulator.h - event simulation of pipeline schedules -*- C++
//-*-//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// An event simulator of one training (or inference) step of a pipeline: p
// stages on p devices, m microbatches, each stage split into v model chunks
// (interleaving), per chunk the seconds of a forward (F), a backward (B, or
// with zero-bubble the input-gradient part B and the weight-gradient part
// W) and of the point-to-point transfer to the next chunk. Each device runs
// its ops in the order the schedule gives (GPipe, 1F1B, Megatron's
// interleaved 1F1B, ZB-H1); an op starts when its device is free and its
// inputs have arrived. The result is each device's makespan and its peak
// number of microbatch-chunks whose activations are held, from which a
// planner prices a step and its memory. Independent of MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_LIB_TRANSFORMS_PLANNING_PIPELINESIMULATOR_H
#define AUTOPAR_LIB_TRANSFORMS_PLANNING_PIPELINESIMULATOR_H

#include "autopar/Transforms/Planning/PipelineSchedule.h"
#include "llvm/Support/JSON.h"

#include <string>
#include <vector>

namespace mlir::autopar::planning {

using mlir::autopar::PipelineSchedule;

/// One step of a pipeline to simulate.
struct PipelineProblem {
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
  unsigned stages = 1;       ///< p (devices)
  unsigned microbatches = 1; ///< m
  unsigned chunks = 1;       ///< v, interleaved only
  /// Per virtual stage (chunk c of device d is virtual stage c * p + d):
  /// forward, backward (input gradient only with ZB-H1) and weight-gradient
  /// (ZB-H1 only) seconds of one microbatch, and the seconds to send its
  /// activation (and gradient back) to the next virtual stage.
  std::vector<double> forward, backward, weightGrad, transfer;
  /// Inference: forwards only.
  bool forwardOnly = false;
};

/// One op of the simulated step: what ran where and when.
struct PipelineEvent {
  unsigned device = 0;
  /// 'F' (forward), 'B' (backward, or input gradient with ZB-H1) or 'W'
  /// (weight gradient, ZB-H1).
  char kind = 'F';
  unsigned microbatch = 0;
  /// The virtual stage (chunk c of device d is c * p + d).
  unsigned vstage = 0;
  double start = 0, end = 0;
};

struct PipelineResult {
  /// Per device: when its last op ends, and its busy seconds.
  std::vector<double> finish, busy;
  /// Per device: the most microbatch-chunks held at once (forward done,
  /// backward, or weight gradient with ZB-H1, not yet).
  std::vector<unsigned> peakInFlight;
  /// Per virtual stage: the most microbatches whose activations it holds at
  /// once (with interleaving, a device's chunks peak at different times).
  std::vector<unsigned> peakInFlightPerVStage;
  /// The step: the latest finish.
  double makespan = 0;
  /// 1 - (busy of the busiest device) / makespan.
  double bubbleFraction = 0;
  /// Every op in the order it was simulated.
  std::vector<PipelineEvent> events;
};

/// Checks the problem (sizes agree, Megatron's interleaving needs m % p == 0
/// and v >= 2); returns an empty string or what is wrong.
std::string checkPipelineProblem(const PipelineProblem &problem);

/// Simulates a checked problem.
PipelineResult simulatePipeline(const PipelineProblem &problem);

/// A lower bound on the makespan of `problem` from its device `d`, whatever
/// the times (the simulator's order and dependencies only): the device's
/// first op is a forward, which waits for that microbatch's forwards on
/// every virtual stage before d (the fill, sum of f_i for i < d); the device
/// then runs its own work one op at a time (busy: m (f + b + w) over its
/// chunks); its last backward B comes after all its forwards and backwards
/// (m (f + b) over its chunks), and its gradient then passes back through
/// the virtual stages before d (the drain, sum of b_i for i < d). So
///   makespan >= fill + max(busy, m (f + b) + drain),
/// which is fill + busy + drain but with ZB-H1 (a device may end on a
/// weight gradient W after its last B). Forward only (GPipe inference):
/// fill + m f_d + the forwards after d (sum of f_i for i > d). Transfers
/// only delay ops and are left out. With uniform stages, the last device's
/// bound is the schedule's whole makespan for GPipe and 1F1B, (m + p - 1)
/// (f + b), and for Megatron's interleaving, (m v + p - 1)(f + b) with f
/// and b per chunk: the bubble formulas.
double getMakespanLowerBound(const PipelineProblem &problem, unsigned device);

/// The part of getMakespanLowerBound's bound on device d = vstage mod p that
/// does not depend on virtual stage `vstage`'s own times: makespan >= lead +
/// m (f + b + w) of `vstage` (forward only: m f), whatever its f, b and w.
/// The lead is the fill, the device's other chunks' work and (but with ZB-H1
/// and forward only) the drain; forward only, the forwards after d.
double getMakespanLead(const PipelineProblem &problem, unsigned vstage);

/// The `pipeline` section of plan.json for a simulated step: `stages`,
/// `microbatches`, `schedule`, `makespan_s`, `bubble_fraction` and
/// `events` (`device`, `kind`, `microbatch`, `chunk`, `start_s`, `end_s`),
/// which the plan's page draws as a Gantt chart.
llvm::json::Object pipelineScheduleJson(const PipelineProblem &problem,
                                        const PipelineResult &result);

} // namespace mlir::autopar::planning

#endif // AUTOPAR_LIB_TRANSFORMS_PLANNING_PIPELINESIMULATOR_H
