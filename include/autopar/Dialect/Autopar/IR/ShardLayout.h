//===- ShardLayout.h - where a device's shard lies in a tensor ----*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Arithmetic of shardings on a device grid, shared by the partitioner (local
// types), the lowering (group indices) and the driver (slicing weights per
// device). Ranks map to grid coordinates row-major (last axis fastest).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_DIALECT_AUTOPAR_IR_SHARDLAYOUT_H
#define AUTOPAR_DIALECT_AUTOPAR_IR_SHARDLAYOUT_H

#include "autopar/Dialect/Autopar/IR/Autopar.h"

namespace mlir::autopar {

/// Parses a device grid `N` or `AxB[xC...]` (positive sizes, at most 15
/// axes). On failure returns failure and sets `error` to one line such as
/// "invalid grid '2x0': grid sizes must be positive".
FailureOr<SmallVector<int64_t>> parseGridShape(StringRef text,
                                               std::string &error);

/// Formats a grid shape as `AxB...` (the inverse of parseGridShape).
std::string formatGridShape(ArrayRef<int64_t> shape);

/// Number of devices in the group spanned by grid `axes`.
int64_t getGroupSize(ArrayRef<int64_t> axes, ArrayRef<int64_t> gridShape);

/// Grid coordinates of `rank`, row-major (the last axis varies fastest).
SmallVector<int64_t> getGridCoordinates(int64_t rank,
                                        ArrayRef<int64_t> gridShape);

/// Index of the device at `coords` in its group over `axes` (major first).
int64_t getGroupIndex(ArrayRef<int64_t> axes, ArrayRef<int64_t> gridShape,
                      ArrayRef<int64_t> coords);

/// Encodes a list of grid axes for the runtime ABI: hexadecimal digits
/// (axis + 1), major axis first (see autopar/Runtime/RuntimeABI.h).
int64_t encodeGridAxes(ArrayRef<int64_t> axes);

/// Local (per-device) shape of a value of `globalShape` with `sharding`.
/// Fails with a diagnostic naming the dimension and axes when a split
/// dimension does not divide evenly (uneven shards are not supported yet) or
/// when the sharding refers to axes outside the grid.
FailureOr<SmallVector<int64_t>>
getLocalShape(ArrayRef<int64_t> globalShape, ShardingAttr sharding,
              ArrayRef<int64_t> gridShape,
              function_ref<InFlightDiagnostic()> emitError);

/// Offsets of the block of a value of `globalShape` with `sharding` that the
/// device at `coords` holds. Requires a sharding that divides evenly.
SmallVector<int64_t> getShardOffsets(ArrayRef<int64_t> globalShape,
                                     ShardingAttr sharding,
                                     ArrayRef<int64_t> gridShape,
                                     ArrayRef<int64_t> coords);

} // namespace mlir::autopar

#endif // AUTOPAR_DIALECT_AUTOPAR_IR_SHARDLAYOUT_H
