//===- PipelineSimulator.cpp - event simulation of pipeline schedules
//------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Orders per device (stage d of p, m microbatches):
//   - GPipe: every forward, then every backward;
//   - 1F1B: min(p-d-1, m) forwards, then one forward and one backward in
//     turn, then the remaining backwards;
//   - interleaved 1F1B (Megatron-LM's order): virtual microbatch k runs
//     chunk (k / p) % v of microbatch (k / (p v)) p + k % p (backwards in the
//     reverse chunk order), with (p-d-1)·2 + (v-1)·p warm-up forwards;
//   - ZB-H1: 1F1B's order with each backward split in B (input gradient) and
//     W (weight gradient). While forwards remain, stage d runs a W as soon
//     as more than d are pending (stage 0 right after its B, the last stage
//     p-1 behind); after its last forward a device's Ws fill the time it
//     would wait for the next B, the rest run at the end. No stage holds
//     more activations than 1F1B's first stage (p).
// Each op starts when its device is free and its inputs (the previous
// virtual stage's forward, the next one's backward, plus the transfer)
// have arrived.
//
//===----------------------------------------------------------------------===//

#include "PipelineSimulator.h"

#include <algorithm>
#include <cassert>
#include <deque>
#include <map>
#include <tuple>

using namespace mlir::autopar::planning;

namespace {
enum class Kind { F, B, W };
struct Op {
  Kind kind;
  unsigned vstage, mb;
};
using Key = std::tuple<int, unsigned, unsigned>;
Key key(Kind k, unsigned vs, unsigned mb) { return {int(k), vs, mb}; }
} // namespace

std::string
mlir::autopar::planning::checkPipelineProblem(const PipelineProblem &pb) {
  if (pb.stages == 0 || pb.microbatches == 0 || pb.chunks == 0)
    return "stages, microbatches and chunks must be positive";
  bool interleaved = pb.schedule == PipelineSchedule::Interleaved;
  if (!interleaved && pb.chunks != 1)
    return "only the interleaved schedule has more than one chunk";
  if (interleaved && pb.chunks < 2)
    return "the interleaved schedule needs at least 2 chunks per device";
  if (interleaved && pb.microbatches % pb.stages != 0)
    return "the interleaved schedule needs the microbatches (" +
           std::to_string(pb.microbatches) +
           ") to be a multiple of the stages (" + std::to_string(pb.stages) +
           ")";
  size_t n = size_t(pb.stages) * pb.chunks;
  if (pb.forward.size() != n || pb.transfer.size() != n ||
      (!pb.forwardOnly && pb.backward.size() != n) ||
      (pb.schedule == PipelineSchedule::ZeroBubbleH1 &&
       pb.weightGrad.size() != n))
    return "one time per virtual stage is needed";
  if (pb.forwardOnly && pb.schedule != PipelineSchedule::GPipe)
    return "a forward-only step runs GPipe";
  return "";
}

PipelineResult
mlir::autopar::planning::simulatePipeline(const PipelineProblem &pb) {
  assert(checkPipelineProblem(pb).empty() && "unchecked pipeline problem");
  unsigned p = pb.stages, m = pb.microbatches, v = pb.chunks;
  unsigned nv = p * v;
  bool zb = pb.schedule == PipelineSchedule::ZeroBubbleH1;
  // Per device, the ordered ops.
  std::vector<std::vector<Op>> order(p);
  for (unsigned d = 0; d < p; ++d) {
    std::vector<Op> &o = order[d];
    switch (pb.schedule) {
    case PipelineSchedule::GPipe:
      for (unsigned i = 0; i < m; ++i)
        o.push_back({Kind::F, d, i});
      if (!pb.forwardOnly)
        for (unsigned i = 0; i < m; ++i)
          o.push_back({Kind::B, d, i});
      break;
    case PipelineSchedule::OneFOneB:
    case PipelineSchedule::ZeroBubbleH1: {
      unsigned warm = std::min(p - d - 1, m);
      for (unsigned i = 0; i < warm; ++i)
        o.push_back({Kind::F, d, i});
      for (unsigned i = 0; i + warm < m; ++i) {
        o.push_back({Kind::F, d, warm + i});
        o.push_back({Kind::B, d, i});
      }
      for (unsigned i = m - warm; i < m; ++i)
        o.push_back({Kind::B, d, i});
      break;
    }
    case PipelineSchedule::Interleaved: {
      unsigned total = m * v;
      unsigned warm = std::min((p - d - 1) * 2 + (v - 1) * p, total);
      auto mbOf = [&](unsigned k) { return (k / (p * v)) * p + k % p; };
      auto fwd = [&](unsigned k) {
        return Op{Kind::F, ((k / p) % v) * p + d, mbOf(k)};
      };
      auto bwd = [&](unsigned k) {
        return Op{Kind::B, (v - 1 - (k / p) % v) * p + d, mbOf(k)};
      };
      for (unsigned k = 0; k < warm; ++k)
        o.push_back(fwd(k));
      for (unsigned k = 0; k + warm < total; ++k) {
        o.push_back(fwd(warm + k));
        o.push_back(bwd(k));
      }
      for (unsigned k = total - warm; k < total; ++k)
        o.push_back(bwd(k));
      break;
    }
    }
  }
  auto duration = [&](const Op &op) {
    switch (op.kind) {
    case Kind::F:
      return pb.forward[op.vstage];
    case Kind::B:
      return pb.backward[op.vstage];
    case Kind::W:
      return pb.weightGrad[op.vstage];
    }
    return 0.0;
  };
  std::map<Key, double> done;
  // When the inputs of `op` have arrived; negative when not yet known.
  auto readyAt = [&](const Op &op) -> double {
    double at = 0;
    auto need = [&](Kind k, unsigned vs, double extra) {
      auto it = done.find(key(k, vs, op.mb));
      if (it == done.end())
        return false;
      at = std::max(at, it->second + extra);
      return true;
    };
    if (op.kind == Kind::F)
      return op.vstage == 0 ||
                     need(Kind::F, op.vstage - 1, pb.transfer[op.vstage - 1])
                 ? at
                 : -1;
    if (op.kind == Kind::W)
      return need(Kind::B, op.vstage, 0) ? at : -1;
    if (!need(Kind::F, op.vstage, 0))
      return -1;
    if (op.vstage + 1 < nv &&
        !need(Kind::B, op.vstage + 1, pb.transfer[op.vstage]))
      return -1;
    return at;
  };
  PipelineResult result;
  result.finish.assign(p, 0);
  result.busy.assign(p, 0);
  result.peakInFlight.assign(p, 0);
  result.peakInFlightPerVStage.assign(nv, 0);
  std::vector<size_t> next(p, 0);
  std::vector<unsigned> held(p, 0), forwardsLeft(p, 0), heldV(nv, 0);
  std::vector<std::deque<Op>> pendingW(p);
  for (unsigned d = 0; d < p; ++d)
    for (const Op &op : order[d])
      forwardsLeft[d] += op.kind == Kind::F;
  auto run = [&](unsigned d, const Op &op, double start) {
    double end = start + duration(op);
    done[key(op.kind, op.vstage, op.mb)] = end;
    result.events.push_back(
        {d, op.kind == Kind::F ? 'F' : (op.kind == Kind::B ? 'B' : 'W'), op.mb,
         op.vstage, start, end});
    result.finish[d] = end;
    result.busy[d] += end - start;
    if (op.kind == Kind::F) {
      --forwardsLeft[d];
      if (!pb.forwardOnly) {
        result.peakInFlight[d] = std::max(result.peakInFlight[d], ++held[d]);
        result.peakInFlightPerVStage[op.vstage] = std::max(
            result.peakInFlightPerVStage[op.vstage], ++heldV[op.vstage]);
      }
    } else if (op.kind == (zb ? Kind::W : Kind::B)) {
      --held[d];
      --heldV[op.vstage];
    }
    if (zb && op.kind == Kind::B)
      pendingW[d].push_back({Kind::W, op.vstage, op.mb});
  };
  bool progress = true;
  while (progress) {
    progress = false;
    for (unsigned d = 0; d < p; ++d) {
      // ZB-H1: while forwards remain, stage d keeps at most d weight
      // gradients pending (later stages delay their Ws further, so the
      // input gradients travel upstream sooner; the activations held stay
      // within the first stage's p).
      if (zb && forwardsLeft[d] > 0 && pendingW[d].size() > d) {
        Op w = pendingW[d].front();
        pendingW[d].pop_front();
        run(d, w, std::max(result.finish[d], readyAt(w)));
        progress = true;
        continue;
      }
      if (next[d] == order[d].size()) {
        if (!pendingW[d].empty()) {
          Op w = pendingW[d].front();
          pendingW[d].pop_front();
          run(d, w, std::max(result.finish[d], readyAt(w)));
          progress = true;
        }
        continue;
      }
      const Op &op = order[d][next[d]];
      double ready = readyAt(op);
      if (ready < 0)
        continue;
      // ZB-H1 after the last forward: a deferred W fills the wait.
      if (zb && !pendingW[d].empty() && result.finish[d] < ready) {
        Op w = pendingW[d].front();
        pendingW[d].pop_front();
        run(d, w, result.finish[d]);
        progress = true;
        continue;
      }
      run(d, op, std::max(result.finish[d], ready));
      ++next[d];
      progress = true;
    }
  }
  double busiest = 0;
  for (unsigned d = 0; d < p; ++d) {
    assert(next[d] == order[d].size() && pendingW[d].empty() &&
           "pipeline schedule deadlocked");
    result.makespan = std::max(result.makespan, result.finish[d]);
    busiest = std::max(busiest, result.busy[d]);
  }
  result.bubbleFraction =
      result.makespan > 0 ? 1 - busiest / result.makespan : 0;
  return result;
}

/// The device's work per microbatch on its chunks: forward, backward (input
/// gradient with ZB-H1) and weight gradient, all chunks but `skip`.
static void sumDeviceWork(const PipelineProblem &pb, unsigned device,
                          unsigned skip, double &f, double &b, double &w) {
  f = b = w = 0;
  for (unsigned c = 0; c < pb.chunks; ++c) {
    unsigned vs = c * pb.stages + device;
    if (vs == skip)
      continue;
    f += pb.forward[vs];
    if (!pb.forwardOnly)
      b += pb.backward[vs];
    if (pb.schedule == PipelineSchedule::ZeroBubbleH1)
      w += pb.weightGrad[vs];
  }
}

/// Sums of the forward and backward times of the virtual stages before
/// `device` (fill and drain), and of the forwards after it (forward only).
static void sumAround(const PipelineProblem &pb, unsigned device, double &fill,
                      double &drain, double &after) {
  fill = drain = after = 0;
  for (unsigned i = 0; i < device; ++i) {
    fill += pb.forward[i];
    if (!pb.forwardOnly)
      drain += pb.backward[i];
  }
  if (pb.forwardOnly)
    for (unsigned i = device + 1; i < pb.forward.size(); ++i)
      after += pb.forward[i];
}

double mlir::autopar::planning::getMakespanLowerBound(const PipelineProblem &pb,
                                                      unsigned device) {
  assert(checkPipelineProblem(pb).empty() && "unchecked pipeline problem");
  double m = double(pb.microbatches), f, b, w, fill, drain, after;
  sumDeviceWork(pb, device, ~0u, f, b, w);
  sumAround(pb, device, fill, drain, after);
  if (pb.forwardOnly)
    return fill + m * f + after;
  return fill + std::max(m * (f + b + w), m * (f + b) + drain);
}

double mlir::autopar::planning::getMakespanLead(const PipelineProblem &pb,
                                                unsigned vstage) {
  assert(checkPipelineProblem(pb).empty() && "unchecked pipeline problem");
  unsigned device = vstage % pb.stages;
  double m = double(pb.microbatches), f, b, w, fill, drain, after;
  sumDeviceWork(pb, device, vstage, f, b, w);
  sumAround(pb, device, fill, drain, after);
  if (pb.forwardOnly)
    return fill + m * f + after;
  // makespan >= fill + busy (+ drain after the last B, but with ZB-H1, whose
  // device may end on a W): busy is the other chunks' work plus vstage's.
  bool zb = pb.schedule == PipelineSchedule::ZeroBubbleH1;
  return fill + m * (f + b + w) + (zb ? 0 : drain);
}

llvm::json::Object
mlir::autopar::planning::pipelineScheduleJson(const PipelineProblem &problem,
                                              const PipelineResult &result) {
  std::string schedule;
  switch (problem.schedule) {
  case PipelineSchedule::GPipe:
    schedule = "gpipe";
    break;
  case PipelineSchedule::OneFOneB:
    schedule = "1f1b";
    break;
  case PipelineSchedule::Interleaved:
    schedule = "interleaved:" + std::to_string(problem.chunks);
    break;
  case PipelineSchedule::ZeroBubbleH1:
    schedule = "zb";
    break;
  }
  llvm::json::Array events;
  for (const PipelineEvent &e : result.events)
    events.push_back(
        llvm::json::Object{{"device", e.device},
                           {"kind", std::string(1, e.kind)},
                           {"microbatch", e.microbatch},
                           {"chunk", e.vstage / std::max(problem.stages, 1u)},
                           {"start_s", e.start},
                           {"end_s", e.end}});
  return llvm::json::Object{{"stages", problem.stages},
                            {"microbatches", problem.microbatches},
                            {"schedule", schedule},
                            {"makespan_s", result.makespan},
                            {"bubble_fraction", result.bubbleFraction},
                            {"events", std::move(events)}};
}
