//===- ShardLayoutTest.cpp - sharding arithmetic unit tests ---------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "autopar/Dialect/Autopar/IR/ShardLayout.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <catch2/catch.hpp>

using namespace mlir;
using namespace mlir::autopar;

TEST_CASE("grid coordinates are row-major", "[layout]") {
  CHECK(getGridCoordinates(0, {2, 2}) == SmallVector<int64_t>{0, 0});
  CHECK(getGridCoordinates(1, {2, 2}) == SmallVector<int64_t>{0, 1});
  CHECK(getGridCoordinates(2, {2, 2}) == SmallVector<int64_t>{1, 0});
  CHECK(getGridCoordinates(5, {2, 3}) == SmallVector<int64_t>{1, 2});
}

TEST_CASE("group index reads the listed axes major first", "[layout]") {
  // Device (1, 0) on a 2x3 grid.
  CHECK(getGroupIndex({0, 1}, {2, 3}, {1, 0}) == 3);
  CHECK(getGroupIndex({1, 0}, {2, 3}, {1, 0}) == 1);
  CHECK(getGroupIndex({}, {2, 3}, {1, 2}) == 0);
  CHECK(getGroupSize({0, 1}, {2, 3}) == 6);
}

TEST_CASE("grid axes encode as hexadecimal digits", "[layout]") {
  CHECK(encodeGridAxes({}) == 0);
  CHECK(encodeGridAxes({0}) == 0x1);
  CHECK(encodeGridAxes({0, 1}) == 0x12);
  CHECK(encodeGridAxes({1, 0}) == 0x21);
}

TEST_CASE("local shapes and offsets", "[layout]") {
  MLIRContext ctx;
  ctx.loadDialect<AutoparDialect>();
  auto sharding = ShardingAttr::get(&ctx, {{0, 1}, {}}, {});
  auto fail = [&]() { return emitError(UnknownLoc::get(&ctx)); };
  FailureOr<SmallVector<int64_t>> local =
      getLocalShape({8, 5}, sharding, {2, 2}, fail);
  REQUIRE(succeeded(local));
  CHECK(*local == SmallVector<int64_t>{2, 5});
  CHECK(getShardOffsets({8, 5}, sharding, {2, 2}, {1, 0}) ==
        SmallVector<int64_t>{4, 0});

  std::string message;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
    message = diag.str();
    return success();
  });
  CHECK(failed(getLocalShape({6, 5}, sharding, {2, 2}, fail)));
  CHECK(message == "dimension 0 (size 6) does not divide over grid axes [0, "
                   "1] (4 devices); uneven shards are not supported yet");
}
