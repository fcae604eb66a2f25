//===- PlanReport.cpp - plan.json and plan.txt ----------------------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "autopar/Transforms/Planning/PlanReport.h"

#include "autopar/Analysis/Reshard.h"
#include "autopar/Analysis/ShardingRule.h"
#include "autopar/Dialect/Autopar/IR/ShardLayout.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <map>

using namespace mlir;
using namespace mlir::autopar;
namespace json = llvm::json;

static json::Array axesJson(ArrayRef<int64_t> axes) {
  json::Array a;
  for (int64_t axis : axes)
    a.push_back(axis);
  return a;
}

static json::Object shardingJson(ShardingAttr s) {
  json::Array split;
  for (int64_t d = 0; d < s.getRank(); ++d)
    split.push_back(axesJson(s.getDimAxes(d)));
  return json::Object{{"split", std::move(split)},
                      {"partial", axesJson(s.getPartial())}};
}

std::string mlir::autopar::formatShardingText(ShardingAttr s) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << '[';
  for (int64_t d = 0; d < s.getRank(); ++d) {
    if (d)
      os << ',';
    ArrayRef<int64_t> axes = s.getDimAxes(d);
    if (axes.empty())
      os << '_';
    else
      llvm::interleave(axes, os, "");
  }
  os << ']';
  if (s.isPartial()) {
    os << "+partial(";
    llvm::interleaveComma(s.getPartial(), os);
    os << ')';
  }
  return out;
}

/// The bytes of one element of `v`; float elements take `floatBytes` when
/// it is set (the plan's precision, `meta.extra["precision"]`).
static int64_t elementBytes(Value v, std::optional<int64_t> floatBytes) {
  Type t = cast<RankedTensorType>(v.getType()).getElementType();
  if (floatBytes && isa<FloatType>(t))
    return *floatBytes;
  return std::max<int64_t>(1, t.getIntOrFloatBitWidth() / 8);
}

/// The element size of the precision the plan was priced with, if any.
static std::optional<int64_t> getPrecisionBytes(const PlanMetadata &meta) {
  auto it = meta.extra.find("precision");
  if (it == meta.extra.end())
    return std::nullopt;
  std::optional<StringRef> name = it->second.getAsString();
  if (!name)
    return std::nullopt;
  if (*name == "f32")
    return 4;
  if (*name == "bf16" || *name == "f16")
    return 2;
  return std::nullopt;
}

/// The collectives taking `v` from `from` to `to`; their bytes count into
/// `totalBytes` unless `counted` holds (v, to) already: the partitioner
/// shares one reshard of a value between all its readers that need `to`.
static json::Array reshardJson(Value v, ShardingAttr from, ShardingAttr to,
                               ArrayRef<int64_t> gridShape,
                               std::optional<int64_t> floatBytes,
                               int64_t &totalBytes,
                               DenseSet<std::pair<Value, Attribute>> &counted) {
  bool count = counted.insert({v, to}).second;
  json::Array steps;
  ArrayRef<int64_t> shape = cast<RankedTensorType>(v.getType()).getShape();
  for (const ReshardStep &step : planCheapestReshard(
           from, to, shape, elementBytes(v, floatBytes), gridShape)) {
    int64_t bytes = getReshardStepBytes(step, shape,
                                        elementBytes(v, floatBytes), gridShape);
    if (count)
      totalBytes += bytes;
    json::Object o{{"kind", stringifyReshardKind(step.kind)},
                   {"axes", axesJson(step.axes)},
                   {"bytes_per_device", bytes}};
    if (step.dim >= 0)
      o["dim"] = step.dim;
    if (step.otherDim >= 0)
      o["to_dim"] = step.otherDim;
    steps.push_back(std::move(o));
  }
  return steps;
}

json::Value mlir::autopar::buildPlanJson(ModuleOp annotated,
                                         const PlanMetadata &meta) {
  shard::GridOp grid = getUniqueGrid(annotated, /*emitErrors=*/false);
  SmallVector<int64_t> gridShape;
  if (grid)
    gridShape.assign(grid.getShape().begin(), grid.getShape().end());
  json::Object values;
  json::Array ops;
  int64_t totalBytes = 0;
  DenseSet<std::pair<Value, Attribute>> counted;
  std::optional<int64_t> floatBytes = getPrecisionBytes(meta);
  auto func = annotated.lookupSymbol<func::FuncOp>("main");
  auto record = [&](Value v) {
    if (ShardingAttr s = getSharding(v)) {
      std::string name = getOnnxValueName(v);
      if (!name.empty())
        values[name] = shardingJson(s);
    }
  };
  if (func) {
    for (BlockArgument arg : func.getArguments())
      record(arg);
    func.walk([&](Operation *op) {
      if (isa<func::FuncOp>(op))
        return;
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        json::Array outputs;
        for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
          auto want =
              func.getResultAttrOfType<ShardingAttr>(i, kShardingAttrName);
          ShardingAttr have = getSharding(v);
          if (!want || !have)
            continue;
          outputs.push_back(json::Object{
              {"value", getOnnxValueName(v)},
              {"sharding", formatShardingText(want)},
              {"collectives", reshardJson(v, have, want, gridShape, floatBytes,
                                          totalBytes, counted)}});
        }
        ops.push_back(json::Object{{"node", "<outputs>"},
                                   {"op", "return"},
                                   {"operands", std::move(outputs)}});
        return;
      }
      for (Value r : op->getResults())
        record(r);
      if (isa<WeightOp, ConstantOp>(op))
        return;
      FailureOr<OpShardingPlan> plan = getOpShardingPlan(op);
      if (failed(plan))
        return;
      json::Array operands;
      for (auto [i, v] : llvm::enumerate(op->getOperands())) {
        ShardingAttr have = getSharding(v);
        ShardingAttr want = plan->requiredOperands[i];
        operands.push_back(json::Object{
            {"value", getOnnxValueName(v)},
            {"sharding", formatShardingText(want)},
            {"collectives", reshardJson(v, have, want, gridShape, floatBytes,
                                        totalBytes, counted)}});
      }
      json::Array loops;
      for (const SmallVector<int64_t> &axes : plan->loops)
        loops.push_back(axesJson(axes));
      json::Array results;
      for (auto [i, v] : llvm::enumerate(op->getResults()))
        results.push_back(
            json::Object{{"value", getOnnxValueName(v)},
                         {"sharding", formatShardingText(plan->results[i])}});
      json::Object entry{{"node", getOnnxNodeName(op)},
                         {"op", op->getName().getStringRef()},
                         {"loops", std::move(loops)},
                         {"operands", std::move(operands)},
                         {"results", std::move(results)}};
      auto details = meta.opDetails.find(op);
      if (details != meta.opDetails.end())
        for (const auto &kv : details->second)
          if (kv.first != "loops")
            entry[kv.first] = kv.second;
      ops.push_back(std::move(entry));
    });
  }
  json::Array gridJson;
  for (int64_t s : gridShape)
    gridJson.push_back(s);
  json::Object root{
      {"schema_version", kPlanSchemaVersion},
      {"grid", std::move(gridJson)},
      {"model_sha256", meta.modelSha256},
      {"mode", meta.mode},
      {"strategy", meta.strategy},
      {"search_time_s", meta.searchTimeSeconds},
      {"predicted", json::Object{{"comm_bytes_per_device", totalBytes}}},
      {"values", std::move(values)},
      {"ops", std::move(ops)},
  };
  for (const auto &kv : meta.extra) {
    if (kv.first == "predicted") {
      json::Object *predicted = root.getObject("predicted");
      if (const json::Object *more = kv.second.getAsObject())
        for (const auto &p : *more)
          (*predicted)[p.first] = p.second;
      continue;
    }
    root[kv.first] = kv.second;
  }
  return root;
}

static std::string formatSeconds(double s) {
  if (s == 0)
    return "0 s";
  if (std::fabs(s) >= 1)
    return llvm::formatv("{0:f3} s", s).str();
  if (std::fabs(s) >= 1e-3)
    return llvm::formatv("{0:f3} ms", s * 1e3).str();
  return llvm::formatv("{0:f3} us", s * 1e6).str();
}

std::string mlir::autopar::formatByteSize(double bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (std::fabs(bytes) >= 1024 && u < 5) {
    bytes /= 1024;
    ++u;
  }
  return llvm::formatv("{0:f2} {1}", bytes, units[u]).str();
}

/// The predicted time and memory, the baselines and the search, for people.
static void renderPrediction(llvm::raw_ostream &os, const json::Object &root) {
  const json::Object *pred = root.getObject("predicted");
  if (!pred || !pred->getNumber("step_time_s"))
    return;
  const json::Object *memory = root.getObject("memory");
  os << "\npredicted per device ("
     << root.getString("mode").value_or("inference") << " step)\n";
  double step = *pred->getNumber("step_time_s");
  double compute = pred->getNumber("compute_s").value_or(0);
  double comm = pred->getNumber("comm_s").value_or(0);
  if (root.getObject("pipeline"))
    os << llvm::formatv("  step time     {0}  = the busiest stage's compute "
                        "{1} + communication {2} + waits for other stages "
                        "(bubble, transfers, gradient reductions) {3}\n",
                        formatSeconds(step), formatSeconds(compute),
                        formatSeconds(comm),
                        formatSeconds(std::max(0.0, step - compute - comm)));
  else if (std::optional<double> overhead = pred->getNumber("step_overhead_s"))
    os << llvm::formatv("  step time     {0}  = compute {1} + communication "
                        "{2} + the step's fixed cost {3}\n",
                        formatSeconds(step), formatSeconds(compute),
                        formatSeconds(comm), formatSeconds(*overhead));
  else
    os << llvm::formatv("  step time     {0}  = compute {1} + communication "
                        "{2}\n",
                        formatSeconds(step), formatSeconds(compute),
                        formatSeconds(comm));
  if (std::optional<double> perDevice =
          pred->getNumber("model_flops_per_device_s")) {
    os << llvm::formatv("  throughput    {0:e3} FLOP/s per device of model "
                        "FLOPs (contractions)",
                        *perDevice);
    if (std::optional<double> mfu = pred->getNumber("mfu"))
      os << llvm::formatv(", MFU {0:p}", *mfu);
    os << "\n";
  }
  os << "  peak memory   "
     << formatByteSize(pred->getNumber("peak_memory_bytes").value_or(0))
     << " at '" << pred->getString("peak_at").value_or("") << "'";
  if (memory) {
    if (std::optional<double> limit = memory->getNumber("limit_bytes"))
      os << " (limit " << formatByteSize(*limit) << ")";
    if (memory->getBoolean("binding").value_or(false))
      os << "\n  memory limit  binding: the fastest plan needs "
         << formatByteSize(
                memory->getNumber("unconstrained_peak_bytes").value_or(0))
         << " and would take "
         << formatSeconds(
                memory->getNumber("unconstrained_step_time_s").value_or(0));
    if (std::optional<double> weights = memory->getNumber("weight_bytes"))
      os << "\n  of which      weights " << formatByteSize(*weights)
         << ", activations and resharded copies "
         << formatByteSize(memory->getNumber("activation_bytes").value_or(0));
    if (std::optional<double> params =
            memory->getNumber("parameter_state_bytes"))
      os << "\n  of which      parameters, gradients and optimizer state "
         << formatByteSize(*params) << ", activations "
         << formatByteSize(memory->getNumber("activation_bytes").value_or(0));
  }
  os << "\n";
  // Time by op kind.
  if (const json::Array *ops = root.getArray("ops")) {
    std::map<std::string, std::pair<double, double>> byKind;
    for (const json::Value &v : *ops) {
      const json::Object *op = v.getAsObject();
      if (!op || !op->getNumber("cost_s"))
        continue;
      auto &entry = byKind[op->getString("op").value_or("").str()];
      entry.first += op->getNumber("compute_s").value_or(0);
      entry.second += 1;
    }
    if (!byKind.empty()) {
      os << "  compute by op kind:\n";
      for (const auto &[kind, entry] : byKind)
        os << llvm::formatv("    {0,-24} {1,12}  ({2} op{3})\n", kind,
                            formatSeconds(entry.first), (int64_t)entry.second,
                            entry.second == 1 ? "" : "s");
    }
  }
  if (const json::Object *baselines = root.getObject("baselines")) {
    os << "  baselines (same cost model):\n";
    for (StringRef name : {"replicated", "data", "tensor"}) {
      const json::Object *b = baselines->getObject(name);
      if (!b)
        continue;
      if (!b->getBoolean("valid").value_or(true)) {
        os << llvm::formatv("    {0,-10} cannot run here: {1}\n", name,
                            b->getString("reason").value_or(""));
        continue;
      }
      double step = b->getNumber("step_time_s").value_or(0);
      os << llvm::formatv(
          "    {0,-10} step {1,12}  peak {2,12}  {3}  (chosen is {4:f2}x "
          "faster)\n",
          name, formatSeconds(step),
          formatByteSize(b->getNumber("peak_memory_bytes").value_or(0)),
          b->getBoolean("fits").value_or(false) ? "fits     " : "DOES NOT FIT",
          *pred->getNumber("step_time_s") > 0
              ? step / *pred->getNumber("step_time_s")
              : 0.0);
    }
  }
  if (const json::Object *search = root.getObject("search")) {
    os << "  search        " << search->getString("method").value_or("")
       << (search->getBoolean("optimal").value_or(false)
               ? ", proven optimal"
               : ", NOT proven optimal")
       << llvm::formatv(", {0} variables, {1} constraints, {2} s\n",
                        search->getInteger("variables").value_or(0),
                        search->getInteger("constraints").value_or(0),
                        root.getNumber("search_time_s").value_or(0));
    if (std::optional<StringRef> space = search->getString("space"))
      os << "  search space  " << *space << "\n";
    if (const json::Array *blocks = search->getArray("repeated_blocks"))
      for (const json::Value &bv : *blocks) {
        const json::Object *b = bv.getAsObject();
        os << llvm::formatv("  repeated      {0} x {1} ops from '{2}' to "
                            "'{3}' share one strategy\n",
                            b->getInteger("repeats").value_or(0),
                            b->getInteger("ops_per_block").value_or(0),
                            b->getString("first_node").value_or(""),
                            b->getString("last_node").value_or(""));
      }
  }
  if (std::optional<StringRef> note = root.getString("note"))
    os << "  note          " << *note << "\n";
}

/// The ops of a plan, one entry each with its strategy and collectives.
static void renderOps(llvm::raw_ostream &os, const json::Array &ops) {
  for (const json::Value &v : ops) {
    const json::Object *op = v.getAsObject();
    os << llvm::formatv("{0,-28} {1}", op->getString("node").value_or(""),
                        op->getString("op").value_or(""));
    if (std::optional<double> cost = op->getNumber("cost_s"))
      os << llvm::formatv("  cost {0}", formatSeconds(*cost));
    os << "\n";
    if (std::optional<StringRef> strategy = op->getString("strategy"))
      os << "    strategy  " << *strategy << "\n";
    if (const json::Object *r = op->getObject("runner_up"))
      os << "    runner-up " << r->getString("strategy").value_or("")
         << llvm::formatv(
                "  (+{0})\n",
                formatSeconds(r->getNumber("cost_delta_s").value_or(0)));
    if (const json::Array *operands = op->getArray("operands"))
      for (const json::Value &ov : *operands) {
        const json::Object *o = ov.getAsObject();
        os << llvm::formatv("    in  {0,-24} {1}",
                            o->getString("value").value_or(""),
                            o->getString("sharding").value_or(""));
        if (const json::Array *steps = o->getArray("collectives"))
          for (const json::Value &sv : *steps) {
            const json::Object *s = sv.getAsObject();
            os << "  <- " << s->getString("kind").value_or("") << " axes=[";
            if (const json::Array *axes = s->getArray("axes"))
              llvm::interleaveComma(*axes, os, [&](const json::Value &a) {
                os << *a.getAsInteger();
              });
            os << "] " << s->getInteger("bytes_per_device").value_or(0) << " B";
          }
        os << "\n";
      }
    if (const json::Array *results = op->getArray("results"))
      for (const json::Value &rv : *results) {
        const json::Object *r = rv.getAsObject();
        os << llvm::formatv("    out {0,-24} {1}\n",
                            r->getString("value").value_or(""),
                            r->getString("sharding").value_or(""));
      }
  }
}

std::string mlir::autopar::renderPlanText(const json::Value &plan) {
  std::string out;
  llvm::raw_string_ostream os(out);
  const json::Object *root = plan.getAsObject();
  if (!root)
    return out;
  os << "autopar plan (schema "
     << root->getInteger("schema_version").value_or(0) << ")\n";
  os << "  grid:     ";
  if (const json::Array *grid = root->getArray("grid"))
    llvm::interleave(
        *grid, os, [&](const json::Value &v) { os << *v.getAsInteger(); }, "x");
  os << "\n  strategy: " << root->getString("strategy").value_or("") << "\n";
  os << "  mode:     " << root->getString("mode").value_or("") << "\n";
  if (std::optional<StringRef> precision = root->getString("precision"))
    os << "  precision: " << *precision
       << (root->getString("mode") == "training"
               ? " (master weights, gradients and Adam states fp32)"
               : "")
       << "\n";
  if (const json::Object *batch = root->getObject("batch")) {
    os << llvm::formatv("  batch:     {0} = {1} microbatches of {2}, "
                        "gradients reduced once per step",
                        batch->getInteger("global").value_or(0),
                        batch->getInteger("microbatches").value_or(0),
                        batch->getInteger("per_microbatch").value_or(0));
    if (const json::Array *tried = batch->getArray("searched")) {
      os << " (searched:";
      for (const json::Value &v : *tried) {
        const json::Object *t = v.getAsObject();
        os << (&v == &tried->front() ? " " : ", ")
           << t->getInteger("microbatches").value_or(0) << " -> ";
        if (std::optional<double> step = t->getNumber("step_time_s")) {
          os << formatSeconds(*step);
          if (std::optional<int64_t> stages = t->getInteger("stages"))
            os << " with " << *stages << " stage" << (*stages == 1 ? "" : "s");
        } else if (t->get("pruned")) {
          os << "none under "
             << formatSeconds(t->getNumber("cutoff_s").value_or(0));
        } else {
          os << "no plan";
        }
      }
      os << ")";
    }
    os << "\n";
  }
  if (std::optional<StringRef> loss = root->getString("loss"))
    os << "  loss:      " << *loss << "\n";
  if (const json::Array *frozen = root->getArray("frozen")) {
    os << "  frozen:   ";
    for (const json::Value &name : *frozen)
      os << " " << name.getAsString().value_or("");
    os << " (buffers: no gradient, no optimizer state)\n";
  }
  if (std::optional<StringRef> optimizer = root->getString("optimizer"))
    os << "  optimizer: " << *optimizer << "\n";
  if (const json::Object *recompute = root->getObject("recompute")) {
    os << "  recompute: " << recompute->getString("setting").value_or("none");
    if (std::optional<int64_t> blocks = recompute->getInteger("blocks"))
      os << llvm::formatv(" ({0} of {1} repeated blocks)", *blocks,
                          recompute->getInteger("of_blocks").value_or(0));
    os << llvm::formatv(
        ", {0} of forward recomputed per step",
        formatSeconds(recompute->getNumber("recompute_s").value_or(0)));
    if (recompute->getBoolean("searched").value_or(false))
      os << " (searched: none unless memory binds, else the fastest fitting "
            "of none, selective and full)";
    os << "\n";
  }
  if (const json::Object *fixed = root->getObject("fixed")) {
    // `autopar plan` prices the configuration (microbatches, fit); a
    // compiled plan records only what it was compiled with.
    os << "  fixed:     " << fixed->getString("config").value_or("");
    if (std::optional<int64_t> count = fixed->getInteger("microbatches"))
      os << " = " << *count << (*count == 1 ? " microbatch" : " microbatches");
    os << ", grid viewed as ";
    if (const json::Array *view = fixed->getArray("grid_view"))
      llvm::interleave(
          *view, os, [&](const json::Value &v) { os << *v.getAsInteger(); },
          "x");
    if (std::optional<bool> fits = fixed->getBoolean("fits"))
      os << (*fits ? ", fits" : ", does NOT fit");
    os << "\n";
    if (const json::Object *own = fixed->getObject("own_plan")) {
      if (std::optional<StringRef> error = own->getString("error"))
        os << "  autopar's own plan: " << *error << "\n";
      else {
        std::string stages;
        if (const json::Object *pipe = own->getObject("pipeline"))
          stages = llvm::formatv(", {0} stages ({1}, layout {2})",
                                 pipe->getInteger("stages").value_or(0),
                                 pipe->getString("schedule").value_or(""),
                                 pipe->getString("layout").value_or(""))
                       .str();
        os << llvm::formatv(
            "  autopar's own plan: step {0}, recompute {1}{3}; the fixed "
            "configuration takes {2:f3}x as long\n",
            formatSeconds(own->getNumber("step_time_s").value_or(0)),
            own->getString("recompute").value_or("none"),
            fixed->getNumber("fixed_over_own_plan").value_or(0), stages);
      }
    }
  }
  if (const json::Object *search = root->getObject("stage_search")) {
    os << "  stages:    " << search->getInteger("chosen").value_or(0)
       << " chosen among";
    if (const json::Array *tried = search->getArray("tried"))
      for (const json::Value &v : *tried) {
        const json::Object *t = v.getAsObject();
        os << " " << t->getInteger("stages").value_or(0) << " (";
        if (std::optional<double> step = t->getNumber("step_time_s"))
          os << formatSeconds(*step)
             << (t->getBoolean("fits").value_or(false) ? "" : ", does not fit");
        else if (t->get("pruned"))
          os << "none under "
             << formatSeconds(t->getNumber("cutoff_s").value_or(0));
        else
          os << "no plan";
        os << ")";
      }
    if (std::optional<double> seconds = search->getNumber("search_time_s"))
      os << "; searched in " << formatSeconds(*seconds);
    os << "\n";
  }
  if (const json::Object *pipe = root->getObject("pipeline")) {
    int64_t chunks = pipe->getInteger("chunks").value_or(1);
    os << llvm::formatv("  pipeline:  {0} stages{5}, schedule {1}, {2} "
                        "microbatches, bubble {3:p}, layout {4}\n",
                        pipe->getInteger("stages").value_or(0),
                        pipe->getString("schedule").value_or(""),
                        pipe->getInteger("microbatches").value_or(0),
                        pipe->getNumber("bubble_fraction").value_or(0),
                        pipe->getString("layout").value_or(""),
                        chunks > 1 ? " x " + std::to_string(chunks) + " chunks"
                                   : std::string());
    if (const json::Array *stages = pipe->getArray("stage_list"))
      for (const json::Value &sv : *stages) {
        const json::Object *st = sv.getAsObject();
        const json::Array *blocks = st->getArray("blocks");
        const json::Array *slab = st->getArray("slab");
        std::string grid;
        if (const json::Array *g = st->getArray("grid"))
          for (auto [i, v] : llvm::enumerate(*g))
            grid += (i ? "x" : "") + std::to_string(*v.getAsInteger());
        std::string virtualStage;
        if (std::optional<int64_t> chunk = st->getInteger("chunk"))
          virtualStage =
              " (chunk " + std::to_string(*chunk) + " of device row " +
              std::to_string(st->getInteger("device").value_or(0)) + ")";
        // The memory limit the stage was checked against, and its class on
        // a heterogeneous grid.
        std::string limitText;
        if (std::optional<int64_t> limit = st->getInteger("memory_limit_bytes");
            limit && *limit > 0)
          limitText = " of " + formatByteSize(*limit);
        if (std::optional<StringRef> name = st->getString("device_class"))
          limitText += " (class " + name->str() + ")";
        os << llvm::formatv(
            "    stage {0}{15}: blocks [{1}, {2}){3}{4} on rows [{5}, {6}) of "
            "axis 0 (grid {7}); per microbatch forward {8}, backward {9}; "
            "per step {10}; send {11}; {12} microbatches in flight; peak "
            "{13}{16}; recompute {14}\n",
            st->getInteger("index").value_or(0),
            blocks ? *(*blocks)[0].getAsInteger() : 0,
            blocks ? *(*blocks)[1].getAsInteger() : 0,
            st->getBoolean("prefix").value_or(false) ? " + ops before" : "",
            st->getBoolean("suffix").value_or(false) ? " + ops after" : "",
            slab ? *(*slab)[0].getAsInteger() : 0,
            slab ? *(*slab)[1].getAsInteger() : 0, grid,
            formatSeconds(st->getNumber("forward_s").value_or(0)),
            formatSeconds(st->getNumber("backward_s").value_or(0)),
            formatSeconds(st->getNumber("per_step_s").value_or(0)),
            formatSeconds(st->getNumber("transfer_s").value_or(0)),
            st->getInteger("in_flight").value_or(0),
            formatByteSize(st->getInteger("peak_memory_bytes").value_or(0)),
            st->getString("recompute").value_or("none"), virtualStage,
            limitText);
      }
  }
  if (const json::Object *pred = root->getObject("predicted"))
    os << "  communication per device: "
       << pred->getInteger("comm_bytes_per_device").value_or(0) << " bytes\n";
  renderPrediction(os, *root);
  os << "\nsharding notation: one entry per dimension, '_' = whole, digits = "
        "grid axes that split it (major first); +partial(a) = pending sum over "
        "axis a\n\n";
  if (const json::Array *ops = root->getArray("ops"))
    renderOps(os, *ops);
  if (const json::Object *pipe = root->getObject("pipeline"))
    if (const json::Array *stages = pipe->getArray("stage_list"))
      for (const json::Value &sv : *stages) {
        const json::Object *stage = sv.getAsObject();
        os << "\nstage " << stage->getInteger("index").value_or(0) << ":\n";
        if (const json::Object *plan = stage->getObject("plan"))
          if (const json::Array *ops = plan->getArray("ops"))
            renderOps(os, *ops);
      }
  return out;
}

FailureOr<std::map<std::string, ShardingAttr>>
mlir::autopar::readPlanValues(StringRef path, MLIRContext *ctx, Location loc) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return emitError(loc) << "cannot read plan file '" << path
                          << "': " << buffer.getError().message();
  llvm::Expected<json::Value> parsed = json::parse((*buffer)->getBuffer());
  if (!parsed)
    return emitError(loc) << "plan file '" << path << "' is not valid JSON: "
                          << llvm::toString(parsed.takeError());
  const json::Object *root = parsed->getAsObject();
  if (!root)
    return emitError(loc) << "plan file '" << path << "' must hold an object";
  if (std::optional<int64_t> version = root->getInteger("schema_version");
      !version || *version != kPlanSchemaVersion)
    return emitError(loc) << "plan file '" << path << "' has schema_version "
                          << (version ? std::to_string(*version) : "none")
                          << ", expected " << kPlanSchemaVersion;
  if (const json::Object *pipeline = root->getObject("pipeline"))
    return emitError(loc)
           << "plan file '" << path << "' holds a pipeline plan of "
           << pipeline->getInteger("stages").value_or(0)
           << " stages: each stage's plan applies to its own stage program "
              "(autopar compile splits the stages first)";
  const json::Object *values = root->getObject("values");
  if (!values)
    return emitError(loc) << "plan file '" << path
                          << "' has no \"values\" object";
  std::map<std::string, ShardingAttr> result;
  auto readAxes = [&](const json::Value *v, SmallVector<int64_t> &axes,
                      StringRef what, StringRef name) -> LogicalResult {
    const json::Array *array = v ? v->getAsArray() : nullptr;
    if (!array)
      return emitError(loc) << "plan value '" << name << "': " << what
                            << " must be an array of grid axes";
    for (const json::Value &a : *array) {
      std::optional<int64_t> axis = a.getAsInteger();
      if (!axis || *axis < 0)
        return emitError(loc) << "plan value '" << name << "': " << what
                              << " holds a non-axis entry";
      axes.push_back(*axis);
    }
    return success();
  };
  for (const auto &entry : *values) {
    std::string name = entry.first.str();
    const json::Object *obj = entry.second.getAsObject();
    const json::Array *split = obj ? obj->getArray("split") : nullptr;
    if (!split)
      return emitError(loc)
             << "plan value '" << name << "' needs a \"split\" array";
    SmallVector<SmallVector<int64_t>> dims;
    for (const json::Value &d : *split) {
      dims.emplace_back();
      if (failed(readAxes(&d, dims.back(), "split entry", name)))
        return failure();
    }
    SmallVector<int64_t> partial;
    if (const json::Value *p = obj->get("partial"))
      if (failed(readAxes(p, partial, "partial", name)))
        return failure();
    // Verify through the attribute's own verifier.
    SmallVector<DenseI64ArrayAttr> dimAttrs;
    for (const SmallVector<int64_t> &axes : dims)
      dimAttrs.push_back(DenseI64ArrayAttr::get(ctx, axes));
    llvm::sort(partial);
    ShardingAttr s = ShardingAttr::getChecked(
        [&]() { return emitError(loc) << "plan value '" << name << "': "; },
        ctx, ArrayRef<DenseI64ArrayAttr>(dimAttrs), ArrayRef<int64_t>(partial));
    if (!s)
      return failure();
    result[name] = s;
  }
  return result;
}

LogicalResult mlir::autopar::writePlanFiles(ModuleOp annotated,
                                            const PlanMetadata &meta,
                                            StringRef outDir,
                                            std::string &planSha256,
                                            std::string &error) {
  json::Value plan = buildPlanJson(annotated, meta);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", plan) << "\n";
  planSha256 =
      llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef(text)),
                  /*LowerCase=*/true);
  auto write = [&](StringRef name, StringRef contents) -> LogicalResult {
    SmallString<256> path(outDir);
    llvm::sys::path::append(path, name);
    std::error_code ec;
    llvm::raw_fd_ostream file(path, ec);
    if (ec) {
      error = ("cannot write '" + path + "': " + ec.message()).str();
      return failure();
    }
    file << contents;
    return success();
  };
  if (failed(write("plan.json", text)) ||
      failed(write("plan.txt", renderPlanText(plan))))
    return failure();
  return success();
}
