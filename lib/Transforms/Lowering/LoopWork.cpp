//===- LoopWork.cpp - static work estimate of loops and linalg ops --------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements the work model of LoopWork.h: FLOPs and bytes moved
// of ops, regions and linalg ops, and the threads a loop's work fills.
//
//===----------------------------------------------------------------------===//

#include "autopar/Transforms/Lowering/LoopWork.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::autopar;

namespace {

/// `a * b`, saturating at the largest uint64_t.
uint64_t mul(uint64_t a, uint64_t b) { return llvm::SaturatingMultiply(a, b); }

/// `a + b`, saturating at the largest uint64_t.
uint64_t add(uint64_t a, uint64_t b) { return llvm::SaturatingAdd(a, b); }

/// The bytes of one element of type `type` (an integer or float rounded up
/// to whole bytes; an index as 8 bytes; 0 for anything else).
uint64_t getElementBytes(Type type) {
  if (type.isIndex())
    return 8;
  if (type.isIntOrFloat())
    return llvm::divideCeil(type.getIntOrFloatBitWidth(), 8);
  return 0;
}

/// The elements of a value of type `type` (a vector, tensor, memref or AMX
/// tile): 1 for a scalar, nullopt for a shaped type of dynamic shape.
std::optional<uint64_t> getNumElements(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped)
    return 1;
  if (!shaped.hasStaticShape())
    return std::nullopt;
  return static_cast<uint64_t>(shaped.getNumElements());
}

/// The bytes of a value of type `type` (getNumElements times
/// getElementBytes), nullopt for a dynamic shape.
std::optional<uint64_t> getValueBytes(Type type) {
  std::optional<uint64_t> elements = getNumElements(type);
  if (!elements)
    return std::nullopt;
  return mul(*elements, getElementBytes(getElementTypeOrSelf(type)));
}

/// The buffer or tensor an access `op` reads or writes: its first memref or
/// ranked tensor operand.
Value getAccessedValue(Operation *op) {
  for (Value operand : op->getOperands())
    if (isa<MemRefType, RankedTensorType>(operand.getType()))
      return operand;
  return {};
}

/// Adds the bytes that `op` loads or stores to `work` when it is a memory
/// access (the value loaded or stored; a copy's elements twice). Returns
/// false when it is none, or nullopt for a dynamic size.
std::optional<bool> addAccessBytes(Operation *op, LoopWork &work) {
  std::optional<uint64_t> bytes;
  if (isa<memref::LoadOp, affine::AffineLoadOp, vector::TransferReadOp,
          vector::LoadOp, vector::MaskedLoadOp, vector::GatherOp,
          amx::TileLoadOp>(op))
    bytes = getValueBytes(op->getResult(0).getType());
  else if (auto store = dyn_cast<memref::StoreOp>(op))
    bytes = getValueBytes(store.getValueToStore().getType());
  else if (auto store = dyn_cast<affine::AffineStoreOp>(op))
    bytes = getValueBytes(store.getValueToStore().getType());
  else if (auto write = dyn_cast<vector::TransferWriteOp>(op))
    bytes = getValueBytes(write.getVectorType());
  else if (auto store = dyn_cast<vector::StoreOp>(op))
    bytes = getValueBytes(store.getValueToStore().getType());
  else if (auto store = dyn_cast<vector::MaskedStoreOp>(op))
    bytes = getValueBytes(store.getValueToStore().getType());
  else if (auto scatter = dyn_cast<vector::ScatterOp>(op))
    bytes = getValueBytes(scatter.getValueToStore().getType());
  else if (auto store = dyn_cast<amx::TileStoreOp>(op))
    bytes = getValueBytes(store.getVal().getType());
  else if (auto copy = dyn_cast<memref::CopyOp>(op)) {
    bytes = getValueBytes(copy.getSource().getType());
    if (!bytes)
      return std::nullopt;
    work.addBytes(copy.getSource(), *bytes);
    work.addBytes(copy.getTarget(), *bytes);
    return true;
  } else
    return false;
  Value accessed = getAccessedValue(op);
  if (!bytes || !accessed)
    return std::nullopt;
  work.addBytes(accessed, *bytes);
  return true;
}

/// The FLOPs of `op` when it is a contraction (2 per multiply-add), nullopt
/// otherwise.
std::optional<uint64_t> getContractionFlops(Operation *op) {
  if (auto contract = dyn_cast<vector::ContractionOp>(op)) {
    SmallVector<int64_t> bounds;
    contract.getIterationBounds(bounds);
    uint64_t flops = 2;
    for (int64_t bound : bounds)
      flops = mul(flops, static_cast<uint64_t>(bound));
    return flops;
  }
  if (auto dot = dyn_cast<x86vector::DotBF16Op>(op))
    return mul(2, static_cast<uint64_t>(dot.getA().getType().getNumElements()));
  if (isa<amx::TileMulFOp, amx::TileMulIOp>(op)) {
    // lhs M x K, acc M x N.
    ArrayRef<int64_t> lhs =
        cast<amx::TileType>(op->getOperand(0).getType()).getShape();
    ArrayRef<int64_t> acc =
        cast<amx::TileType>(op->getOperand(2).getType()).getShape();
    return mul(mul(mul(2, static_cast<uint64_t>(lhs.front())),
                   static_cast<uint64_t>(lhs.back())),
               static_cast<uint64_t>(acc.back()));
  }
  if (auto fma = dyn_cast<vector::FMAOp>(op))
    return mul(2, static_cast<uint64_t>(fma.getVectorType().getNumElements()));
  if (auto outer = dyn_cast<vector::OuterProductOp>(op))
    return mul(
        2, static_cast<uint64_t>(outer.getResultVectorType().getNumElements()));
  return std::nullopt;
}

/// Whether `op` is arithmetic on values (an arith or math op other than a
/// constant, with one non-index result).
bool isValueArithmetic(Operation *op) {
  return isa_and_nonnull<arith::ArithDialect, math::MathDialect>(
             op->getDialect()) &&
         !isa<arith::ConstantOp>(op) && op->getNumResults() == 1 &&
         !getElementTypeOrSelf(op->getResult(0).getType()).isIndex();
}

} // namespace

//===----------------------------------------------------------------------===//
// LoopWork
//===----------------------------------------------------------------------===//

Value mlir::autopar::getAccessedRoot(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (auto view = dyn_cast<ViewLikeOpInterface>(def))
      value = view.getViewSource();
    else if (auto slice = dyn_cast<tensor::ExtractSliceOp>(def))
      value = slice.getSource();
    else if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(def))
      value = def->getOperand(0);
    else
      break;
  }
  return value;
}

void LoopWork::addBytes(Value value, uint64_t bytes) {
  uint64_t &total = bytesByRoot[getAccessedRoot(value)];
  total = add(total, bytes);
}

LoopWork &LoopWork::operator+=(const LoopWork &other) {
  flops = add(flops, other.flops);
  for (const auto &entry : other.bytesByRoot) {
    uint64_t &total = bytesByRoot[entry.first];
    total = add(total, entry.second);
  }
  return *this;
}

LoopWork LoopWork::scaled(uint64_t times) const {
  LoopWork work;
  work.flops = mul(flops, times);
  for (const auto &entry : bytesByRoot)
    work.bytesByRoot[entry.first] = mul(entry.second, times);
  return work;
}

uint64_t LoopWork::getBytes() const {
  uint64_t total = 0;
  for (const auto &entry : bytesByRoot) {
    uint64_t bytes = entry.second;
    if (std::optional<uint64_t> size = getValueBytes(entry.first.getType()))
      bytes = std::min(bytes, *size);
    total = add(total, bytes);
  }
  return total;
}

uint64_t LoopWork::getEquivalentFlops(uint64_t flopsPerByte) const {
  return std::max(flops, mul(getBytes(), flopsPerByte));
}

//===----------------------------------------------------------------------===//
// Estimates
//===----------------------------------------------------------------------===//

std::optional<uint64_t> mlir::autopar::getStaticTripCount(Value lb, Value ub,
                                                          Value step) {
  std::optional<int64_t> low = getConstantIntValue(lb);
  std::optional<int64_t> high = getConstantIntValue(ub);
  std::optional<int64_t> by = getConstantIntValue(step);
  if (!low || !high || !by || *by <= 0)
    return std::nullopt;
  if (*high <= *low)
    return 0;
  return llvm::divideCeil(static_cast<uint64_t>(*high - *low),
                          static_cast<uint64_t>(*by));
}

std::optional<LoopWork> mlir::autopar::estimateLinalgWork(linalg::LinalgOp op) {
  uint64_t perIteration = 0;
  for (Operation &inner : op.getBlock()->without_terminator())
    if (isValueArithmetic(&inner))
      ++perIteration;
  uint64_t iterations = 1;
  for (int64_t range : op.getStaticLoopRanges()) {
    if (ShapedType::isDynamic(range))
      return std::nullopt;
    iterations = mul(iterations, static_cast<uint64_t>(range));
  }
  LoopWork work;
  work.flops = mul(iterations, perIteration);
  for (Value operand : op->getOperands()) {
    if (!isa<ShapedType>(operand.getType()))
      continue;
    std::optional<uint64_t> bytes = getValueBytes(operand.getType());
    if (!bytes)
      return std::nullopt;
    work.addBytes(operand, *bytes);
  }
  return work;
}

std::optional<LoopWork> mlir::autopar::estimateOpWork(Operation *op) {
  LoopWork work;
  if (std::optional<uint64_t> flops = getContractionFlops(op)) {
    work.flops = *flops;
    return work;
  }
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
    return estimateLinalgWork(linalgOp);
  std::optional<bool> access = addAccessBytes(op, work);
  if (!access)
    return std::nullopt;
  if (*access)
    return work;
  if (auto loop = dyn_cast<scf::ForOp>(op)) {
    std::optional<uint64_t> trips = getStaticTripCount(
        loop.getLowerBound(), loop.getUpperBound(), loop.getStep());
    std::optional<LoopWork> body = estimateRegionWork(loop.getRegion());
    if (!trips || !body)
      return std::nullopt;
    return body->scaled(*trips);
  }
  if (isa<scf::IfOp, scf::ExecuteRegionOp, memref::AllocaScopeOp>(op)) {
    for (Region &region : op->getRegions()) {
      std::optional<LoopWork> inner = estimateRegionWork(region);
      if (!inner)
        return std::nullopt;
      work += *inner;
    }
    return work;
  }
  if (op->getNumRegions() != 0)
    return std::nullopt;
  if (isValueArithmetic(op)) {
    std::optional<uint64_t> elements =
        getNumElements(op->getResult(0).getType());
    if (!elements)
      return std::nullopt;
    work.flops = *elements;
  }
  return work;
}

std::optional<LoopWork> mlir::autopar::estimateRegionWork(Region &region) {
  LoopWork work;
  for (Block &block : region)
    for (Operation &op : block) {
      std::optional<LoopWork> inner = estimateOpWork(&op);
      if (!inner)
        return std::nullopt;
      work += *inner;
    }
  return work;
}

uint64_t mlir::autopar::getThreadsFilled(uint64_t iterations,
                                         const LoopWork &work,
                                         uint64_t minFlopsPerThread,
                                         uint64_t flopsPerByte) {
  assert(minFlopsPerThread > 0 && "the grain must be positive");
  return std::min(iterations,
                  work.getEquivalentFlops(flopsPerByte) / minFlopsPerThread);
}
