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
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

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

/// Compact form for people: `[0,_]+p1` = dim 0 over axis 0, pending over 1.
static std::string shardingText(ShardingAttr s) {
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

static int64_t elementBytes(Value v) {
  Type t = cast<RankedTensorType>(v.getType()).getElementType();
  return std::max<int64_t>(1, t.getIntOrFloatBitWidth() / 8);
}

static json::Array reshardJson(Value v, ShardingAttr from, ShardingAttr to,
                               ArrayRef<int64_t> gridShape,
                               int64_t &totalBytes) {
  json::Array steps;
  ArrayRef<int64_t> shape = cast<RankedTensorType>(v.getType()).getShape();
  for (const ReshardStep &step :
       planCheapestReshard(from, to, shape, elementBytes(v), gridShape)) {
    int64_t bytes = getReshardStepBytes(step, shape, elementBytes(v), gridShape);
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
          auto want = func.getResultAttrOfType<ShardingAttr>(i, kShardingAttrName);
          ShardingAttr have = getSharding(v);
          if (!want || !have)
            continue;
          outputs.push_back(json::Object{
              {"value", getOnnxValueName(v)},
              {"sharding", shardingText(want)},
              {"collectives",
               reshardJson(v, have, want, gridShape, totalBytes)}});
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
            {"sharding", shardingText(want)},
            {"collectives", reshardJson(v, have, want, gridShape, totalBytes)}});
      }
      json::Array loops;
      for (const SmallVector<int64_t> &axes : plan->loops)
        loops.push_back(axesJson(axes));
      json::Array results;
      for (auto [i, v] : llvm::enumerate(op->getResults()))
        results.push_back(json::Object{{"value", getOnnxValueName(v)},
                                       {"sharding", shardingText(plan->results[i])}});
      ops.push_back(json::Object{{"node", getOnnxNodeName(op)},
                                 {"op", op->getName().getStringRef()},
                                 {"loops", std::move(loops)},
                                 {"operands", std::move(operands)},
                                 {"results", std::move(results)}});
    });
  }
  json::Array gridJson;
  for (int64_t s : gridShape)
    gridJson.push_back(s);
  return json::Object{
      {"schema_version", kPlanSchemaVersion},
      {"grid", std::move(gridJson)},
      {"model_sha256", meta.modelSha256},
      {"mode", meta.mode},
      {"strategy", meta.strategy},
      {"search_time_s", 0.0},
      {"predicted", json::Object{{"comm_bytes_per_device", totalBytes}}},
      {"values", std::move(values)},
      {"ops", std::move(ops)},
  };
}

std::string mlir::autopar::renderPlanText(const json::Value &plan) {
  std::string out;
  llvm::raw_string_ostream os(out);
  const json::Object *root = plan.getAsObject();
  if (!root)
    return out;
  os << "autopar plan (schema " << root->getInteger("schema_version").value_or(0)
     << ")\n";
  os << "  grid:     ";
  if (const json::Array *grid = root->getArray("grid"))
    llvm::interleave(
        *grid, os, [&](const json::Value &v) { os << *v.getAsInteger(); }, "x");
  os << "\n  strategy: " << root->getString("strategy").value_or("") << "\n";
  os << "  mode:     " << root->getString("mode").value_or("") << "\n";
  if (const json::Object *pred = root->getObject("predicted"))
    os << "  communication per device: "
       << pred->getInteger("comm_bytes_per_device").value_or(0) << " bytes\n";
  os << "\nsharding notation: one entry per dimension, '_' = whole, digits = "
        "grid axes that split it (major first); +partial(a) = pending sum over "
        "axis a\n\n";
  if (const json::Array *ops = root->getArray("ops")) {
    for (const json::Value &v : *ops) {
      const json::Object *op = v.getAsObject();
      os << llvm::formatv("{0,-28} {1}\n", op->getString("node").value_or(""),
                          op->getString("op").value_or(""));
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
              os << "] " << s->getInteger("bytes_per_device").value_or(0)
                 << " B";
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
    return emitError(loc) << "plan file '" << path
                          << "' is not valid JSON: "
                          << llvm::toString(parsed.takeError());
  const json::Object *root = parsed->getAsObject();
  if (!root)
    return emitError(loc) << "plan file '" << path << "' must hold an object";
  if (std::optional<int64_t> version = root->getInteger("schema_version");
      !version || *version != kPlanSchemaVersion)
    return emitError(loc) << "plan file '" << path
                          << "' has schema_version "
                          << (version ? std::to_string(*version) : "none")
                          << ", expected " << kPlanSchemaVersion;
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
      return emitError(loc) << "plan value '" << name
                            << "' needs a \"split\" array";
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
  planSha256 = llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef(text)),
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
