//===- Cluster.h - the cluster description planning prices against -*- C++
//-*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A cluster is one kind of device on an N-D grid: per-device FLOP rate, memory
// and memory bandwidth, and per grid axis the link bandwidth and message
// latency. The JSON form (`--cluster FILE.json`) is a user contract:
//
//   {"device": {"flops": F, "memory_bytes": M, "memory_bandwidth": B,
//               "flops_by_class": {"matmul": F1, ...},       (optional)
//               "bandwidth_by_class": {"data_movement": B1}, (optional)
//               "op_overhead_s": T,                          (optional)
//               "op_seconds_by_class": {"matmul": T1, ...},  (optional)
//               "step_overhead_s": S,                        (optional)
//               "cache": {"bytes": C, "bandwidth": BC}},      (optional)
//    "axes": [{"bandwidth": B_i, "latency": L_i}, ...],     (one per axis)
//    "device_classes": [                                     (optional)
//      {"name": "a100", "axis0": [0, 8], "flops": F, "memory_bytes": M,
//       ... any other `device` field ...}, ...]}
//
// Device classes describe a heterogeneous grid: the devices whose grid axis-0
// index lies in [axis0[0], axis0[1]) are of that class. The ranges must
// start at 0, follow each other without gap or overlap, and end at the size
// of grid axis 0. Each class needs `flops` and `memory_bytes`; its other
// fields default to `device`'s, with the calibrated rates (flops_by_class,
// flops_by_dtype; bandwidth_by_class) scaled by the class's flops (memory
// bandwidth) over device's. Links stay per axis (`axes`).
//
// A class without a rate of its own takes its parent's (`depthwise_conv`:
// `conv`'s; `batched_matmul`: `matmul`'s), then the device's `flops`
// (`memory_bandwidth`).
//
// Units: FLOP/s, bytes, bytes/s, seconds. Unknown fields are ignored. The
// calibrated description of the local machine lives at
// getDefaultClusterPath().
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_ANALYSIS_CLUSTER_H
#define AUTOPAR_ANALYSIS_CLUSTER_H

#include "autopar/Dialect/Autopar/IR/OpTraits.h"

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/JSON.h"

#include <array>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mlir::autopar {

// OpClass and kNumOpClasses come with the ops (OpTraits.h): each op declares
// its class in ODS.

/// `matmul`, `conv`, `elementwise`, `reduction`, `data_movement`,
/// `depthwise_conv`, `batched_matmul`.
StringRef stringifyOpClass(OpClass c);
std::optional<OpClass> symbolizeOpClass(StringRef name);
/// The class an autopar op is priced in.
OpClass classifyOp(Operation *op);

struct AxisLink {
  double bandwidth = 0; ///< bytes/s, one device, one direction
  double latency = 0;   ///< seconds per message
};

struct DeviceClass;

struct ClusterSpec {
  double flops = 0;           ///< FLOP/s per device (peak, or matmul class)
  int64_t memoryBytes = 0;    ///< bytes per device
  double memoryBandwidth = 0; ///< bytes/s per device
  /// Calibrated FLOP/s per op class; 0 means "use `flops`".
  std::array<double, kNumOpClasses> classFlops{};
  /// Calibrated bytes/s per op class; 0 means "use `memoryBandwidth`".
  std::array<double, kNumOpClasses> classBandwidth{};
  /// Fixed seconds per op that runs a loop nest (launch, buffer set-up).
  double opOverhead = 0;
  /// Calibrated fixed seconds per op of each class beyond `opOverhead`: the
  /// intercept of the class's time against its FLOPs (an op of class c with
  /// F FLOPs takes classOpSeconds[c] + F / classFlops[c], what a kernel
  /// pays whatever its size: packing and unpacking, thread fork and join,
  /// partial register tiles). 0: none.
  std::array<double, kNumOpClasses> classOpSeconds{};
  /// Fixed seconds per step of a program, whatever its ops (the runtime's
  /// entry into the program and its return).
  double stepOverhead = 0;
  /// Shape-dependent efficiency of the matmul class (`device.
  /// matmul_efficiency`: `max` and `half_size`): a GEMM whose smallest local
  /// dimension is d runs at max * d / (d + half_size) of its class rate.
  /// The defaults (1, 0) leave the rate as it is.
  double gemmEfficiencyMax = 1, gemmHalfSize = 0;

  /// The fraction of the matmul class rate a GEMM whose smallest local
  /// dimension is `minDim` reaches (1 for `minDim` 0: not a GEMM).
  double getGemmEfficiency(double minDim) const {
    if (minDim <= 0)
      return 1;
    return gemmEfficiencyMax * minDim / (minDim + gemmHalfSize);
  }
  SmallVector<AxisLink> axes;
  /// Where the description came from (a path), for reports.
  std::string source;

  /// Peak FLOP/s per element type (`f64`, `f32`, `f16`, `bf16`); optional.
  /// A type listed here replaces `flops` for ops computing in that type.
  std::map<std::string, double> flopsByDtype;

  /// The class whose rates `c` takes when it has none of its own: a
  /// depthwise convolution is priced as a convolution on a description
  /// calibrated before it had a class of its own.
  static std::optional<OpClass> getParentClass(OpClass c) {
    if (c == OpClass::DepthwiseConv)
      return OpClass::Conv;
    if (c == OpClass::BatchedMatMul)
      return OpClass::MatMul;
    return std::nullopt;
  }
  /// The calibrated FLOP/s of class `c` (or of its parent); 0 when neither
  /// has one.
  double getClassFlops(OpClass c) const {
    double f = classFlops[static_cast<unsigned>(c)];
    if (f <= 0)
      if (std::optional<OpClass> parent = getParentClass(c))
        f = classFlops[static_cast<unsigned>(*parent)];
    return f;
  }
  /// The calibrated fixed seconds of an op of class `c`: its own, or its
  /// parent's when `c` has no calibrated rate of its own (the two come from
  /// one fit).
  double getClassOpSeconds(OpClass c) const {
    if (classFlops[static_cast<unsigned>(c)] <= 0)
      if (std::optional<OpClass> parent = getParentClass(c))
        return classOpSeconds[static_cast<unsigned>(*parent)];
    return classOpSeconds[static_cast<unsigned>(c)];
  }
  double getFlops(OpClass c) const {
    double f = getClassFlops(c);
    return f > 0 ? f : flops;
  }
  /// FLOP/s of class `c` computing in `dtype`: the class rate (calibrated
  /// against `flops`) scaled by that type's peak over `flops`, or the type's
  /// peak; `getFlops(c)` when the type has no rate of its own.
  double getFlops(OpClass c, StringRef dtype) const {
    auto it = flopsByDtype.find(dtype.str());
    if (it == flopsByDtype.end())
      return getFlops(c);
    double f = getClassFlops(c);
    return f > 0 && flops > 0 ? f * it->second / flops : it->second;
  }
  double getBandwidth(OpClass c) const {
    double b = classBandwidth[static_cast<unsigned>(c)];
    if (b <= 0)
      if (std::optional<OpClass> parent = getParentClass(c))
        b = classBandwidth[static_cast<unsigned>(*parent)];
    return b > 0 ? b : memoryBandwidth;
  }

  /// The device's cache (`device.cache`: `bytes` and `bandwidth`; 0: none
  /// modelled). An op whose operands and results together take at most
  /// `cacheBytes` streams them at `cacheBandwidth` instead of
  /// `memoryBandwidth`: a CPU core's private cache holds a small model's
  /// tensors from the op that writes them to the ops that read them.
  int64_t cacheBytes = 0;
  double cacheBandwidth = 0;

  /// Bytes/s of class `c` for an op moving `bytes` (operands and results):
  /// getBandwidth(c), or, when they fit in the cache, that rate scaled by
  /// the cache's bandwidth over the memory's (a class that streams at a
  /// fraction of the memory bandwidth keeps that fraction in cache).
  double getBandwidth(OpClass c, double bytes) const {
    double b = getBandwidth(c);
    if (cacheBytes > 0 && cacheBandwidth > memoryBandwidth &&
        memoryBandwidth > 0 && bytes <= static_cast<double>(cacheBytes))
      return b * (cacheBandwidth / memoryBandwidth);
    return b;
  }

  /// Heterogeneous devices: classes by ranges of grid axis-0 indices, in
  /// order (empty: every device is `device`'s kind).
  std::vector<DeviceClass> deviceClasses;
  /// The class(es) a spec resolved by getAxis0Rows describes (`a100`, or
  /// `a100+v100` for rows spanning two); empty without classes.
  std::string className;

  bool hasDeviceClasses() const { return !deviceClasses.empty(); }
  /// The devices of rows [begin, end) of grid axis 0 as one kind, without
  /// classes: the spanned classes combined field by field into the slowest
  /// and smallest (each rate its smallest, the memory its smallest, the op
  /// overhead its largest). Without classes, this spec unchanged.
  ClusterSpec getAxis0Rows(int64_t begin, int64_t end) const;
  /// The whole grid as one kind (getAxis0Rows over every class).
  ClusterSpec getUniform() const;
  /// The indices of the classes rows [begin, end) span, [first, last].
  std::pair<unsigned, unsigned> getClassSpan(int64_t begin, int64_t end) const;
};

/// One class of a heterogeneous grid: the devices whose axis-0 index lies in
/// [axis0Begin, axis0End), described by `device`'s device fields (its axes
/// and classes are empty).
struct DeviceClass {
  std::string name;
  int64_t axis0Begin = 0, axis0End = 0;
  ClusterSpec device;
};

/// Checks that `cluster`'s device classes, if any, cover grid axis 0 of
/// `grid` exactly; `error` says why not.
LogicalResult checkDeviceClasses(const ClusterSpec &cluster,
                                 ArrayRef<int64_t> grid, std::string &error);

/// Parses and checks a cluster description against a grid of `gridRank`
/// axes. On failure `error` is a lowercase message without the path.
FailureOr<ClusterSpec> parseClusterJson(const llvm::json::Value &json,
                                        size_t gridRank, std::string &error);
/// Reads `path` and parses it; `error` names the path.
FailureOr<ClusterSpec> readClusterFile(StringRef path, size_t gridRank,
                                       std::string &error);
/// Reads `path` and checks it against `grid`: its rank, and its device
/// classes covering axis 0 (checkDeviceClasses); `error` names the path.
FailureOr<ClusterSpec> readClusterFile(StringRef path, ArrayRef<int64_t> grid,
                                       std::string &error);
/// The JSON form (round-trips through parseClusterJson).
llvm::json::Value clusterToJson(const ClusterSpec &cluster);

/// Where `autopar calibrate` writes and planning reads the local machine's
/// description: `$AUTOPAR_CLUSTER` if set, else
/// `$XDG_CONFIG_HOME/autopar/cluster.json`, else
/// `$HOME/.config/autopar/cluster.json`.
std::string getDefaultClusterPath();

} // namespace mlir::autopar

#endif // AUTOPAR_ANALYSIS_CLUSTER_H
