//===- PlanHtmlTest.cpp - the plan's web page
//------------------------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "PipelineSimulator.h"

#include "autopar/Transforms/Planning/PlanReport.h"

#include "llvm/ADT/StringRef.h"

#include <catch2/catch.hpp>

using namespace mlir::autopar;
using namespace mlir::autopar::planning;
namespace json = llvm::json;

namespace {
/// Occurrences of `needle` in `text`.
size_t count(llvm::StringRef text, llvm::StringRef needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != llvm::StringRef::npos;
       at = text.find(needle, at + needle.size()))
    ++n;
  return n;
}

/// A plan with two ops on a 1-D grid of 4 and the given extra fields.
json::Object smallPlan() {
  return json::Object{
      {"grid", json::Array{4}},
      {"strategy", "auto"},
      {"mode", "training"},
      {"predicted", json::Object{{"step_time_s", 2.0},
                                 {"compute_s", 1.5},
                                 {"comm_s", 0.5},
                                 {"peak_memory_bytes", 300},
                                 {"peak_at", "b"}}},
      {"memory_profile",
       json::Array{json::Array{"a", 100}, json::Array{"b", 300},
                   json::Array{"c", 200}}},
      {"ops",
       json::Array{
           json::Object{
               {"node", "a<1>"},
               {"op", "autopar.matmul"},
               {"operands", json::Array{json::Object{{"sharding", "[_,0]"}}}},
               {"results",
                json::Array{json::Object{{"sharding", "[_,_]+partial(0)"}}}},
               {"compute_s", 1.5}},
           json::Object{{"node", "b"},
                        {"op", "autopar.add"},
                        {"operands", json::Array{json::Object{
                                         {"sharding", "[0,_]"},
                                         {"collectives",
                                          json::Array{json::Object{
                                              {"kind", "reduce_scatter"},
                                              {"axes", json::Array{0}},
                                              {"bytes_per_device", 1024}}}}}}},
                        {"results",
                         json::Array{json::Object{{"sharding", "[0,_]"}}}}}}}};
}
} // namespace

TEST_CASE("the page of a plan without stages", "[plan-html]") {
  std::string html = renderPlanHtml(json::Value(smallPlan()));
  CHECK(llvm::StringRef(html).starts_with("<!DOCTYPE html>"));
  CHECK(count(html, "<script") == 0);
  // Names are escaped.
  CHECK(count(html, "<td>a&lt;1&gt;</td>") == 1);
  CHECK(count(html, "<td>a<1></td>") == 0);
  // The contraction split shows its operand; the pending sum is marked.
  CHECK(count(html, ">in0[1] &sum;</td>") == 1);
  CHECK(count(html, ">out0[0]</td>") == 1);
  CHECK(count(html, "reduce_scatter 1.00 KiB") == 1);
  CHECK(count(html, "peak: b (300") == 1);
  CHECK(count(html, "One pipeline stage") == 1);
}

TEST_CASE("a simulated pipeline is drawn as a Gantt chart", "[plan-html]") {
  PipelineProblem pb;
  pb.schedule = PipelineSchedule::OneFOneB;
  pb.stages = 4;
  pb.microbatches = 8;
  pb.forward.assign(4, 1.0);
  pb.backward.assign(4, 2.0);
  pb.weightGrad.assign(4, 0.0);
  pb.transfer.assign(4, 0.0);
  REQUIRE(checkPipelineProblem(pb).empty());
  PipelineResult r = simulatePipeline(pb);
  // Every forward and backward of every microbatch on every stage.
  REQUIRE(r.events.size() == 2 * 4 * 8);
  for (const PipelineEvent &e : r.events) {
    CHECK(e.end - e.start == Approx(e.kind == 'F' ? 1.0 : 2.0));
    CHECK(e.end <= r.makespan + 1e-12);
  }
  json::Object plan = smallPlan();
  plan["pipeline"] = pipelineScheduleJson(pb, r);
  std::string html = renderPlanHtml(json::Value(std::move(plan)));
  CHECK(count(html, "One pipeline stage") == 0);
  CHECK(count(html, "aria-label=\"pipeline\"") == 1);
  // One bar per event, one row per stage, the schedule named.
  CHECK(count(html, "stroke=\"#fff\" stroke-width=\"0.5\"") == 64);
  CHECK(count(html, ">stage 3</text>") == 1);
  CHECK(count(html, ">stage 4</text>") == 0);
  CHECK(count(html, "schedule 1f1b") == 1);
}
