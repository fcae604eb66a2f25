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

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

#include <cmath>
#include <limits>

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
  double memoryBytes = 0;
  if (failed(readNumber(*device, "flops", "device.flops", false, cluster.flops,
                        error)) ||
      failed(readNumber(*device, "memory_bytes", "device.memory_bytes", false,
                        memoryBytes, error)) ||
      failed(readNumber(*device, "memory_bandwidth", "device.memory_bandwidth",
                        false, cluster.memoryBandwidth, error)))
    return failure();
  if (memoryBytes >= static_cast<double>(std::numeric_limits<int64_t>::max())) {
    error = "device.memory_bytes is too large, got " +
            describe(device->get("memory_bytes"));
    return failure();
  }
  cluster.memoryBytes = static_cast<int64_t>(memoryBytes);

  if (device->get("op_overhead_s") &&
      failed(readNumber(*device, "op_overhead_s", "device.op_overhead_s", true,
                        cluster.opOverhead, error)))
    return failure();
  for (StringRef field : {"flops_by_class", "bandwidth_by_class"}) {
    const llvm::json::Value *byClass = device->get(field);
    if (!byClass)
      continue;
    std::string fieldName = ("device." + field).str();
    const llvm::json::Object *classes = byClass->getAsObject();
    if (!classes) {
      error = fieldName + " must be an object, got " + describe(byClass);
      return failure();
    }
    // Sorted, so that the first error does not depend on hash order.
    SmallVector<StringRef> keys;
    for (const auto &entry : *classes)
      keys.push_back(entry.first);
    llvm::sort(keys);
    for (StringRef key : keys) {
      std::optional<OpClass> c = symbolizeOpClass(key);
      if (!c) {
        error = ("unknown op class '" + key + "' in " + fieldName +
                 " (expected matmul, conv, elementwise, reduction or "
                 "data_movement)")
                    .str();
        return failure();
      }
      double rate = 0;
      if (failed(readNumber(*classes, key, fieldName + "." + key, false, rate,
                            error)))
        return failure();
      (field == "flops_by_class"
           ? cluster.classFlops
           : cluster.classBandwidth)[static_cast<unsigned>(*c)] = rate;
    }
  }

  if (const llvm::json::Value *efficiency = device->get("matmul_efficiency")) {
    const llvm::json::Object *fields = efficiency->getAsObject();
    if (!fields) {
      error = "device.matmul_efficiency must be an object, got " +
              describe(efficiency);
      return failure();
    }
    for (const auto &entry : *fields)
      if (entry.first != "max" && entry.first != "half_size" &&
          entry.first != "comment") {
        error = ("unknown field '" + entry.first.str() +
                 "' in device.matmul_efficiency (expected max and half_size)");
        return failure();
      }
    if (failed(readNumber(*fields, "max", "device.matmul_efficiency.max", false,
                          cluster.gemmEfficiencyMax, error)) ||
        failed(readNumber(*fields, "half_size",
                          "device.matmul_efficiency.half_size", true,
                          cluster.gemmHalfSize, error)))
      return failure();
    if (cluster.gemmEfficiencyMax > 1) {
      error = "device.matmul_efficiency.max must be at most 1 (a fraction "
              "of the matmul rate), got " +
              describe(fields->get("max"));
      return failure();
    }
  }

  if (const llvm::json::Value *byDtype = device->get("flops_by_dtype")) {
    const llvm::json::Object *types = byDtype->getAsObject();
    if (!types) {
      error =
          "device.flops_by_dtype must be an object, got " + describe(byDtype);
      return failure();
    }
    SmallVector<StringRef> keys;
    for (const auto &entry : *types)
      keys.push_back(entry.first);
    llvm::sort(keys);
    for (StringRef key : keys) {
      if (!llvm::is_contained({"f64", "f32", "f16", "bf16"}, key)) {
        error = ("unknown element type '" + key +
                 "' in device.flops_by_dtype (expected f64, f32, f16 or bf16)")
                    .str();
        return failure();
      }
      double rate = 0;
      if (failed(readNumber(*types, key, "device.flops_by_dtype." + key.str(),
                            false, rate, error)))
        return failure();
      cluster.flopsByDtype[key.str()] = rate;
    }
  }

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

llvm::json::Value mlir::autopar::clusterToJson(const ClusterSpec &cluster) {
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
  llvm::json::Array axes;
  for (const AxisLink &link : cluster.axes)
    axes.push_back(llvm::json::Object{{"bandwidth", link.bandwidth},
                                      {"latency", link.latency}});
  return llvm::json::Object{{"device", std::move(device)},
                            {"axes", std::move(axes)}};
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
