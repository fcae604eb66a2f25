//===- PlanningFixture.h - a parsed module and planning options -*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The common set-up of the planner's unit tests: a module parsed from
// source, with the dialects the planner reads loaded, and the options of a
// search on a 1-D grid of a small made-up cluster.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_TEST_UNIT_TRANSFORMS_PLANNING_PLANNINGFIXTURE_H
#define AUTOPAR_TEST_UNIT_TRANSFORMS_PLANNING_PLANNINGFIXTURE_H

#include "autopar/Dialect/Autopar/IR/Autopar.h"
#include "autopar/Transforms/Planning/AutoPlan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <catch2/catch.hpp>

namespace mlir::autopar::testing {

/// `source` parsed (a test fails when it does not parse), and options for
/// a grid of `devices` devices of `flops` FLOP/s, 1e12 bytes/s of memory
/// bandwidth and 1 GiB each, linked by one axis of 1e9 bytes/s and
/// `latency` seconds.
struct PlanningFixture {
  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
  AutoPlanOptions options;

  PlanningFixture(const char *source, int64_t devices, double flops,
                  double latency) {
    ctx.loadDialect<AutoparDialect, func::FuncDialect, shard::ShardDialect>();
    module = parseSourceString<ModuleOp>(source, &ctx);
    REQUIRE(module);
    options.gridShape = {devices};
    options.cluster.flops = flops;
    options.cluster.memoryBandwidth = 1e12;
    options.cluster.memoryBytes = 1 << 30;
    options.cluster.axes.push_back({1e9, latency});
  }

  /// The module's @main.
  func::FuncOp main() { return module->lookupSymbol<func::FuncOp>("main"); }
};

} // namespace mlir::autopar::testing

#endif // AUTOPAR_TEST_UNIT_TRANSFORMS_PLANNING_PLANNINGFIXTURE_H
