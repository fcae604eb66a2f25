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
  CHECK(count(html, "of each microbatch, schedule 1f1b.</p>") == 1);
}

namespace {
/// One stage's plan on a 1-D grid of 2: a matmul whose pending sum a
/// reduce_scatter resolves, priced per op, with its memory profile.
json::Object stagePlan(llvm::StringRef prefix, int64_t peak, bool binding) {
  std::string a = (prefix + ".mm").str(), b = (prefix + ".add").str();
  return json::Object{
      {"grid", json::Array{2}},
      {"cluster",
       json::Object{{"axes", json::Array{json::Object{{"bandwidth", 1e9},
                                                      {"latency", 0.0}}}}}},
      {"memory_profile",
       json::Array{json::Array{a, peak / 2}, json::Array{b, peak}}},
      {"memory", json::Object{{"limit_bytes", 500},
                              {"binding", binding},
                              {"peak_bytes", peak},
                              {"peak_at", b}}},
      {"search", json::Object{{"repeated_blocks",
                               json::Array{json::Object{{"first_node", a},
                                                        {"last_node", b},
                                                        {"ops_per_block", 2},
                                                        {"repeats", 2}}}}}},
      {"ops",
       json::Array{
           json::Object{
               {"node", a},
               {"op", "autopar.matmul"},
               {"operands", json::Array{json::Object{{"sharding", "[_,0]"}}}},
               {"results",
                json::Array{json::Object{{"sharding", "[_,_]+partial(0)"}}}},
               {"compute_s", 1.0}},
           json::Object{
               {"node", b},
               {"op", "autopar.add"},
               {"operands",
                json::Array{json::Object{
                    {"sharding", "[0,_]"},
                    {"collectives", json::Array{json::Object{
                                        {"kind", "reduce_scatter"},
                                        {"axes", json::Array{0}},
                                        {"bytes_per_device", 1e9}}}}}}},
               {"results", json::Array{json::Object{{"sharding", "[0,_]"}}}},
               {"compute_s", 0.5}},
           // The second instance of the block shares the first's strategy.
           json::Object{{"node", (prefix + ".mm2").str()},
                        {"op", "autopar.matmul"},
                        {"shares_strategy_with", a},
                        {"compute_s", 1.0}}}}};
}
} // namespace

TEST_CASE("a pipeline plan is drawn from its stages' plans", "[plan-html]") {
  json::Object plan{
      {"grid", json::Array{2, 2}},
      {"strategy", "auto"},
      {"mode", "training"},
      {"ops", json::Array{}},
      {"predicted", json::Object{{"step_time_s", 3.0},
                                 {"compute_s", 2.5},
                                 {"comm_s", 0.5},
                                 {"peak_memory_bytes", 400},
                                 {"peak_at", "stage 1: s1.add"}}},
      {"pipeline",
       json::Object{
           {"stages", 2},
           {"schedule", "1f1b"},
           {"layout", "Et|tL"},
           {"microbatches", 4},
           {"bubble_fraction", 0.25},
           {"stage_list",
            json::Array{json::Object{{"index", 0},
                                     {"blocks", json::Array{0, 1}},
                                     {"prefix", true},
                                     {"slab", json::Array{0, 1}},
                                     {"plan", stagePlan("s0", 300, false)}},
                        json::Object{{"index", 1},
                                     {"blocks", json::Array{1, 3}},
                                     {"suffix", true},
                                     {"slab", json::Array{1, 2}},
                                     {"plan", stagePlan("s1", 400, true)}}}}}}};
  std::string html = renderPlanHtml(json::Value(std::move(plan)));
  // Every stage's ops in a table of its own, over its own grid's axes, its
  // repeated block drawn once.
  CHECK(count(html, "<h3>stage 0 (repeated block 0, with the ops before "
                    "them, row 0 of grid axis 0): grid 2</h3>") == 1);
  CHECK(count(html, "<h3>stage 1 (repeated blocks 1 to 2, with the ops after "
                    "them, row 1 of grid axis 0): grid 2</h3>") == 1);
  CHECK(count(html, "<table>") == 2);
  CHECK(count(html, "<th>axis 0 (2)</th><th>collectives") == 2);
  CHECK(count(html, "<th>axis 1") == 0);
  CHECK(count(html, "<tr><td>s0.mm</td>") == 1);
  CHECK(count(html, "<tr><td>s1.add</td>") == 1);
  CHECK(count(html, "<td>s0.mm2</td>") == 0);
  CHECK(count(html, "repeated block x2: 2 ops from 's1.mm' to 's1.add'") == 1);
  // Op kinds over both stages: two drawn matmuls and their shared copies.
  CHECK(count(html, ">matmul x4</text>") == 1);
  CHECK(count(html, ">add x2</text>") == 1);
  // 4 s of matmul compute; two 1 GB reduce-scatters at 1 GB/s.
  CHECK(count(html, "4.000 s + 0 s</text>") == 1);
  CHECK(count(html, "1.000 s + 2.000 s</text>") == 1);
  CHECK(count(html, "Summed over the 2 pipeline stages") == 1);
  // One memory chart per stage with its own peak; stage 1's limit binds.
  CHECK(count(html, "No memory profile") == 0);
  CHECK(count(html, "aria-label=\"memory\"") == 2);
  CHECK(count(html, "peak: s0.add (300.00 B)") == 1);
  CHECK(count(html, "binding point: s1.add (400.00 B)") == 1);
  CHECK(count(html, ">limit 500.00 B</text>") == 2);
  // The header names the pipeline.
  CHECK(count(html, "Pipeline: 2 stages (Et|tL), schedule 1f1b, 4 "
                    "microbatches, bubble 25.0%") == 1);
}

TEST_CASE("a memory limit far above the peak is named, not drawn",
          "[plan-html]") {
  json::Object plan = smallPlan();
  plan["memory"] = json::Object{{"limit_bytes", 1e9}, {"binding", false}};
  std::string html = renderPlanHtml(json::Value(std::move(plan)));
  CHECK(count(html, "limit 953.67 MiB (above the chart)") == 1);
  CHECK(count(html, "stroke=\"#e15759\" stroke-dasharray=\"4 3\"/><text") == 0);
}

TEST_CASE("a peak while recomputing is drawn where the region starts",
          "[plan-html]") {
  // Training with recomputation: the peak (500 B) is the working set of the
  // region recomputed from 'a', not a point of the program order (300 B).
  json::Object plan = smallPlan();
  plan["memory"] = json::Object{{"limit_bytes", 600},
                                {"binding", true},
                                {"peak_bytes", 500},
                                {"peak_at", "a"}};
  std::string html = renderPlanHtml(json::Value(std::move(plan)));
  CHECK(count(html, "binding point: a (500.00 B, recomputing)") == 1);
  CHECK(count(html, "peak 500.00 B at 'a', while the recomputed region") == 1);
  CHECK(count(html, "the program order's own peak is 300.00 B at 'b'") == 1);
  CHECK(count(html, "stroke-width=\"3\"/>") == 1);
}
