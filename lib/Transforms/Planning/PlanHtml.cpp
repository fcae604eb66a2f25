//===- PlanHtml.cpp - a plan as one self-contained web page ---------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Renders a plan built by buildPlanJson as one HTML page with inline SVG and
// CSS, no script and nothing fetched: the prediction, the baselines side by
// side, compute against communication per op kind, memory per device over
// program order, the pipeline schedule when the plan has stages, and every
// op's sharding per grid axis, one repeated block drawn once.
//
//===----------------------------------------------------------------------===//

#include "autopar/Transforms/Planning/PlanReport.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

using namespace mlir;
using namespace mlir::autopar;
namespace json = llvm::json;

namespace {

/// Escapes text for HTML element content and attribute values.
std::string escape(StringRef text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&#39;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

/// Seconds with a unit people read (`1.23 ms`).
std::string formatSeconds(double s) {
  if (s <= 0)
    return "0 s";
  if (s >= 1)
    return llvm::formatv("{0:f3} s", s).str();
  if (s >= 1e-3)
    return llvm::formatv("{0:f3} ms", s * 1e3).str();
  if (s >= 1e-6)
    return llvm::formatv("{0:f3} us", s * 1e6).str();
  return llvm::formatv("{0:f1} ns", s * 1e9).str();
}

/// A number for an SVG coordinate (two decimals).
std::string num(double v) { return llvm::formatv("{0:f2}", v).str(); }

/// Colours of the sharding cells: one per tensor dimension split.
constexpr const char *kDimColours[] = {"#4e79a7", "#59a14f", "#b07aa1",
                                       "#76b7b2", "#9c755f", "#edc948"};

/// One value's sharding parsed from plan.json's compact text
/// (`[0,_]+partial(1)`, `[01,_]`): the grid axes splitting each dimension
/// and the axes of a pending sum.
struct ParsedSharding {
  std::vector<std::vector<int64_t>> dims;
  std::vector<int64_t> partial;
};

ParsedSharding parseShardingText(StringRef text) {
  ParsedSharding result;
  auto [layout, rest] = text.split('+');
  layout = layout.trim();
  if (layout.consume_front("[") && layout.consume_back("]")) {
    SmallVector<StringRef> entries;
    layout.split(entries, ',');
    for (StringRef entry : entries) {
      std::vector<int64_t> axes;
      for (char c : entry.trim())
        if (llvm::isDigit(c))
          axes.push_back(c - '0');
      result.dims.push_back(std::move(axes));
    }
  }
  if (rest.consume_front("partial(") && rest.consume_back(")"))
    for (char c : rest)
      if (llvm::isDigit(c))
        result.partial.push_back(c - '0');
  return result;
}

/// What grid axis `axis` does to one op: the result dimensions it splits,
/// the operand dimensions when it splits no result (a contraction), and
/// whether a result is a pending sum over it.
struct AxisUse {
  std::vector<std::string> parts;
  int colourDim = -1;
  bool partial = false;
};

AxisUse describeAxis(const json::Object &op, int64_t axis) {
  AxisUse use;
  auto collect = [&](const json::Array *list, StringRef prefix) {
    if (!list)
      return;
    for (auto [index, entry] : llvm::enumerate(*list)) {
      const json::Object *o = entry.getAsObject();
      if (!o)
        continue;
      ParsedSharding s =
          parseShardingText(o->getString("sharding").value_or(""));
      for (auto [dim, axes] : llvm::enumerate(s.dims)) {
        if (!llvm::is_contained(axes, axis))
          continue;
        use.parts.push_back(
            llvm::formatv("{0}{1}[{2}]", prefix, index, dim).str());
        if (use.colourDim < 0)
          use.colourDim = int(dim);
      }
      if (prefix == "out" && llvm::is_contained(s.partial, axis))
        use.partial = true;
    }
  };
  collect(op.getArray("results"), "out");
  if (use.parts.empty())
    collect(op.getArray("operands"), "in");
  return use;
}

double getNumber(const json::Object *o, StringRef key) {
  return o ? o->getNumber(key).value_or(0) : 0;
}

/// Seconds one collective takes on the cluster's links: the latency plus
/// the bytes over the slowest link of its axes (the same first-order model
/// the planner prices edges with; used only to split a kind's time).
double collectiveSeconds(const json::Object &collective,
                         const json::Array *axesLinks) {
  double bytes = collective.getNumber("bytes_per_device").value_or(0);
  if (!axesLinks || bytes <= 0)
    return 0;
  double bandwidth = INFINITY, latency = 0;
  if (const json::Array *axes = collective.getArray("axes")) {
    for (const json::Value &a : *axes) {
      std::optional<int64_t> axis = a.getAsInteger();
      if (!axis || *axis < 0 || size_t(*axis) >= axesLinks->size())
        continue;
      const json::Object *link = (*axesLinks)[*axis].getAsObject();
      if (!link)
        continue;
      bandwidth =
          std::min(bandwidth, link->getNumber("bandwidth").value_or(INFINITY));
      latency = std::max(latency, link->getNumber("latency").value_or(0));
    }
  }
  if (!std::isfinite(bandwidth) || bandwidth <= 0)
    return 0;
  return latency + bytes / bandwidth;
}

/// The opening `<text>` of a bar's label: after the bar, or inside its end
/// (white) when the bar takes most of the `width` available.
std::string barLabel(double x, double w, double width, double y) {
  if (w > 0.6 * width)
    return "<text x=\"" + num(x + w - 4) + "\" y=\"" + num(y) +
           "\" text-anchor=\"end\" fill=\"#fff\">";
  return "<text x=\"" + num(x + w + 4) + "\" y=\"" + num(y) + "\">";
}

/// A plan with ops: the whole plan, or one pipeline stage's plan with the
/// stage's entry of `pipeline.stage_list`.
struct PlanPart {
  const json::Object *plan;
  const json::Object *stage = nullptr;
};

/// `stage 1 (blocks 2 to 3, rows 1 to 1 of grid axis 0)`.
std::string describeStage(const json::Object &stage) {
  std::string text =
      "stage " + std::to_string(stage.getInteger("index").value_or(0));
  auto range =
      [&](StringRef key) -> std::optional<std::pair<int64_t, int64_t>> {
    const json::Array *a = stage.getArray(key);
    if (!a || a->size() != 2)
      return std::nullopt;
    return std::make_pair((*a)[0].getAsInteger().value_or(0),
                          (*a)[1].getAsInteger().value_or(0));
  };
  std::vector<std::string> parts;
  if (auto blocks = range("blocks")) {
    if (blocks->second - blocks->first == 1)
      parts.push_back("repeated block " + std::to_string(blocks->first));
    else
      parts.push_back(llvm::formatv("repeated blocks {0} to {1}", blocks->first,
                                    blocks->second - 1)
                          .str());
  }
  if (stage.getBoolean("prefix").value_or(false))
    parts.push_back("with the ops before them");
  if (stage.getBoolean("suffix").value_or(false))
    parts.push_back("with the ops after them");
  if (auto slab = range("slab"))
    parts.push_back(
        slab->second - slab->first == 1
            ? llvm::formatv("row {0} of grid axis 0", slab->first).str()
            : llvm::formatv("rows {0} to {1} of grid axis 0", slab->first,
                            slab->second - 1)
                  .str());
  if (!parts.empty())
    text += " (" + llvm::join(parts, ", ") + ")";
  return text;
}

/// `2x4`.
std::string formatGrid(const json::Object &plan) {
  std::string grid;
  if (const json::Array *g = plan.getArray("grid"))
    for (auto [i, v] : llvm::enumerate(*g))
      grid += (i ? "x" : "") + std::to_string(v.getAsInteger().value_or(0));
  return grid;
}

class HtmlWriter {
public:
  HtmlWriter(const json::Object &plan, llvm::raw_ostream &os)
      : plan(plan), os(os) {
    // A pipeline plan's ops live in its stages' plans.
    if (const json::Object *pipeline = plan.getObject("pipeline"))
      if (const json::Array *stages = pipeline->getArray("stage_list"))
        for (const json::Value &v : *stages)
          if (const json::Object *stage = v.getAsObject())
            if (const json::Object *stagePlan = stage->getObject("plan"))
              parts.push_back({stagePlan, stage});
    if (parts.empty())
      parts.push_back({&plan});
  }
  void write();

private:
  void writeHeader();
  void writeBaselines();
  void writeKinds();
  void writeMemory();
  void writeMemoryProfile(const json::Object &part, StringRef title);
  void writePipeline();
  void writeOps();
  void writeOpTable(const json::Object &part);

  const json::Object &plan;
  llvm::raw_ostream &os;
  std::vector<PlanPart> parts;
};

/// Calls `fn` on every collective of the plan file's op `op` (the
/// "collectives" of each of its "operands").
void forEachCollective(const json::Object &op,
                       llvm::function_ref<void(const json::Object &)> fn) {
  if (const json::Array *operands = op.getArray("operands"))
    for (const json::Value &operand : *operands)
      if (const json::Object *o = operand.getAsObject())
        if (const json::Array *colls = o->getArray("collectives"))
          for (const json::Value &c : *colls)
            if (const json::Object *co = c.getAsObject())
              fn(*co);
}

} // namespace

void HtmlWriter::write() {
  // The policy forbids every fetch and script: the page stands alone.
  os << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
        "'none'; style-src 'unsafe-inline'\">"
        "<title>autopar plan</title>\n<style>\n"
        "body{font:14px/1.4 sans-serif;margin:24px;color:#222;"
        "background:#fff}\n"
        "h1{font-size:20px}h3{font-size:14px;margin:16px 0 4px}"
        "h2{font-size:16px;margin-top:28px;"
        "border-bottom:1px solid #ccc}\n"
        "table{border-collapse:collapse}td,th{padding:2px 6px;"
        "border:1px solid #ddd;text-align:left;vertical-align:top}\n"
        "td.num{text-align:right}td.rep{background:#eee;color:#666}\n"
        "td.part{background:#f28e2b;color:#fff}td.split{color:#fff}\n"
        "tr.block th{background:#f4f4f4}\n"
        ".note{color:#555}svg text{font:11px sans-serif}\n"
        "</style></head><body>\n";
  writeHeader();
  writeBaselines();
  writeKinds();
  writeMemory();
  writePipeline();
  writeOps();
  os << "</body></html>\n";
}

void HtmlWriter::writeHeader() {
  std::string grid = formatGrid(plan);
  os << "<h1>autopar plan: grid " << escape(grid) << ", "
     << escape(plan.getString("strategy").value_or("")) << ", "
     << escape(plan.getString("mode").value_or("")) << "</h1>\n";
  const json::Object *pred = plan.getObject("predicted");
  if (!pred) {
    os << "<p class=\"note\">No prediction: the plan was made without a "
          "cluster description.</p>\n";
    return;
  }
  os << "<p>Predicted step " << formatSeconds(getNumber(pred, "step_time_s"))
     << " (compute " << formatSeconds(getNumber(pred, "compute_s"))
     << ", communication " << formatSeconds(getNumber(pred, "comm_s"))
     << "); peak memory "
     << escape(formatByteSize(getNumber(pred, "peak_memory_bytes")))
     << " per device at '" << escape(pred->getString("peak_at").value_or(""))
     << "'.";
  if (const json::Object *search = plan.getObject("search")) {
    bool optimal = search->getBoolean("optimal").value_or(false);
    os << " Search: " << escape(search->getString("method").value_or(""))
       << (optimal ? ", proven optimal" : ", not proven optimal") << " in "
       << formatSeconds(plan.getNumber("search_time_s").value_or(0)) << ".";
  }
  if (const json::Object *pipeline = plan.getObject("pipeline")) {
    os << " Pipeline: " << pipeline->getInteger("stages").value_or(0)
       << " stages";
    if (std::optional<StringRef> layout = pipeline->getString("layout"))
      os << " (" << escape(*layout) << ")";
    os << ", schedule " << escape(pipeline->getString("schedule").value_or(""))
       << ", " << pipeline->getInteger("microbatches").value_or(0)
       << " microbatches, bubble "
       << llvm::formatv("{0:f1}",
                        100 *
                            pipeline->getNumber("bubble_fraction").value_or(0))
              .str()
       << "%; found in "
       << formatSeconds(pipeline->getNumber("search_time_s").value_or(0))
       << ".";
  }
  os << "</p>\n";
}

void HtmlWriter::writeBaselines() {
  const json::Object *pred = plan.getObject("predicted");
  const json::Object *baselines = plan.getObject("baselines");
  if (!pred)
    return;
  struct Bar {
    std::string name;
    double step, peak;
    bool fits;
  };
  std::vector<Bar> bars;
  double limit = 0;
  if (const json::Object *memory = plan.getObject("memory"))
    limit = getNumber(memory, "limit_bytes");
  if (const json::Object *cluster = plan.getObject("cluster"))
    if (limit <= 0)
      limit = getNumber(cluster->getObject("device"), "memory_bytes");
  bars.push_back({"this plan", getNumber(pred, "step_time_s"),
                  getNumber(pred, "peak_memory_bytes"),
                  limit <= 0 || getNumber(pred, "peak_memory_bytes") <= limit});
  std::vector<std::pair<std::string, std::string>> invalid;
  if (baselines) {
    std::vector<std::string> names;
    for (const auto &kv : *baselines)
      names.push_back(kv.first.str());
    llvm::sort(names);
    for (const std::string &name : names) {
      const json::Object *b = baselines->getObject(name);
      if (!b)
        continue;
      if (!b->getBoolean("valid").value_or(true)) {
        invalid.emplace_back(name, b->getString("reason").value_or("").str());
        continue;
      }
      bars.push_back({name, getNumber(b, "step_time_s"),
                      getNumber(b, "peak_memory_bytes"),
                      b->getBoolean("fits").value_or(true)});
    }
  }
  os << "<h2>The plan and the baselines</h2>\n";
  if (!baselines)
    os << "<p class=\"note\">Baselines are priced for automatic plans "
          "only.</p>\n";
  double maxStep = 0, maxPeak = limit;
  for (const Bar &b : bars) {
    maxStep = std::max(maxStep, b.step);
    maxPeak = std::max(maxPeak, b.peak);
  }
  const double label = 110, width = 360, rowH = 22;
  double height = 30 + rowH * bars.size();
  os << "<svg width=\"" << num(2 * (label + width) + 60) << "\" height=\""
     << num(height) << "\" role=\"img\" aria-label=\"baselines\">\n";
  os << "<text x=\"" << num(label) << "\" y=\"14\">step time</text>";
  os << "<text x=\"" << num(2 * label + width + 40)
     << "\" y=\"14\">peak memory per device</text>\n";
  for (auto [i, b] : llvm::enumerate(bars)) {
    double y = 22 + rowH * i;
    double w1 = maxStep > 0 ? width * b.step / maxStep : 0;
    double w2 = maxPeak > 0 ? width * b.peak / maxPeak : 0;
    double x2 = label + width + 40 + label;
    os << "<text x=\"" << num(label - 6) << "\" y=\"" << num(y + 13)
       << "\" text-anchor=\"end\">" << escape(b.name) << "</text>";
    os << "<rect x=\"" << num(label) << "\" y=\"" << num(y) << "\" width=\""
       << num(w1) << "\" height=\"16\" fill=\""
       << (i == 0 ? "#4e79a7" : "#a0cbe8") << "\"/>";
    os << barLabel(label, w1, width, y + 13) << formatSeconds(b.step)
       << "</text>";
    os << "<text x=\"" << num(x2 - 6) << "\" y=\"" << num(y + 13)
       << "\" text-anchor=\"end\">" << escape(b.name) << "</text>";
    os << "<rect x=\"" << num(x2) << "\" y=\"" << num(y) << "\" width=\""
       << num(w2) << "\" height=\"16\" fill=\""
       << (b.fits ? "#59a14f" : "#e15759") << "\"/>";
    os << barLabel(x2, w2, width, y + 13) << escape(formatByteSize(b.peak))
       << (b.fits ? "" : " (does not fit)") << "</text>\n";
  }
  if (limit > 0) {
    double x = label + width + 40 + label + width * limit / maxPeak;
    os << "<line x1=\"" << num(x) << "\" y1=\"18\" x2=\"" << num(x)
       << "\" y2=\"" << num(height) << "\" stroke=\"#e15759\" "
       << "stroke-dasharray=\"4 3\"/>\n";
  }
  os << "</svg>\n";
  if (limit > 0)
    os << "<p class=\"note\">Dashed line: the memory limit, "
       << escape(formatByteSize(limit)) << " per device.</p>\n";
  for (const auto &[name, reason] : invalid)
    os << "<p class=\"note\">" << escape(name)
       << " cannot run here: " << escape(reason) << "</p>\n";
}

void HtmlWriter::writeKinds() {
  struct Kind {
    double compute = 0, comm = 0, bytes = 0;
    int64_t count = 0;
  };
  std::map<std::string, Kind> kinds;
  bool anyCompute = false;
  const json::Array *planLinks = nullptr;
  if (const json::Object *cluster = plan.getObject("cluster"))
    planLinks = cluster->getArray("axes");
  for (const PlanPart &part : parts) {
    const json::Array *ops = part.plan->getArray("ops");
    if (!ops)
      continue;
    // A stage's collectives run over its own grid's axes.
    const json::Array *links = planLinks;
    if (const json::Object *cluster = part.plan->getObject("cluster"))
      if (const json::Array *axes = cluster->getArray("axes"))
        links = axes;
    for (const json::Value &v : *ops) {
      const json::Object *op = v.getAsObject();
      if (!op)
        continue;
      std::string name = op->getString("op").value_or("?").str();
      StringRef shortName = name;
      shortName.consume_front("autopar.");
      Kind &k = kinds[shortName.str()];
      ++k.count;
      if (std::optional<double> c = op->getNumber("compute_s")) {
        k.compute += *c;
        anyCompute = true;
      }
      forEachCollective(*op, [&](const json::Object &co) {
        k.bytes += co.getNumber("bytes_per_device").value_or(0);
        k.comm += collectiveSeconds(co, links);
      });
    }
  }
  std::vector<std::pair<std::string, Kind>> sorted(kinds.begin(), kinds.end());
  llvm::sort(sorted, [](const auto &a, const auto &b) {
    return a.second.compute + a.second.comm > b.second.compute + b.second.comm;
  });
  os << "<h2>Compute against communication per op kind</h2>\n";
  if (!anyCompute) {
    os << "<p class=\"note\">No per-op prices: the plan was made without a "
          "cluster description. Bytes moved per device:</p>\n";
  }
  double maxTotal = 0;
  for (const auto &[name, k] : sorted)
    maxTotal = std::max(maxTotal, anyCompute ? k.compute + k.comm : k.bytes);
  const double label = 150, width = 520, rowH = 20;
  os << "<svg width=\"" << num(label + width + 260) << "\" height=\""
     << num(30 + rowH * sorted.size()) << "\" role=\"img\" "
     << "aria-label=\"op kinds\">\n";
  os << "<rect x=\"" << num(label)
     << "\" y=\"2\" width=\"10\" height=\"10\" "
        "fill=\"#4e79a7\"/><text x=\""
     << num(label + 14) << "\" y=\"11\">compute</text><rect x=\""
     << num(label + 80)
     << "\" y=\"2\" width=\"10\" height=\"10\" fill=\"#f28e2b\"/><text x=\""
     << num(label + 94) << "\" y=\"11\">communication</text>\n";
  for (auto [i, entry] : llvm::enumerate(sorted)) {
    const auto &[name, k] = entry;
    double y = 20 + rowH * i;
    double w1 = 0, w2 = 0;
    if (maxTotal > 0) {
      w1 = anyCompute ? width * k.compute / maxTotal : 0;
      w2 = width * (anyCompute ? k.comm : k.bytes) / maxTotal;
    }
    os << "<text x=\"" << num(label - 6) << "\" y=\"" << num(y + 12)
       << "\" text-anchor=\"end\">" << escape(name) << " x" << k.count
       << "</text><rect x=\"" << num(label) << "\" y=\"" << num(y)
       << "\" width=\"" << num(w1) << "\" height=\"14\" fill=\"#4e79a7\"/>"
       << "<rect x=\"" << num(label + w1) << "\" y=\"" << num(y)
       << "\" width=\"" << num(w2)
       << "\" height=\"14\" fill=\"#f28e2b\"/><text x=\""
       << num(label + w1 + w2 + 4) << "\" y=\"" << num(y + 12) << "\">";
    if (anyCompute)
      os << formatSeconds(k.compute) << " + " << formatSeconds(k.comm);
    else
      os << escape(formatByteSize(k.bytes));
    os << "</text>\n";
  }
  os << "</svg>\n<p class=\"note\">Communication: the collectives before "
        "each op, at the latency plus the bytes per device over the slowest "
        "link of their grid axes.";
  if (parts.size() > 1)
    os << " Summed over the " << parts.size()
       << " pipeline stages (each on its own devices); the transfers "
          "between stages are in the schedule.";
  os << "</p>\n";
}

void HtmlWriter::writeMemory() {
  os << "<h2>Memory per device over program order</h2>\n";
  if (parts.size() == 1) {
    writeMemoryProfile(*parts.front().plan, "");
    return;
  }
  os << "<p class=\"note\">One chart per pipeline stage: each stage's "
        "devices run its own program.</p>\n";
  for (const PlanPart &part : parts)
    writeMemoryProfile(*part.plan, describeStage(*part.stage));
}

void HtmlWriter::writeMemoryProfile(const json::Object &part, StringRef title) {
  const json::Array *profile = part.getArray("memory_profile");
  if (!title.empty())
    os << "<h3>" << escape(title) << "</h3>\n";
  if (!profile || profile->empty()) {
    os << "<p class=\"note\">No memory profile: the plan was made without a "
          "cluster description.</p>\n";
    return;
  }
  std::vector<std::pair<std::string, double>> points;
  for (const json::Value &v : *profile) {
    const json::Array *pair = v.getAsArray();
    if (!pair || pair->size() != 2)
      continue;
    points.emplace_back((*pair)[0].getAsString().value_or("").str(),
                        (*pair)[1].getAsNumber().value_or(0));
  }
  double limit = 0;
  bool binding = false;
  if (const json::Object *memory = part.getObject("memory")) {
    limit = getNumber(memory, "limit_bytes");
    binding = memory->getBoolean("binding").value_or(false);
  }
  size_t profilePeak = 0;
  for (size_t i = 0; i < points.size(); ++i)
    if (points[i].second > points[profilePeak].second)
      profilePeak = i;
  // The plan's peak: the profile's, or, in training with recomputation, the
  // working set of a region recomputed before its backward pass, which is
  // not a point of the program order (drawn at the region's first op).
  size_t peakIndex = profilePeak;
  double peakBytes = points[profilePeak].second;
  std::string peakName = points[profilePeak].first;
  bool recomputePeak = false;
  const json::Object *memory = part.getObject("memory");
  const json::Object *pred = part.getObject("predicted");
  double planPeak = memory ? getNumber(memory, "peak_bytes")
                           : getNumber(pred, "peak_memory_bytes");
  std::optional<StringRef> planPeakAt =
      memory ? memory->getString("peak_at")
             : (pred ? pred->getString("peak_at") : std::nullopt);
  if (planPeak > peakBytes + 0.5 && planPeakAt) {
    recomputePeak = true;
    peakBytes = planPeak;
    peakName = planPeakAt->str();
    for (size_t i = 0; i < points.size(); ++i)
      if (points[i].first == peakName) {
        peakIndex = i;
        break;
      }
  }
  // The axis starts near the smallest point (persistent values often
  // dominate, and a curve drawn from zero would look flat); the ticks say
  // where it starts.
  double lowest = peakBytes;
  for (const auto &point : points)
    lowest = std::min(lowest, point.second);
  // A limit far above the peak would flatten the curve: it is then only
  // named.
  bool limitDrawn = limit > 0 && limit <= 2 * peakBytes;
  double highest = std::max(limitDrawn ? limit : 0, peakBytes);
  double span = highest - lowest;
  if (span <= 0)
    span = std::max(highest, 1.0);
  double top = highest + 0.08 * span;
  double bottomBytes = std::max(0.0, lowest - 0.25 * span);
  // The peak's label has a row of its own above the plot.
  const double left = 80, width = 760, height = 220, bottom = 30, above = 16;
  auto xAt = [&](size_t i) {
    return left + (points.size() > 1 ? width * i / (points.size() - 1) : 0);
  };
  auto yAt = [&](double bytes) {
    return above + 10 +
           height * (1 - (bytes - bottomBytes) / (top - bottomBytes));
  };
  os << "<svg width=\"" << num(left + width + 20) << "\" height=\""
     << num(above + height + 10 + bottom) << "\" role=\"img\" "
     << "aria-label=\"memory\">\n";
  for (int tick = 0; tick <= 4; ++tick) {
    double bytes = bottomBytes + (top - bottomBytes) * tick / 4;
    os << "<line x1=\"" << num(left) << "\" x2=\"" << num(left + width)
       << "\" y1=\"" << num(yAt(bytes)) << "\" y2=\"" << num(yAt(bytes))
       << "\" stroke=\"#eee\"/><text x=\"" << num(left - 4) << "\" y=\""
       << num(yAt(bytes) + 4) << "\" text-anchor=\"end\">"
       << escape(formatByteSize(bytes)) << "</text>\n";
  }
  os << "<polyline fill=\"none\" stroke=\"#4e79a7\" stroke-width=\"1.5\" "
        "points=\"";
  for (size_t i = 0; i < points.size(); ++i)
    os << (i ? " " : "") << num(xAt(i)) << "," << num(yAt(points[i].second));
  os << "\"/>\n";
  if (limitDrawn)
    os << "<line x1=\"" << num(left) << "\" x2=\"" << num(left + width)
       << "\" y1=\"" << num(yAt(limit)) << "\" y2=\"" << num(yAt(limit))
       << "\" stroke=\"#e15759\" stroke-dasharray=\"4 3\"/><text x=\""
       << num(left + width) << "\" y=\"" << num(yAt(limit) - 4)
       << "\" text-anchor=\"end\" fill=\"#e15759\">limit "
       << escape(formatByteSize(limit)) << "</text>\n";
  else if (limit > 0)
    os << "<text x=\"" << num(left + width / 2) << "\" y=\""
       << num(above + height + 10 + 20) << "\" "
       << "text-anchor=\"middle\" fill=\"#e15759\">limit "
       << escape(formatByteSize(limit)) << " (above the chart)</text>\n";
  double px = xAt(peakIndex), py = yAt(peakBytes);
  const char *mark = binding ? "#e15759" : "#f28e2b";
  if (recomputePeak)
    os << "<line x1=\"" << num(px) << "\" x2=\"" << num(px) << "\" y1=\""
       << num(py) << "\" y2=\"" << num(yAt(points[peakIndex].second))
       << "\" stroke=\"" << mark << "\" stroke-width=\"3\"/>";
  os << "<line x1=\"" << num(px) << "\" x2=\"" << num(px) << "\" y1=\""
     << num(above + 10) << "\" y2=\"" << num(above + height + 10)
     << "\" stroke=\"" << mark << "\" stroke-dasharray=\"2 2\"/><circle cx=\""
     << num(px) << "\" cy=\"" << num(py) << "\" r=\"4\" fill=\"" << mark
     << "\"/><text x=\"" << num(px > left + width / 2 ? px + 6 : px - 6)
     << "\" y=\"12\" " << (px > left + width / 2 ? "text-anchor=\"end\" " : "")
     << "fill=\"" << mark << "\">" << (binding ? "binding point: " : "peak: ")
     << escape(peakName) << " (" << escape(formatByteSize(peakBytes))
     << (recomputePeak ? ", recomputing" : "") << ")</text>\n";
  os << "<text x=\"" << num(left) << "\" y=\"" << num(above + height + 10 + 20)
     << "\">" << escape(points.front().first) << "</text><text x=\""
     << num(left + width) << "\" y=\"" << num(above + height + 10 + 20)
     << "\" text-anchor=\"end\">" << escape(points.back().first)
     << "</text>\n</svg>\n";
  os << "<p class=\"note\">" << points.size()
     << " liveness points in program order; peak "
     << escape(formatByteSize(peakBytes)) << " at '" << escape(peakName) << "'";
  if (recomputePeak)
    os << ", while the recomputed region from there runs again before its "
          "backward pass (the thick bar: its working set above the "
          "program's "
       << escape(formatByteSize(points[peakIndex].second))
       << "); the program order's own peak is "
       << escape(formatByteSize(points[profilePeak].second)) << " at '"
       << escape(points[profilePeak].first) << "'";
  os << ". ";
  if (limit > 0)
    os << (binding ? "The memory limit binds: the fastest plan ignoring "
                     "memory does not fit, and this point is where the "
                     "chosen plan meets the limit."
                   : "The memory limit does not bind.");
  os << "</p>\n";
}

void HtmlWriter::writePipeline() {
  const json::Object *pipeline = plan.getObject("pipeline");
  os << "<h2>Pipeline schedule</h2>\n";
  const json::Array *events = pipeline ? pipeline->getArray("events") : nullptr;
  if (!events || events->empty()) {
    os << "<p class=\"note\">One pipeline stage: every device runs the whole "
          "step, there is no schedule to draw.</p>\n";
    return;
  }
  int64_t devices = 0;
  double end = 0;
  for (const json::Value &v : *events)
    if (const json::Object *e = v.getAsObject()) {
      devices = std::max(devices, e->getInteger("device").value_or(0) + 1);
      end = std::max(end, e->getNumber("end_s").value_or(0));
    }
  const double left = 70, width = 800, rowH = 22;
  os << "<svg width=\"" << num(left + width + 20) << "\" height=\""
     << num(rowH * devices + 30) << "\" role=\"img\" "
     << "aria-label=\"pipeline\">\n";
  for (int64_t d = 0; d < devices; ++d)
    os << "<text x=\"" << num(left - 6) << "\" y=\"" << num(rowH * d + 15)
       << "\" text-anchor=\"end\">stage " << d << "</text>\n";
  for (const json::Value &v : *events) {
    const json::Object *e = v.getAsObject();
    if (!e || end <= 0)
      continue;
    int64_t d = e->getInteger("device").value_or(0);
    double s = e->getNumber("start_s").value_or(0);
    double t = e->getNumber("end_s").value_or(0);
    StringRef kind = e->getString("kind").value_or("F");
    const char *fill =
        kind == "F" ? "#4e79a7" : (kind == "B" ? "#f28e2b" : "#59a14f");
    double x = left + width * s / end, w = width * (t - s) / end;
    os << "<rect x=\"" << num(x) << "\" y=\"" << num(rowH * d + 2)
       << "\" width=\"" << num(std::max(w, 0.5))
       << "\" height=\"16\" stroke=\"#fff\" stroke-width=\"0.5\" fill=\""
       << fill << "\"/>";
    if (w > 14)
      os << "<text x=\"" << num(x + w / 2) << "\" y=\"" << num(rowH * d + 14)
         << "\" text-anchor=\"middle\" fill=\"#fff\">"
         << e->getInteger("microbatch").value_or(0) << "</text>";
    os << "\n";
  }
  os << "<text x=\"" << num(left) << "\" y=\"" << num(rowH * devices + 20)
     << "\">0</text><text x=\"" << num(left + width) << "\" y=\""
     << num(rowH * devices + 20) << "\" text-anchor=\"end\">"
     << formatSeconds(end) << "</text>\n</svg>\n";
  os << "<p class=\"note\">Forward (blue), backward (orange) and "
        "weight-gradient (green) passes of each microbatch";
  if (std::optional<StringRef> schedule = pipeline->getString("schedule"))
    os << ", schedule " << escape(*schedule);
  os << ".</p>\n";
}

void HtmlWriter::writeOps() {
  os << "<h2>Every op's sharding per grid axis</h2>\n<p class=\"note\">Per "
        "grid axis: the result dimensions it splits (<code>out0[1]</code>: "
        "dimension 1 of result 0), or the operand dimensions when it splits "
        "no result (a contraction, <code>in1[0]</code>), with "
        "<code>&sum;</code> for a pending sum; grey: replicated over that "
        "axis. A repeated block is drawn once.";
  if (parts.size() > 1)
    os << " One table per pipeline stage, over the axes of the stage's own "
          "grid (its slab of the devices).";
  os << "</p>\n";
  for (const PlanPart &part : parts) {
    if (part.stage)
      os << "<h3>" << escape(describeStage(*part.stage)) << ": grid "
         << escape(formatGrid(*part.plan)) << "</h3>\n";
    writeOpTable(*part.plan);
  }
}

void HtmlWriter::writeOpTable(const json::Object &part) {
  const json::Array *ops = part.getArray("ops");
  if (!ops)
    return;
  if (std::optional<StringRef> error = part.getString("report_error"))
    os << "<p class=\"note\">" << escape(*error) << "</p>\n";
  int64_t rank = 0;
  std::vector<int64_t> gridSizes;
  if (const json::Array *g = part.getArray("grid"))
    for (const json::Value &v : *g)
      gridSizes.push_back(v.getAsInteger().value_or(1));
  rank = int64_t(gridSizes.size());
  // The repeated blocks: the first instance is drawn, the others share its
  // strategies.
  struct Block {
    std::string first, last;
    int64_t perBlock = 0, repeats = 0;
  };
  std::vector<Block> blocks;
  if (const json::Object *search = part.getObject("search"))
    if (const json::Array *list = search->getArray("repeated_blocks"))
      for (const json::Value &v : *list)
        if (const json::Object *b = v.getAsObject())
          blocks.push_back({b->getString("first_node").value_or("").str(),
                            b->getString("last_node").value_or("").str(),
                            b->getInteger("ops_per_block").value_or(0),
                            b->getInteger("repeats").value_or(0)});
  os << "<table><tr><th>node</th><th>op</th>";
  for (int64_t a = 0; a < rank; ++a)
    os << "<th>axis " << a << " (" << gridSizes[a] << ")</th>";
  os << "<th>collectives before it</th><th>cost</th></tr>\n";
  size_t blockIndex = 0;
  bool inBlock = false;
  for (const json::Value &v : *ops) {
    const json::Object *op = v.getAsObject();
    if (!op)
      continue;
    std::string node = op->getString("node").value_or("").str();
    if (op->getString("shares_strategy_with"))
      continue; // a later instance of a repeated block
    if (!inBlock && blockIndex < blocks.size() &&
        node == blocks[blockIndex].first) {
      inBlock = true;
      os << "<tr class=\"block\"><th colspan=\"" << (rank + 4)
         << "\">repeated block x" << blocks[blockIndex].repeats << ": "
         << blocks[blockIndex].perBlock << " ops from '"
         << escape(blocks[blockIndex].first) << "' to '"
         << escape(blocks[blockIndex].last) << "'</th></tr>\n";
    }
    os << "<tr><td>" << escape(node) << "</td><td>"
       << escape(op->getString("op").value_or("")) << "</td>";
    for (int64_t a = 0; a < rank; ++a) {
      AxisUse use = describeAxis(*op, a);
      if (use.parts.empty() && !use.partial) {
        os << "<td class=\"rep\">-</td>";
        continue;
      }
      if (use.partial && use.parts.empty()) {
        os << "<td class=\"part\">&sum;</td>";
        continue;
      }
      os << "<td class=\"split\" style=\"background:"
         << kDimColours[std::max(use.colourDim, 0) %
                        int(std::size(kDimColours))]
         << "\">" << escape(llvm::join(use.parts, " "))
         << (use.partial ? " &sum;" : "") << "</td>";
    }
    os << "<td>";
    bool first = true;
    forEachCollective(*op, [&](const json::Object &co) {
      os << (first ? "" : "<br>") << escape(co.getString("kind").value_or(""))
         << " "
         << escape(
                formatByteSize(co.getNumber("bytes_per_device").value_or(0)));
      first = false;
    });
    os << "</td><td class=\"num\">";
    if (std::optional<double> cost = op->getNumber("cost_s"))
      os << formatSeconds(*cost);
    os << "</td></tr>\n";
    if (inBlock && node == blocks[blockIndex].last) {
      inBlock = false;
      ++blockIndex;
      os << "<tr class=\"block\"><th colspan=\"" << (rank + 4)
         << "\">end of the repeated block</th></tr>\n";
    }
  }
  os << "</table>\n";
}

std::string mlir::autopar::renderPlanHtml(const json::Value &plan) {
  std::string html;
  llvm::raw_string_ostream os(html);
  if (const json::Object *root = plan.getAsObject()) {
    HtmlWriter(*root, os).write();
  } else {
    os << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
          "<title>autopar plan</title></head><body><p>not a plan</p></body>"
          "</html>\n";
  }
  return html;
}
