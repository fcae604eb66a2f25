//===- ClusterTest.cpp - cluster descriptions and op classes --------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "autopar/Analysis/Cluster.h"
#include "autopar/Dialect/Autopar/IR/Autopar.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <catch2/catch.hpp>

#include <cstdlib>

using namespace mlir;
using namespace mlir::autopar;

namespace {
llvm::json::Value parse(StringRef text) {
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(text);
  REQUIRE(bool(json));
  return std::move(*json);
}

/// Parses `text` against a grid of `rank` axes and returns the error (empty
/// on success).
std::string errorOf(StringRef text, size_t rank) {
  std::string error;
  FailureOr<ClusterSpec> cluster = parseClusterJson(parse(text), rank, error);
  if (succeeded(cluster))
    return "";
  return error;
}

constexpr const char *kTwoAxes = R"json({
  "device": {"flops": 1e12, "memory_bytes": 16000000000,
             "memory_bandwidth": 2e11,
             "flops_by_class": {"matmul": 9e11, "elementwise": 3e10},
             "vendor": "ignored"},
  "axes": [{"bandwidth": 1e10, "latency": 2e-6},
           {"bandwidth": 5e9, "latency": 0, "name": "ignored"}],
  "comment": "unknown fields are ignored"
})json";
} // namespace

TEST_CASE("cluster json: a valid description", "[cluster]") {
  std::string error;
  FailureOr<ClusterSpec> cluster = parseClusterJson(parse(kTwoAxes), 2, error);
  REQUIRE(succeeded(cluster));
  CHECK(error.empty());
  CHECK(cluster->flops == 1e12);
  CHECK(cluster->memoryBytes == 16000000000);
  CHECK(cluster->memoryBandwidth == 2e11);
  CHECK(cluster->getFlops(OpClass::MatMul) == 9e11);
  CHECK(cluster->getFlops(OpClass::Elementwise) == 3e10);
  // Classes without a calibrated rate fall back to the peak.
  CHECK(cluster->getFlops(OpClass::Conv) == 1e12);
  CHECK(cluster->getFlops(OpClass::DepthwiseConv) == 1e12);
  REQUIRE(cluster->axes.size() == 2);
  CHECK(cluster->axes[0].bandwidth == 1e10);
  CHECK(cluster->axes[0].latency == 2e-6);
  CHECK(cluster->axes[1].bandwidth == 5e9);
  CHECK(cluster->axes[1].latency == 0);
}

TEST_CASE("cluster json: per-type rates", "[cluster]") {
  std::string error;
  FailureOr<ClusterSpec> cluster = parseClusterJson(
      parse(R"({"device": {"flops": 1e12, "memory_bytes": 1,
                           "memory_bandwidth": 1,
                           "flops_by_class": {"matmul": 5e11},
                           "flops_by_dtype": {"bf16": 4e12, "f32": 1e12}},
                "axes": []})"),
      0, error);
  REQUIRE(succeeded(cluster));
  // A type's peak replaces `flops`; a calibrated class keeps its efficiency
  // (matmul at half the peak).
  CHECK(cluster->getFlops(OpClass::Elementwise, "bf16") == 4e12);
  CHECK(cluster->getFlops(OpClass::MatMul, "bf16") == 2e12);
  CHECK(cluster->getFlops(OpClass::MatMul, "f32") == 5e11);
  // A type without a rate of its own: the class rate.
  CHECK(cluster->getFlops(OpClass::MatMul, "f16") == 5e11);
  CHECK(cluster->getFlops(OpClass::Reduction, "f16") == 1e12);
  // Printed and read back.
  FailureOr<ClusterSpec> again =
      parseClusterJson(clusterToJson(*cluster), 0, error);
  REQUIRE(succeeded(again));
  CHECK(again->flopsByDtype == cluster->flopsByDtype);

  CHECK(errorOf(R"({"device": {"flops": 1, "memory_bytes": 1,
                                "memory_bandwidth": 1,
                                "flops_by_dtype": {"fp8": 1}},
                    "axes": []})",
                0) == "unknown element type 'fp8' in device.flops_by_dtype "
                      "(expected f64, f32, f16 or bf16)");
  CHECK(errorOf(R"({"device": {"flops": 1, "memory_bytes": 1,
                                "memory_bandwidth": 1,
                                "flops_by_dtype": {"bf16": -1}},
                    "axes": []})",
                0) == "device.flops_by_dtype.bf16 must be a positive number, "
                      "got -1");
  CHECK(errorOf(R"({"device": {"flops": 1, "memory_bytes": 1,
                                "memory_bandwidth": 1,
                                "flops_by_dtype": [1]},
                    "axes": []})",
                0) == "device.flops_by_dtype must be an object, got [1]");
}

/// A one-device description whose device has `field` = `value` (JSON text).
static std::string deviceWith(StringRef field, StringRef value) {
  return (R"({"device": {"flops": 1, "memory_bytes": 1,
                         "memory_bandwidth": 1, ")" +
          field + "\": " + value + R"(}, "axes": []})")
      .str();
}

TEST_CASE("cluster json: shape-dependent matmul efficiency", "[cluster]") {
  std::string error;
  FailureOr<ClusterSpec> cluster =
      parseClusterJson(parse(R"({"device": {"flops": 1e12, "memory_bytes": 1,
                           "memory_bandwidth": 1,
                           "matmul_efficiency": {"max": 0.9,
                                                 "half_size": 100}},
                "axes": []})"),
                       0, error);
  REQUIRE(succeeded(cluster));
  CHECK(cluster->getGemmEfficiency(100) == Approx(0.45));
  CHECK(cluster->getGemmEfficiency(900) == Approx(0.81));
  CHECK(cluster->getGemmEfficiency(0) == 1);
  FailureOr<ClusterSpec> again =
      parseClusterJson(clusterToJson(*cluster), 0, error);
  REQUIRE(succeeded(again));
  CHECK(again->gemmEfficiencyMax == 0.9);
  CHECK(again->gemmHalfSize == 100);
  // Without the field: no change to the rate.
  CHECK(ClusterSpec().getGemmEfficiency(64) == 1);

  auto device = [](StringRef efficiency) {
    return deviceWith("matmul_efficiency", efficiency);
  };
  CHECK(errorOf(device(R"({"max": 1.5, "half_size": 1})"), 0) ==
        "device.matmul_efficiency.max must be at most 1 (a fraction of the "
        "matmul rate), got 1.5");
  CHECK(errorOf(device(R"({"max": 0, "half_size": 1})"), 0) ==
        "device.matmul_efficiency.max must be a positive number, got 0");
  CHECK(errorOf(device(R"({"max": 0.5})"), 0) ==
        "device.matmul_efficiency.half_size must be a non-negative number, "
        "got nothing");
  CHECK(errorOf(device(R"({"max": 0.5, "half_size": 1, "k": 2})"), 0) ==
        "unknown field 'k' in device.matmul_efficiency (expected max and "
        "half_size)");
  CHECK(errorOf(device("0.5"), 0) ==
        "device.matmul_efficiency must be an object, got 0.5");
}

TEST_CASE("cluster json: the device's cache", "[cluster]") {
  std::string error;
  FailureOr<ClusterSpec> cluster =
      parseClusterJson(parse(R"({"device": {"flops": 1e12, "memory_bytes": 1,
                           "memory_bandwidth": 1e9,
                           "cache": {"bytes": 1048576, "bandwidth": 1e11}},
                "axes": []})"),
                       0, error);
  REQUIRE(succeeded(cluster));
  CHECK(cluster->cacheBytes == 1048576);
  CHECK(cluster->cacheBandwidth == 1e11);
  CHECK(cluster->getBandwidth(OpClass::Elementwise, 1048576) == 1e11);
  CHECK(cluster->getBandwidth(OpClass::Elementwise, 1048577) == 1e9);
  FailureOr<ClusterSpec> again =
      parseClusterJson(clusterToJson(*cluster), 0, error);
  REQUIRE(succeeded(again));
  CHECK(again->cacheBytes == 1048576);
  CHECK(again->cacheBandwidth == 1e11);
  // The step's fixed cost round-trips too.
  ClusterSpec stepped = *cluster;
  stepped.stepOverhead = 4e-6;
  FailureOr<ClusterSpec> third =
      parseClusterJson(clusterToJson(stepped), 0, error);
  REQUIRE(succeeded(third));
  CHECK(third->stepOverhead == 4e-6);
  CHECK(errorOf(deviceWith("step_overhead_s", "-1"), 0) ==
        "device.step_overhead_s must be a non-negative number, got -1");
  // Without the field: no cache.
  CHECK(ClusterSpec().cacheBytes == 0);

  auto device = [](StringRef cache) { return deviceWith("cache", cache); };
  CHECK(errorOf(device(R"({"bytes": 0, "bandwidth": 1})"), 0) ==
        "device.cache.bytes must be a positive number, got 0");
  CHECK(errorOf(device(R"({"bytes": 1024})"), 0) ==
        "device.cache.bandwidth must be a positive number, got nothing");
  CHECK(errorOf(device(R"({"bytes": 1, "bandwidth": 1, "level": 2})"), 0) ==
        "unknown field 'level' in device.cache (expected bytes and "
        "bandwidth)");
  CHECK(errorOf(device("[1]"), 0) == "device.cache must be an object, got [1]");
}

TEST_CASE("cluster json: errors name the field and the value", "[cluster]") {
  CHECK(errorOf(kTwoAxes, 1) == "cluster has 2 axes, grid has 1");
  CHECK(errorOf(R"({"device": {"flops": 1, "memory_bytes": 1,
                                "memory_bandwidth": 1},
                    "axes": [{"bandwidth": 1, "latency": 0}]})",
                2) == "cluster has 1 axes, grid has 2");
  CHECK(errorOf(R"({"device": {"flops": 1, "memory_bytes": 1,
                                "memory_bandwidth": 1},
                    "axes": [{"bandwidth": 1, "latency": 0},
                             {"bandwidth": -3, "latency": 0}]})",
                2) == "axes[1].bandwidth must be a positive number, got -3");
  CHECK(errorOf(R"({"device": {"flops": 1, "memory_bytes": 1,
                                "memory_bandwidth": 1},
                    "axes": [{"bandwidth": 1, "latency": -1e-06}]})",
                1) == "axes[0].latency must be a non-negative number, got "
                      "-9.9999999999999995e-07");
  CHECK(errorOf(R"({"device": {"flops": 1, "memory_bytes": 1,
                                "memory_bandwidth": 1},
                    "axes": [{"bandwidth": 1}]})",
                1) == "axes[0].latency must be a non-negative number, got "
                      "nothing");
  CHECK(errorOf(R"({"device": {"flops": 0, "memory_bytes": 1,
                                "memory_bandwidth": 1}, "axes": []})",
                0) == "device.flops must be a positive number, got 0");
  CHECK(errorOf(R"({"device": {"flops": 1, "memory_bytes": "lots",
                                "memory_bandwidth": 1}, "axes": []})",
                0) ==
        "device.memory_bytes must be a positive number, got \"lots\"");
  CHECK(errorOf(R"({"device": {"flops": 1, "memory_bytes": 1}, "axes": []})",
                0) ==
        "device.memory_bandwidth must be a positive number, got nothing");
  CHECK(errorOf(R"({"device": {"flops": 1, "memory_bytes": 1,
                                "memory_bandwidth": 1,
                                "flops_by_class": {"fft": 3}}, "axes": []})",
                0)
            .find("unknown op class 'fft'") == 0);
  CHECK(errorOf(R"({"device": {"flops": 1, "memory_bytes": 1,
                                "memory_bandwidth": 1,
                                "flops_by_class": {"conv": -2}}, "axes": []})",
                0) ==
        "device.flops_by_class.conv must be a positive number, got -2");
  CHECK(errorOf(R"({"device": {"flops": 1, "memory_bytes": 1,
                                "memory_bandwidth": 1}})",
                0) == "missing 'axes' array");
  CHECK(errorOf(R"({"axes": []})", 0) == "missing 'device' object");
  CHECK(errorOf(R"([1, 2])", 0) ==
        "expected a json object with 'device' and 'axes'");
  CHECK(errorOf(R"({"device": {"flops": 1, "memory_bytes": 1,
                                "memory_bandwidth": 1}, "axes": [3]})",
                1) == "axes[0] must be an object, got 3");
}

TEST_CASE("cluster json: printing round-trips", "[cluster]") {
  ClusterSpec cluster;
  cluster.flops = 1.0 / 3.0 * 1e11;
  cluster.memoryBytes = 25197187072;
  cluster.memoryBandwidth = 12345678901.234567;
  cluster.classFlops[static_cast<unsigned>(OpClass::Reduction)] = 0.1 + 0.2;
  cluster.classFlops[static_cast<unsigned>(OpClass::DataMovement)] = 7e-3;
  cluster.axes.push_back({1e9 / 7.0, 3.3e-6});
  cluster.axes.push_back({2.5e9, 0});

  std::string text;
  llvm::raw_string_ostream os(text);
  os << clusterToJson(cluster);
  std::string error;
  FailureOr<ClusterSpec> back = parseClusterJson(parse(text), 2, error);
  REQUIRE(succeeded(back));
  CHECK(back->flops == cluster.flops);
  CHECK(back->memoryBytes == cluster.memoryBytes);
  CHECK(back->memoryBandwidth == cluster.memoryBandwidth);
  for (unsigned c = 0; c < kNumOpClasses; ++c)
    CHECK(back->classFlops[c] == cluster.classFlops[c]);
  REQUIRE(back->axes.size() == 2);
  for (unsigned a = 0; a < 2; ++a) {
    CHECK(back->axes[a].bandwidth == cluster.axes[a].bandwidth);
    CHECK(back->axes[a].latency == cluster.axes[a].latency);
  }
  // Classes without a rate are not written.
  CHECK(text.find("\"matmul\"") == std::string::npos);
}

TEST_CASE("cluster file: errors name the path", "[cluster]") {
  std::string error;
  CHECK(failed(readClusterFile("/nonexistent/cluster.json", 1, error)));
  CHECK(error.find("cannot read cluster file '/nonexistent/cluster.json'") ==
        0);

  SmallString<128> path;
  REQUIRE(!llvm::sys::fs::createTemporaryFile("cluster", "json", path));
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    REQUIRE(!ec);
    os << kTwoAxes;
  }
  FailureOr<ClusterSpec> cluster = readClusterFile(path, 2, error);
  REQUIRE(succeeded(cluster));
  CHECK(cluster->source == path.str().str());
  CHECK(failed(readClusterFile(path, 3, error)));
  CHECK(error == ("invalid cluster file '" + path + "': cluster has 2 axes, "
                  "grid has 3")
                     .str());
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    os << "{not json";
  }
  CHECK(failed(readClusterFile(path, 2, error)));
  CHECK(error.find("invalid cluster file '" + path.str().str() + "': ") == 0);
  llvm::sys::fs::remove(path);
}

TEST_CASE("default cluster path", "[cluster]") {
  const char *saved[3];
  const char *names[3] = {"AUTOPAR_CLUSTER", "XDG_CONFIG_HOME", "HOME"};
  std::string values[3];
  for (int i = 0; i < 3; ++i) {
    saved[i] = std::getenv(names[i]);
    if (saved[i])
      values[i] = saved[i];
  }
  setenv("AUTOPAR_CLUSTER", "/tmp/x/cluster.json", 1);
  CHECK(getDefaultClusterPath() == "/tmp/x/cluster.json");
  unsetenv("AUTOPAR_CLUSTER");
  setenv("XDG_CONFIG_HOME", "/cfg", 1);
  CHECK(getDefaultClusterPath() == "/cfg/autopar/cluster.json");
  unsetenv("XDG_CONFIG_HOME");
  setenv("HOME", "/home/u", 1);
  CHECK(getDefaultClusterPath() == "/home/u/.config/autopar/cluster.json");
  for (int i = 0; i < 3; ++i) {
    if (saved[i])
      setenv(names[i], values[i].c_str(), 1);
    else
      unsetenv(names[i]);
  }
}

TEST_CASE("op classes", "[cluster]") {
  for (unsigned c = 0; c < kNumOpClasses; ++c) {
    auto opClass = static_cast<OpClass>(c);
    CHECK(symbolizeOpClass(stringifyOpClass(opClass)) == opClass);
  }
  CHECK(stringifyOpClass(OpClass::DataMovement) == "data_movement");
  CHECK(!symbolizeOpClass("MatMul"));

  MLIRContext ctx;
  ctx.loadDialect<AutoparDialect, func::FuncDialect>();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(R"mlir(
    func.func @f(%a: tensor<8x4xf32>, %b: tensor<4x16xf32>) -> tensor<16x8xf32> {
      %m = autopar.matmul %a, %b : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
      %r = autopar.relu %m : (tensor<8x16xf32>) -> tensor<8x16xf32>
      %e = autopar.exp %r : (tensor<8x16xf32>) -> tensor<8x16xf32>
      %s = autopar.softmax %e {axis = 1 : i64} : (tensor<8x16xf32>) -> tensor<8x16xf32>
      %t = autopar.transpose %s {perm = array<i64: 1, 0>} : (tensor<8x16xf32>) -> tensor<16x8xf32>
      return %t : tensor<16x8xf32>
    }
    func.func @convs(%x: tensor<1x8x6x6xf32>, %w: tensor<8x8x3x3xf32>,
                     %g: tensor<8x2x3x3xf32>, %d: tensor<8x1x3x3xf32>,
                     %m: tensor<16x1x3x3xf32>) {
      %dense = autopar.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x8x6x6xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x6x6xf32>
      %grouped = autopar.conv %x, %g {dilations = array<i64: 1, 1>, group = 4 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x8x6x6xf32>, tensor<8x2x3x3xf32>) -> tensor<1x8x6x6xf32>
      %depthwise = autopar.conv %x, %d {dilations = array<i64: 1, 1>, group = 8 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x8x6x6xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x6x6xf32>
      %multiplier = autopar.conv %x, %m {dilations = array<i64: 1, 1>, group = 8 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x8x6x6xf32>, tensor<16x1x3x3xf32>) -> tensor<1x16x6x6xf32>
      return
    }
    func.func @products(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x16x8xf32>,
                        %w: tensor<16x8xf32>, %one: tensor<1x1x16x8xf32>) {
      %scores = autopar.matmul %q, %k : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
      %projection = autopar.matmul %q, %w : (tensor<2x4x8x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8x8xf32>
      %shared = autopar.matmul %q, %one : (tensor<2x4x8x16xf32>, tensor<1x1x16x8xf32>) -> tensor<2x4x8x8xf32>
      return
    })mlir",
                                                             &ctx);
  REQUIRE(module);
  SmallVector<OpClass> classes;
  module->walk([&](Operation *op) {
    if (op->getDialect() && op->getDialect()->getNamespace() == "autopar")
      classes.push_back(classifyOp(op));
  });
  // A convolution is depthwise when each group reads one input channel,
  // whatever its channel multiplier; a grouped one with more channels per
  // group is a convolution. A product of two batched operands is batched
  // (attention's); one whose right-hand side every batch shares (a weight,
  // or batch dimensions of 1) is a matmul.
  CHECK(classes ==
        SmallVector<OpClass>{
            OpClass::MatMul, OpClass::Elementwise, OpClass::Elementwise,
            OpClass::Reduction, OpClass::DataMovement, OpClass::Conv,
            OpClass::Conv, OpClass::DepthwiseConv, OpClass::DepthwiseConv,
            OpClass::BatchedMatMul, OpClass::MatMul, OpClass::MatMul});
  CHECK(isContractionClass(OpClass::BatchedMatMul));
  CHECK(!isContractionClass(OpClass::Reduction));
  for (Operation &op : module->lookupSymbol<func::FuncOp>("convs").getOps())
    if (auto cost = dyn_cast<CostInterface>(&op))
      CHECK(cost.getFlopsPerIteration() == 2);
}

TEST_CASE("cluster json: a class without a rate takes its parent's",
          "[cluster]") {
  std::string error;
  FailureOr<ClusterSpec> conv = parseClusterJson(parse(R"json({
    "device": {"flops": 1e12, "memory_bytes": 1000, "memory_bandwidth": 2e11,
               "flops_by_class": {"conv": 4e11},
               "bandwidth_by_class": {"conv": 5e10}},
    "axes": []})json"),
                                                 0, error);
  REQUIRE(succeeded(conv));
  CHECK(conv->getFlops(OpClass::DepthwiseConv) == 4e11);
  // batched_matmul's parent is matmul (here: no rate, so the device's).
  CHECK(conv->getFlops(OpClass::BatchedMatMul) == 1e12);
  CHECK(conv->getBandwidth(OpClass::DepthwiseConv) == 5e10);
  CHECK(conv->getFlops(OpClass::DepthwiseConv, "bf16") ==
        conv->getFlops(OpClass::Conv, "bf16"));
  FailureOr<ClusterSpec> own = parseClusterJson(parse(R"json({
    "device": {"flops": 1e12, "memory_bytes": 1000, "memory_bandwidth": 2e11,
               "flops_by_class": {"conv": 4e11, "depthwise_conv": 3e10}},
    "axes": []})json"),
                                                0, error);
  REQUIRE(succeeded(own));
  CHECK(own->getFlops(OpClass::DepthwiseConv) == 3e10);
  CHECK(own->getFlops(OpClass::Conv) == 4e11);
  CHECK(own->getBandwidth(OpClass::DepthwiseConv) == 2e11);
  // Printed with its own key, and read back.
  FailureOr<ClusterSpec> copy = parseClusterJson(clusterToJson(*own), 0, error);
  REQUIRE(succeeded(copy));
  CHECK(copy->classFlops == own->classFlops);
}

TEST_CASE("cluster json: per-class bandwidth and per-op overhead",
          "[cluster]") {
  constexpr const char *text = R"json({
    "device": {"flops": 1e12, "memory_bytes": 1000, "memory_bandwidth": 2e11,
               "bandwidth_by_class": {"data_movement": 5e10},
               "op_overhead_s": 3e-7},
    "axes": [{"bandwidth": 1e10, "latency": 0}]})json";
  std::string error;
  FailureOr<ClusterSpec> cluster = parseClusterJson(parse(text), 1, error);
  REQUIRE(succeeded(cluster));
  CHECK(cluster->getBandwidth(OpClass::DataMovement) == 5e10);
  CHECK(cluster->getBandwidth(OpClass::Elementwise) == 2e11);
  CHECK(cluster->opOverhead == 3e-7);
  // Round trip.
  std::string again;
  FailureOr<ClusterSpec> copy =
      parseClusterJson(clusterToJson(*cluster), 1, again);
  REQUIRE(succeeded(copy));
  CHECK(copy->classBandwidth == cluster->classBandwidth);
  CHECK(copy->opOverhead == cluster->opOverhead);
  // Fixed seconds per op of a class: read, printed and read back; a class
  // without them has none.
  FailureOr<ClusterSpec> fixed = parseClusterJson(parse(R"json({
    "device": {"flops": 1e12, "memory_bytes": 1000, "memory_bandwidth": 2e11,
               "flops_by_class": {"matmul": 8e11},
               "op_seconds_by_class": {"matmul": 4e-6, "conv": 0}},
    "axes": []})json"),
                                                  0, error);
  REQUIRE(succeeded(fixed));
  CHECK(fixed->getClassOpSeconds(OpClass::MatMul) == 4e-6);
  CHECK(fixed->getClassOpSeconds(OpClass::Conv) == 0);
  CHECK(fixed->getClassOpSeconds(OpClass::Elementwise) == 0);
  FailureOr<ClusterSpec> fixedCopy =
      parseClusterJson(clusterToJson(*fixed), 0, again);
  REQUIRE(succeeded(fixedCopy));
  CHECK(fixedCopy->classOpSeconds == fixed->classOpSeconds);
  // Errors name the field.
  CHECK(errorOf(R"json({"device": {"flops": 1, "memory_bytes": 1,
      "memory_bandwidth": 1, "op_overhead_s": -1}, "axes": []})json", 0) ==
        "device.op_overhead_s must be a non-negative number, got -1");
  CHECK(errorOf(R"json({"device": {"flops": 1, "memory_bytes": 1,
      "memory_bandwidth": 1, "op_seconds_by_class": {"matmul": -1}},
      "axes": []})json",
                0) == "device.op_seconds_by_class.matmul must be a "
                      "non-negative number, got -1");
  CHECK(errorOf(R"json({"device": {"flops": 1, "memory_bytes": 1,
      "memory_bandwidth": 1, "bandwidth_by_class": {"gpu": 1}},
      "axes": []})json", 0)
            .find("unknown op class 'gpu' in device.bandwidth_by_class") == 0);
}

namespace {
constexpr const char *kClasses = R"json({
  "device": {"flops": 1e12, "memory_bytes": 1000, "memory_bandwidth": 1e11,
             "flops_by_class": {"matmul": 8e11},
             "flops_by_dtype": {"bf16": 4e12},
             "op_overhead_s": 1e-6},
  "device_classes": [
    {"name": "a", "axis0": [0, 2], "flops": 2e12, "memory_bytes": 500},
    {"name": "b", "axis0": [2, 3], "flops": 1e12, "memory_bytes": 4000,
     "memory_bandwidth": 3e11, "flops_by_dtype": {"f16": 9e12},
     "op_overhead_s": 2e-6}],
  "axes": [{"bandwidth": 1e10, "latency": 0}]
})json";
} // namespace

TEST_CASE("cluster json: device classes", "[cluster]") {
  std::string error;
  FailureOr<ClusterSpec> cluster = parseClusterJson(parse(kClasses), 1, error);
  REQUIRE(succeeded(cluster));
  REQUIRE(cluster->deviceClasses.size() == 2);
  const ClusterSpec &a = cluster->deviceClasses[0].device;
  const ClusterSpec &b = cluster->deviceClasses[1].device;
  CHECK(cluster->deviceClasses[0].axis0Begin == 0);
  CHECK(cluster->deviceClasses[0].axis0End == 2);
  // Class a: twice device's flops, so its calibrated rates double; the rest
  // is device's.
  CHECK(a.flops == 2e12);
  CHECK(a.memoryBytes == 500);
  CHECK(a.getFlops(OpClass::MatMul) == 1.6e12);
  CHECK(a.flopsByDtype.at("bf16") == 8e12);
  CHECK(a.memoryBandwidth == 1e11);
  CHECK(a.opOverhead == 1e-6);
  // Class b gives its own bandwidth and per-type rates.
  CHECK(b.memoryBandwidth == 3e11);
  CHECK(b.flopsByDtype.size() == 1);
  CHECK(b.flopsByDtype.at("f16") == 9e12);

  // One class: its fields; spanning both: field by field the slowest and
  // smallest.
  ClusterSpec rowsA = cluster->getAxis0Rows(0, 2);
  CHECK(rowsA.className == "a");
  CHECK(rowsA.flops == 2e12);
  CHECK(!rowsA.hasDeviceClasses());
  REQUIRE(rowsA.axes.size() == 1);
  ClusterSpec both = cluster->getAxis0Rows(1, 3);
  CHECK(both.className == "a+b");
  CHECK(both.flops == 1e12);
  CHECK(both.memoryBytes == 500);
  CHECK(both.memoryBandwidth == 1e11);
  CHECK(both.getFlops(OpClass::MatMul) == 8e11); // b calibrated
  CHECK(both.flopsByDtype.at("bf16") == 1e12);   // b has no bf16 rate: flops
  CHECK(both.flopsByDtype.at("f16") == 2e12);    // a has no f16 rate: flops
  CHECK(both.opOverhead == 2e-6);
  CHECK(cluster->getUniform().className == "a+b");
  CHECK(cluster->getClassSpan(2, 3) == std::pair<unsigned, unsigned>{1, 1});

  // The grid's axis 0 must be what the classes cover.
  CHECK(succeeded(checkDeviceClasses(*cluster, {3, 4}, error)));
  CHECK(failed(checkDeviceClasses(*cluster, {4}, error)));
  CHECK(error == "the device classes cover rows [0, 3) of grid axis 0, and "
                 "the grid 4 has 4");

  // Printing round-trips, every class field written out.
  std::string text;
  llvm::raw_string_ostream os(text);
  os << clusterToJson(*cluster);
  FailureOr<ClusterSpec> back = parseClusterJson(parse(text), 1, error);
  REQUIRE(succeeded(back));
  REQUIRE(back->deviceClasses.size() == 2);
  for (unsigned i = 0; i < 2; ++i) {
    const ClusterSpec &x = cluster->deviceClasses[i].device;
    const ClusterSpec &y = back->deviceClasses[i].device;
    CHECK(back->deviceClasses[i].name == cluster->deviceClasses[i].name);
    CHECK(y.flops == x.flops);
    CHECK(y.memoryBytes == x.memoryBytes);
    CHECK(y.memoryBandwidth == x.memoryBandwidth);
    CHECK(y.classFlops == x.classFlops);
    CHECK(y.flopsByDtype == x.flopsByDtype);
    CHECK(y.opOverhead == x.opOverhead);
  }
}

TEST_CASE("cluster json: invalid device classes", "[cluster]") {
  auto withClasses = [](StringRef classes) {
    return errorOf(("{\"device\": {\"flops\": 1, \"memory_bytes\": 1, "
                    "\"memory_bandwidth\": 1}, \"axes\": [], "
                    "\"device_classes\": " +
                    classes + "}")
                       .str(),
                   0);
  };
  CHECK(withClasses("[]") ==
        "device_classes must be a non-empty array of objects, got []");
  CHECK(withClasses("[3]") == "device_classes[0] must be an object, got 3");
  CHECK(withClasses(R"([{"axis0": [0, 1], "memory_bytes": 1}])") ==
        "device_classes[0].flops must be a positive number, got nothing");
  CHECK(withClasses(R"([{"axis0": [0, 1], "flops": 1}])") ==
        "device_classes[0].memory_bytes must be a positive number, got "
        "nothing");
  CHECK(withClasses(R"([{"axis0": [1, 1], "flops": 1, "memory_bytes": 1}])") ==
        "device_classes[0].axis0 must be [begin, end), indices of grid axis 0 "
        "with 0 <= begin < end, got [1,1]");
  CHECK(withClasses(R"([{"flops": 1, "memory_bytes": 1}])") ==
        "device_classes[0].axis0 must be [begin, end), indices of grid axis 0 "
        "with 0 <= begin < end, got nothing");
  CHECK(withClasses(R"([{"axis0": [1, 2], "flops": 1, "memory_bytes": 1}])")
            .find("device_classes[0].axis0 [1,2] leaves a gap") == 0);
  CHECK(withClasses(R"([{"axis0": [0, 2], "flops": 1, "memory_bytes": 1},
                        {"axis0": [1, 3], "flops": 1, "memory_bytes": 1}])")
            .find("device_classes[1].axis0 [1,3] overlaps the previous "
                  "class") == 0);
  CHECK(withClasses(R"([{"axis0": [0, 1], "flops": 1, "memory_bytes": 1,
                         "name": ""}])") ==
        "device_classes[0].name must be a non-empty string, got \"\"");
  CHECK(withClasses(R"([{"axis0": [0, 1], "flops": 1, "memory_bytes": 1,
                         "flops_by_dtype": {"i8": 1}}])") ==
        "unknown element type 'i8' in device_classes[0].flops_by_dtype "
        "(expected f64, f32, f16 or bf16)");
}
