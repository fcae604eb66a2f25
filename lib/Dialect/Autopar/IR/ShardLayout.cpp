//===- ShardLayout.cpp - where a device's shard lies in a tensor ----------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "autopar/Dialect/Autopar/IR/ShardLayout.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::autopar;

FailureOr<SmallVector<int64_t>>
mlir::autopar::parseGridShape(StringRef text, std::string &error) {
  constexpr size_t kMaxAxes = 15;
  constexpr int64_t kMaxDevices = 1 << 16;
  auto fail = [&](const Twine &why) {
    error = ("invalid grid '" + text + "': " + why).str();
    return failure();
  };
  if (text.empty())
    return fail("expected N or AxB[xC...]");
  SmallVector<StringRef> pieces;
  text.split(pieces, 'x');
  if (pieces.size() > kMaxAxes)
    return fail("a grid has at most " + Twine(kMaxAxes) + " axes");
  SmallVector<int64_t> shape;
  int64_t devices = 1;
  for (StringRef piece : pieces) {
    if (piece.empty() ||
        !llvm::all_of(piece, [](char c) { return llvm::isDigit(c); }))
      return fail("'" + piece + "' is not a positive integer (expected N or " +
                  "AxB[xC...])");
    int64_t size = 0;
    if (piece.getAsInteger(10, size) || size > kMaxDevices)
      return fail("size '" + piece + "' is too large");
    if (size == 0)
      return fail("grid sizes must be positive");
    devices *= size;
    if (devices > kMaxDevices)
      return fail("more than " + Twine(kMaxDevices) + " devices");
    shape.push_back(size);
  }
  return shape;
}

std::string mlir::autopar::formatGridShape(ArrayRef<int64_t> shape) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::interleave(shape, os, "x");
  return text;
}

int64_t mlir::autopar::getGroupSize(ArrayRef<int64_t> axes,
                                    ArrayRef<int64_t> gridShape) {
  int64_t size = 1;
  for (int64_t axis : axes) {
    assert(axis >= 0 && axis < (int64_t)gridShape.size() && "axis in range");
    size *= gridShape[axis];
  }
  return size;
}

SmallVector<int64_t>
mlir::autopar::getGridCoordinates(int64_t rank, ArrayRef<int64_t> gridShape) {
  SmallVector<int64_t> coords(gridShape.size());
  for (int64_t i = gridShape.size() - 1; i >= 0; --i) {
    coords[i] = rank % gridShape[i];
    rank /= gridShape[i];
  }
  return coords;
}

int64_t mlir::autopar::getGroupIndex(ArrayRef<int64_t> axes,
                                     ArrayRef<int64_t> gridShape,
                                     ArrayRef<int64_t> coords) {
  int64_t index = 0;
  for (int64_t axis : axes)
    index = index * gridShape[axis] + coords[axis];
  return index;
}

int64_t mlir::autopar::encodeGridAxes(ArrayRef<int64_t> axes) {
  assert(axes.size() <= 15 && "at most 15 grid axes");
  int64_t code = 0;
  for (int64_t axis : axes) {
    assert(axis >= 0 && axis < 15 && "grid axis encodable");
    code = code * 16 + (axis + 1);
  }
  return code;
}

FailureOr<SmallVector<int64_t>>
mlir::autopar::getLocalShape(ArrayRef<int64_t> globalShape,
                             ShardingAttr sharding,
                             ArrayRef<int64_t> gridShape,
                             function_ref<InFlightDiagnostic()> emitError) {
  if (sharding.getRank() != (int64_t)globalShape.size())
    return emitError() << "sharding has " << sharding.getRank()
                       << " dimensions, value has rank " << globalShape.size();
  auto checkAxis = [&](int64_t axis) -> LogicalResult {
    if (axis >= (int64_t)gridShape.size())
      return emitError() << "grid axis " << axis << " is out of range for a "
                         << gridShape.size() << "-d grid";
    return success();
  };
  for (int64_t axis : sharding.getPartial())
    if (failed(checkAxis(axis)))
      return failure();
  SmallVector<int64_t> local(globalShape);
  for (int64_t dim = 0, e = globalShape.size(); dim < e; ++dim) {
    ArrayRef<int64_t> axes = sharding.getDimAxes(dim);
    for (int64_t axis : axes)
      if (failed(checkAxis(axis)))
        return failure();
    if (axes.empty())
      continue;
    int64_t n = getGroupSize(axes, gridShape);
    if (ShapedType::isDynamic(globalShape[dim]))
      return emitError() << "dimension " << dim
                         << " is dynamic and cannot be split";
    if (globalShape[dim] % n != 0) {
      InFlightDiagnostic diag = emitError();
      diag << "dimension " << dim << " (size " << globalShape[dim]
           << ") does not divide over grid axes [";
      llvm::interleaveComma(axes, diag);
      diag << "] (" << n << " devices); uneven shards are not supported yet";
      return diag;
    }
    local[dim] = globalShape[dim] / n;
  }
  return local;
}

SmallVector<int64_t> mlir::autopar::getShardOffsets(
    ArrayRef<int64_t> globalShape, ShardingAttr sharding,
    ArrayRef<int64_t> gridShape, ArrayRef<int64_t> coords) {
  SmallVector<int64_t> offsets(globalShape.size(), 0);
  for (int64_t dim = 0, e = globalShape.size(); dim < e; ++dim) {
    ArrayRef<int64_t> axes = sharding.getDimAxes(dim);
    if (axes.empty())
      continue;
    int64_t n = getGroupSize(axes, gridShape);
    assert(globalShape[dim] % n == 0 && "even split");
    offsets[dim] = getGroupIndex(axes, gridShape, coords) * (globalShape[dim] / n);
  }
  return offsets;
}
