//===- Cluster.cpp - the cluster description planning prices against ------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements the op classes of the cost model, the JSON form of a
// cluster description (parsing with checks, printing that round-trips) and
// the default location of the calibrated description.
//
//===----------------------------------------------------------------------===//

#include "autopar/Analysis/Cluster.h"

#include "autopar/Dialect/Autopar/IR/Autopar.h"
#include "autopar/Dialect/Autopar/IR/ShardLayout.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

#include <cmath>
#include <limits>
#include <set>

using namespace mlir;
using namespace mlir::autopar;

//===----------------------------------------------------------------------===//
// Op classes
//===----------------------------------------------------------------------===//

StringRef mlir::autopar::stringifyOpClass(OpClass c) {
  switch (c) {
  case OpClass::MatMul:
    return "matmul";
  case OpClass::Conv:
    return "conv";
  case OpClass::Elementwise:
    return "elementwise";
  case OpClass::Reduction:
    return "reduction";
  case OpClass::DataMovement:
    return "data_movement";
  case OpClass::DepthwiseConv:
    return "depthwise_conv";
  case OpClass::BatchedMatMul:
    return "batched_matmul";
  }
  llvm_unreachable("unknown op class");
}

std::optional<OpClass> mlir::autopar::symbolizeOpClass(StringRef name) {
  return llvm::StringSwitch<std::optional<OpClass>>(name)
      .Case("matmul", OpClass::MatMul)
      .Case("conv", OpClass::Conv)
      .Case("elementwise", OpClass::Elementwise)
      .Case("reduction", OpClass::Reduction)
      .Case("data_movement", OpClass::DataMovement)
      .Case("depthwise_conv", OpClass::DepthwiseConv)
      .Case("batched_matmul", OpClass::BatchedMatMul)
      .Default(std::nullopt);
}

OpClass mlir::autopar::classifyOp(Operation *op) {
  // Each op declares its class in ODS (Autopar_Cost).
  if (auto cost = dyn_cast<CostInterface>(op))
    return cost.getCostClass();
  return OpClass::Elementwise;
}

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

namespace {

/// Formats a JSON value for an error message (`-3`, `"fast"`, `null`).
std::string describe(const llvm::json::Value *value) {
  if (!value)
    return "nothing";
  return llvm::formatv("{0}", *value).str();
}

/// Reads the finite number `object[key]`; `what` names it in errors
/// (`device.flops`). `required` fields must be present; `allowZero` accepts 0.
LogicalResult readNumber(const llvm::json::Object &object, StringRef key,
                         const Twine &what, bool allowZero, double &out,
                         std::string &error) {
  const llvm::json::Value *value = object.get(key);
  std::optional<double> number = value ? value->getAsNumber() : std::nullopt;
  bool ok = number && std::isfinite(*number) &&
            (allowZero ? *number >= 0 : *number > 0);
  if (!ok) {
    error = (what + " must be a " + (allowZero ? "non-negative" : "positive") +
             " number, got " + describe(value))
                .str();
    return failure();
  }
  out = *number;
  return success();
}

} // namespace

/// `value` (named `what` in errors) as an object of the fields `first` and
/// `second` (and a `comment`), or nullptr with `error` set.
static const llvm::json::Object *
getFieldObject(const llvm::json::Value &value, const std::string &what,
               StringRef first, StringRef second, std::string &error) {
  const llvm::json::Object *fields = value.getAsObject();
  if (!fields) {
    error = what + " must be an object, got " + describe(&value);
    return nullptr;
  }
  for (const auto &entry : *fields)
    if (StringRef(entry.first) != first && StringRef(entry.first) != second &&
        entry.first != "comment") {
      error = ("unknown field '" + entry.first.str() + "' in " + what +
               " (expected " + first + " and " + second + ")")
                  .str();
      return nullptr;
    }
  return fields;
}

/// Reads the device fields of `device` into `out`; `prefix` names the object
/// in errors (`device`, `device_classes[1]`). Without `base`, `flops`,
/// `memory_bytes` and `memory_bandwidth` are required. With `base` (a device
/// class), `out` starts as `base`'s device fields, `flops` and
/// `memory_bytes` are required, and the calibrated rates not given scale
/// with the class's flops (memory bandwidth) over `base`'s.
static LogicalResult parseDeviceFields(const llvm::json::Object &device,
                                       StringRef prefix,
                                       const ClusterSpec *base,
                                       ClusterSpec &out, std::string &error) {
  std::string at = prefix.str() + ".";
  double memoryBytes = 0;
  if (base) {
    out.flops = base->flops;
    out.memoryBandwidth = base->memoryBandwidth;
    out.classFlops = base->classFlops;
    out.classBandwidth = base->classBandwidth;
    out.opOverhead = base->opOverhead;
    out.classOpSeconds = base->classOpSeconds;
    out.stepOverhead = base->stepOverhead;
    out.gemmEfficiencyMax = base->gemmEfficiencyMax;
    out.gemmHalfSize = base->gemmHalfSize;
    out.flopsByDtype = base->flopsByDtype;
    out.cacheBytes = base->cacheBytes;
    out.cacheBandwidth = base->cacheBandwidth;
  }
  if (failed(
          readNumber(device, "flops", at + "flops", false, out.flops, error)) ||
      failed(readNumber(device, "memory_bytes", at + "memory_bytes", false,
                        memoryBytes, error)))
    return failure();
  if ((!base || device.get("memory_bandwidth")) &&
      failed(readNumber(device, "memory_bandwidth", at + "memory_bandwidth",
                        false, out.memoryBandwidth, error)))
    return failure();
  if (memoryBytes >= static_cast<double>(std::numeric_limits<int64_t>::max())) {
    error = at + "memory_bytes is too large, got " +
            describe(device.get("memory_bytes"));
    return failure();
  }
  out.memoryBytes = static_cast<int64_t>(memoryBytes);
  if (base) {
    // Calibrated rates measured on `base`'s kind, carried over in proportion.
    double flopsScale = out.flops / base->flops;
    double bandwidthScale = out.memoryBandwidth / base->memoryBandwidth;
    for (double &rate : out.classFlops)
      rate *= flopsScale;
    for (double &rate : out.classBandwidth)
      rate *= bandwidthScale;
    for (auto &entry : out.flopsByDtype)
      entry.second *= flopsScale;
  }

  if (device.get("op_overhead_s") &&
      failed(readNumber(device, "op_overhead_s", at + "op_overhead_s", true,
                        out.opOverhead, error)))
    return failure();
  if (device.get("step_overhead_s") &&
      failed(readNumber(device, "step_overhead_s", at + "step_overhead_s", true,
                        out.stepOverhead, error)))
    return failure();
  for (StringRef field :
       {"flops_by_class", "bandwidth_by_class", "op_seconds_by_class"}) {
    const llvm::json::Value *byClass = device.get(field);
    if (!byClass)
      continue;
    std::string fieldName = at + field.str();
    const llvm::json::Object *classes = byClass->getAsObject();
    if (!classes) {
      error = fieldName + " must be an object, got " + describe(byClass);
      return failure();
    }
    bool seconds = field == "op_seconds_by_class";
    std::array<double, kNumOpClasses> &rates = seconds ? out.classOpSeconds
                                               : field == "flops_by_class"
                                                   ? out.classFlops
                                                   : out.classBandwidth;
    rates.fill(0);
    // Sorted, so that the first error does not depend on hash order.
    SmallVector<StringRef> keys;
    for (const auto &entry : *classes)
      keys.push_back(entry.first);
    llvm::sort(keys);
    for (StringRef key : keys) {
      std::optional<OpClass> c = symbolizeOpClass(key);
      if (!c) {
        error = ("unknown op class '" + key + "' in " + fieldName +
                 " (expected matmul, batched_matmul, conv, depthwise_conv, "
                 "elementwise, reduction or data_movement)")
                    .str();
        return failure();
      }
      double rate = 0;
      if (failed(readNumber(*classes, key, fieldName + "." + key,
                            /*allowZero=*/seconds, rate, error)))
        return failure();
      rates[static_cast<unsigned>(*c)] = rate;
    }
  }

  if (const llvm::json::Value *efficiency = device.get("matmul_efficiency")) {
    const llvm::json::Object *fields = getFieldObject(
        *efficiency, at + "matmul_efficiency", "max", "half_size", error);
    if (!fields)
      return failure();
    if (failed(readNumber(*fields, "max", at + "matmul_efficiency.max", false,
                          out.gemmEfficiencyMax, error)) ||
        failed(readNumber(*fields, "half_size",
                          at + "matmul_efficiency.half_size", true,
                          out.gemmHalfSize, error)))
      return failure();
    if (out.gemmEfficiencyMax > 1) {
      error = at +
              "matmul_efficiency.max must be at most 1 (a fraction "
              "of the matmul rate), got " +
              describe(fields->get("max"));
      return failure();
    }
  }

  if (const llvm::json::Value *cache = device.get("cache")) {
    const llvm::json::Object *fields =
        getFieldObject(*cache, at + "cache", "bytes", "bandwidth", error);
    if (!fields)
      return failure();
    double cacheBytes = 0;
    if (failed(readNumber(*fields, "bytes", at + "cache.bytes", false,
                          cacheBytes, error)) ||
        failed(readNumber(*fields, "bandwidth", at + "cache.bandwidth", false,
                          out.cacheBandwidth, error)))
      return failure();
    if (cacheBytes >=
        static_cast<double>(std::numeric_limits<int64_t>::max())) {
      error = at + "cache.bytes is too large, got " +
              describe(fields->get("bytes"));
      return failure();
    }
    out.cacheBytes = static_cast<int64_t>(cacheBytes);
  }

  if (const llvm::json::Value *byDtype = device.get("flops_by_dtype")) {
    const llvm::json::Object *types = byDtype->getAsObject();
    if (!types) {
      error = at + "flops_by_dtype must be an object, got " + describe(byDtype);
      return failure();
    }
    out.flopsByDtype.clear();
    SmallVector<StringRef> keys;
    for (const auto &entry : *types)
      keys.push_back(entry.first);
    llvm::sort(keys);
    for (StringRef key : keys) {
      if (!llvm::is_contained({"f64", "f32", "f16", "bf16"}, key)) {
        error = ("unknown element type '" + key + "' in " + at +
                 "flops_by_dtype (expected f64, f32, f16 or bf16)")
                    .str();
        return failure();
      }
      double rate = 0;
      if (failed(readNumber(*types, key, at + "flops_by_dtype." + key.str(),
                            false, rate, error)))
        return failure();
      out.flopsByDtype[key.str()] = rate;
    }
  }
  return success();
}

/// Reads `device_classes` (when present) into `cluster.deviceClasses`.
static LogicalResult parseDeviceClasses(const llvm::json::Object &root,
                                        ClusterSpec &cluster,
                                        std::string &error) {
  const llvm::json::Value *value = root.get("device_classes");
  if (!value)
    return success();
  const llvm::json::Array *classes = value->getAsArray();
  if (!classes || classes->empty()) {
    error = "device_classes must be a non-empty array of objects, got " +
            describe(value);
    return failure();
  }
  std::set<std::string> names;
  for (auto [index, classValue] : llvm::enumerate(*classes)) {
    std::string at = "device_classes[" + std::to_string(index) + "]";
    const llvm::json::Object *object = classValue.getAsObject();
    if (!object) {
      error = at + " must be an object, got " + describe(&classValue);
      return failure();
    }
    DeviceClass c;
    c.name = "class" + std::to_string(index);
    if (const llvm::json::Value *name = object->get("name")) {
      std::optional<StringRef> text = name->getAsString();
      if (!text || text->empty()) {
        error = at + ".name must be a non-empty string, got " + describe(name);
        return failure();
      }
      c.name = text->str();
    }
    if (!names.insert(c.name).second) {
      error = at + ".name '" + c.name + "' names an earlier class too";
      return failure();
    }
    const llvm::json::Value *range = object->get("axis0");
    const llvm::json::Array *bounds = range ? range->getAsArray() : nullptr;
    std::optional<int64_t> begin, end;
    if (bounds && bounds->size() == 2) {
      begin = (*bounds)[0].getAsInteger();
      end = (*bounds)[1].getAsInteger();
    }
    if (!begin || !end || *begin < 0 || *end <= *begin) {
      error = at +
              ".axis0 must be [begin, end), indices of grid axis 0 with "
              "0 <= begin < end, got " +
              describe(range);
      return failure();
    }
    int64_t expected = cluster.deviceClasses.empty()
                           ? 0
                           : cluster.deviceClasses.back().axis0End;
    if (*begin != expected) {
      error = llvm::formatv("{0}.axis0 {1} {2}: the classes must cover grid "
                            "axis 0 in order from 0, without gap or overlap, "
                            "so this one must begin at {3}",
                            at, describe(range),
                            *begin < expected ? "overlaps the previous class"
                                              : "leaves a gap",
                            expected)
                  .str();
      return failure();
    }
    c.axis0Begin = *begin;
    c.axis0End = *end;
    if (failed(parseDeviceFields(*object, at, &cluster, c.device, error)))
      return failure();
    cluster.deviceClasses.push_back(std::move(c));
  }
  return success();
}

FailureOr<ClusterSpec>
mlir::autopar::parseClusterJson(const llvm::json::Value &json, size_t gridRank,
                                std::string &error) {
  const llvm::json::Object *root = json.getAsObject();
  if (!root) {
    error = "expected a json object with 'device' and 'axes'";
    return failure();
  }
  ClusterSpec cluster;

  const llvm::json::Object *device = root->getObject("device");
  if (!device) {
    error = "missing 'device' object";
    return failure();
  }
  if (failed(parseDeviceFields(*device, "device", nullptr, cluster, error)) ||
      failed(parseDeviceClasses(*root, cluster, error)))
    return failure();

  const llvm::json::Value *axesValue = root->get("axes");
  const llvm::json::Array *axes = axesValue ? axesValue->getAsArray() : nullptr;
  if (!axes) {
    error = "missing 'axes' array";
    return failure();
  }
  if (axes->size() != gridRank) {
    error = llvm::formatv("cluster has {0} axes, grid has {1}", axes->size(),
                          gridRank)
                .str();
    return failure();
  }
  for (auto [index, axisValue] : llvm::enumerate(*axes)) {
    const llvm::json::Object *axis = axisValue.getAsObject();
    std::string name = "axes[" + std::to_string(index) + "]";
    if (!axis) {
      error = name + " must be an object, got " + describe(&axisValue);
      return failure();
    }
    AxisLink link;
    if (failed(readNumber(*axis, "bandwidth", name + ".bandwidth", false,
                          link.bandwidth, error)) ||
        failed(readNumber(*axis, "latency", name + ".latency", true,
                          link.latency, error)))
      return failure();
    cluster.axes.push_back(link);
  }
  return cluster;
}

FailureOr<ClusterSpec> mlir::autopar::readClusterFile(StringRef path,
                                                      size_t gridRank,
                                                      std::string &error) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer) {
    error = ("cannot read cluster file '" + path +
             "': " + buffer.getError().message())
                .str();
    return failure();
  }
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse((*buffer)->getBuffer());
  if (!json) {
    error = ("invalid cluster file '" + path +
             "': " + llvm::toString(json.takeError()))
                .str();
    return failure();
  }
  std::string reason;
  FailureOr<ClusterSpec> cluster = parseClusterJson(*json, gridRank, reason);
  if (failed(cluster)) {
    error = ("invalid cluster file '" + path + "': " + reason).str();
    return failure();
  }
  cluster->source = path.str();
  return cluster;
}

FailureOr<ClusterSpec> mlir::autopar::readClusterFile(StringRef path,
                                                      ArrayRef<int64_t> grid,
                                                      std::string &error) {
  FailureOr<ClusterSpec> cluster = readClusterFile(path, grid.size(), error);
  if (failed(cluster))
    return failure();
  std::string reason;
  if (failed(checkDeviceClasses(*cluster, grid, reason))) {
    error = ("invalid cluster file '" + path + "': " + reason).str();
    return failure();
  }
  return cluster;
}

/// The device fields of `cluster` as JSON (parseDeviceFields' form).
static llvm::json::Object deviceToJson(const ClusterSpec &cluster) {
  // llvm::json prints doubles with %.17g, which round-trips.
  llvm::json::Object device{
      {"flops", cluster.flops},
      {"memory_bytes", cluster.memoryBytes},
      {"memory_bandwidth", cluster.memoryBandwidth},
  };
  llvm::json::Object byClass;
  for (unsigned c = 0; c < kNumOpClasses; ++c)
    if (cluster.classFlops[c] > 0)
      byClass[stringifyOpClass(static_cast<OpClass>(c))] =
          cluster.classFlops[c];
  if (!byClass.empty())
    device["flops_by_class"] = std::move(byClass);
  llvm::json::Object bandwidthByClass;
  for (unsigned c = 0; c < kNumOpClasses; ++c)
    if (cluster.classBandwidth[c] > 0)
      bandwidthByClass[stringifyOpClass(static_cast<OpClass>(c))] =
          cluster.classBandwidth[c];
  if (!bandwidthByClass.empty())
    device["bandwidth_by_class"] = std::move(bandwidthByClass);
  if (cluster.opOverhead > 0)
    device["op_overhead_s"] = cluster.opOverhead;
  llvm::json::Object secondsByClass;
  for (unsigned c = 0; c < kNumOpClasses; ++c)
    if (cluster.classOpSeconds[c] > 0)
      secondsByClass[stringifyOpClass(static_cast<OpClass>(c))] =
          cluster.classOpSeconds[c];
  if (!secondsByClass.empty())
    device["op_seconds_by_class"] = std::move(secondsByClass);
  if (cluster.stepOverhead > 0)
    device["step_overhead_s"] = cluster.stepOverhead;
  if (cluster.cacheBytes > 0)
    device["cache"] = llvm::json::Object{{"bytes", cluster.cacheBytes},
                                         {"bandwidth", cluster.cacheBandwidth}};
  if (cluster.gemmEfficiencyMax != 1 || cluster.gemmHalfSize != 0)
    device["matmul_efficiency"] =
        llvm::json::Object{{"max", cluster.gemmEfficiencyMax},
                           {"half_size", cluster.gemmHalfSize}};
  if (!cluster.flopsByDtype.empty()) {
    llvm::json::Object byDtype;
    for (const auto &[dtype, rate] : cluster.flopsByDtype)
      byDtype[dtype] = rate;
    device["flops_by_dtype"] = std::move(byDtype);
  }
  return device;
}

llvm::json::Value mlir::autopar::clusterToJson(const ClusterSpec &cluster) {
  llvm::json::Array axes;
  for (const AxisLink &link : cluster.axes)
    axes.push_back(llvm::json::Object{{"bandwidth", link.bandwidth},
                                      {"latency", link.latency}});
  llvm::json::Object root{{"device", deviceToJson(cluster)},
                          {"axes", std::move(axes)}};
  if (!cluster.className.empty())
    root["device_class"] = cluster.className;
  if (cluster.hasDeviceClasses()) {
    // Every field written out: the classes round-trip without scaling.
    llvm::json::Array classes;
    for (const DeviceClass &c : cluster.deviceClasses) {
      llvm::json::Object entry = deviceToJson(c.device);
      entry["name"] = c.name;
      entry["axis0"] = llvm::json::Array{c.axis0Begin, c.axis0End};
      classes.push_back(std::move(entry));
    }
    root["device_classes"] = std::move(classes);
  }
  return root;
}

//===----------------------------------------------------------------------===//
// Device classes
//===----------------------------------------------------------------------===//

std::pair<unsigned, unsigned> ClusterSpec::getClassSpan(int64_t begin,
                                                        int64_t end) const {
  assert(hasDeviceClasses() && begin < end && "no rows or no classes");
  unsigned first = 0, last = 0;
  for (auto [i, c] : llvm::enumerate(deviceClasses)) {
    if (c.axis0Begin <= begin && begin < c.axis0End)
      first = i;
    if (c.axis0Begin < end && end <= c.axis0End)
      last = i;
  }
  return {first, last};
}

ClusterSpec ClusterSpec::getAxis0Rows(int64_t begin, int64_t end) const {
  if (!hasDeviceClasses())
    return *this;
  auto [first, last] = getClassSpan(begin, end);
  ClusterSpec out = deviceClasses[first].device;
  out.axes = axes;
  out.source = source;
  out.className = deviceClasses[first].name;
  for (unsigned i = first + 1; i <= last; ++i) {
    const ClusterSpec &d = deviceClasses[i].device;
    out.className += "+" + deviceClasses[i].name;
    // Each class's effective rate per op class and per type, before the
    // fields are replaced.
    std::array<double, kNumOpClasses> classFlops, classBandwidth;
    for (unsigned c = 0; c < kNumOpClasses; ++c) {
      auto op = static_cast<OpClass>(c);
      bool calibrated = out.classFlops[c] > 0 || d.classFlops[c] > 0;
      classFlops[c] =
          calibrated ? std::min(out.getFlops(op), d.getFlops(op)) : 0;
      bool measured = out.classBandwidth[c] > 0 || d.classBandwidth[c] > 0;
      classBandwidth[c] =
          measured ? std::min(out.getBandwidth(op), d.getBandwidth(op)) : 0;
    }
    std::map<std::string, double> byDtype;
    auto rateOf = [](const ClusterSpec &spec, const std::string &dtype) {
      auto it = spec.flopsByDtype.find(dtype);
      return it == spec.flopsByDtype.end() ? spec.flops : it->second;
    };
    for (const auto &[dtype, rate] : out.flopsByDtype)
      byDtype[dtype] = std::min(rate, rateOf(d, dtype));
    for (const auto &[dtype, rate] : d.flopsByDtype)
      byDtype[dtype] = std::min(rate, rateOf(out, dtype));
    out.flops = std::min(out.flops, d.flops);
    out.memoryBytes = std::min(out.memoryBytes, d.memoryBytes);
    out.memoryBandwidth = std::min(out.memoryBandwidth, d.memoryBandwidth);
    out.classFlops = classFlops;
    out.classBandwidth = classBandwidth;
    out.flopsByDtype = std::move(byDtype);
    out.opOverhead = std::max(out.opOverhead, d.opOverhead);
    for (unsigned c = 0; c < kNumOpClasses; ++c)
      out.classOpSeconds[c] =
          std::max(out.classOpSeconds[c], d.classOpSeconds[c]);
    out.stepOverhead = std::max(out.stepOverhead, d.stepOverhead);
    out.gemmEfficiencyMax =
        std::min(out.gemmEfficiencyMax, d.gemmEfficiencyMax);
    out.gemmHalfSize = std::max(out.gemmHalfSize, d.gemmHalfSize);
    // The smaller cache, at the slower rate; none if a class has none.
    bool bothCached = out.cacheBytes > 0 && d.cacheBytes > 0;
    out.cacheBytes = bothCached ? std::min(out.cacheBytes, d.cacheBytes) : 0;
    out.cacheBandwidth =
        bothCached ? std::min(out.cacheBandwidth, d.cacheBandwidth) : 0;
  }
  return out;
}

ClusterSpec ClusterSpec::getUniform() const {
  if (!hasDeviceClasses())
    return *this;
  return getAxis0Rows(0, deviceClasses.back().axis0End);
}

LogicalResult mlir::autopar::checkDeviceClasses(const ClusterSpec &cluster,
                                                ArrayRef<int64_t> grid,
                                                std::string &error) {
  if (!cluster.hasDeviceClasses())
    return success();
  int64_t end = cluster.deviceClasses.back().axis0End;
  if (grid.empty() || end != grid[0]) {
    error = llvm::formatv("the device classes cover rows [0, {0}) of grid "
                          "axis 0, and the grid {1} has {2}",
                          end, formatGridShape(grid),
                          grid.empty() ? int64_t(0) : grid[0])
                .str();
    return failure();
  }
  return success();
}

std::string mlir::autopar::getDefaultClusterPath() {
  if (std::optional<std::string> path =
          llvm::sys::Process::GetEnv("AUTOPAR_CLUSTER");
      path && !path->empty())
    return *path;
  SmallString<256> result;
  std::optional<std::string> config =
      llvm::sys::Process::GetEnv("XDG_CONFIG_HOME");
  if (config && !config->empty()) {
    result = *config;
  } else {
    std::optional<std::string> home = llvm::sys::Process::GetEnv("HOME");
    result = home ? *home : std::string(".");
    llvm::sys::path::append(result, ".config");
  }
  llvm::sys::path::append(result, "autopar", "cluster.json");
  return result.str().str();
}
