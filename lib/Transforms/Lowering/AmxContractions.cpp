//===- AmxContractions.cpp - bf16 linalg.mmt4d on AMX tiles -----*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements autopar-amx-contractions: after bufferization, each
// bf16 x bf16 -> f32 `linalg.mmt4d` of one column panel that
// autopar-tile-contractions left for AMX (m0 = 1, k0 = 2, n0 a multiple of
// 16) becomes loops of AMX dialect tile loads, `tdpbf16ps` products and tile
// stores, with the accumulator tiles carried through the reduction loop.
//
//===----------------------------------------------------------------------===//

#include "autopar/Transforms/Lowering/Passes.h"

#include "autopar/Target/Target.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/SetVector.h"

namespace mlir::autopar {
#define GEN_PASS_DEF_AMXCONTRACTIONSPASS
#include "autopar/Transforms/Lowering/Passes.h.inc"
} // namespace mlir::autopar

using namespace mlir;
using namespace mlir::autopar;

namespace {

/// Rows of an AMX tile (each of 64 bytes: 32 bf16 or 16 f32), and pairs of
/// k of one step of the reduction loop.
constexpr int64_t kTileRows = 16;
/// Columns of an f32 accumulator tile (64 bytes).
constexpr int64_t kAccColumns = 16;
/// Rows of A (two tiles) and columns of C (two accumulator tiles) of one
/// block: four accumulators, two tiles of A and two of B fill the eight tile
/// registers.
constexpr int64_t kBlockRows = 2 * kTileRows;
constexpr int64_t kBlockColumns = 2 * kAccColumns;

/// The runtime function that requests the AMX tile state from Linux.
constexpr llvm::StringLiteral kRequireAmx = "autopar_rt_require_amx";

/// Reassociation of a rank-`rank` memref into two groups, the first of
/// `leading` dimensions.
SmallVector<ReassociationIndices> twoGroups(int64_t rank, int64_t leading) {
  SmallVector<ReassociationIndices> groups(2);
  for (int64_t i = 0; i < rank; ++i)
    groups[i < leading ? 0 : 1].push_back(i);
  return groups;
}

/// The 2-D views of one AMX contraction's operands: A `M x 2K1` (bf16, rows
/// at A's row stride), B `K1 x 2n0` (bf16, one row per pair of k: n0 pairs),
/// C `M x n0` (f32).
struct AmxOperands {
  Value a, b, c;
  int64_t m, k1, n0;
};

/// The views of `op` when it is a contraction on buffers that AMX tiles
/// compute (see the pass description); nullopt otherwise.
std::optional<AmxOperands> matchAmxContraction(OpBuilder &b,
                                               linalg::LinalgOp op) {
  if (!llvm::isa<linalg::Mmt4DOp, linalg::BatchMmt4DOp>(op.getOperation()) ||
      !op.hasPureBufferSemantics())
    return std::nullopt;
  bool batched = llvm::isa<linalg::BatchMmt4DOp>(op.getOperation());
  auto lhs = cast<MemRefType>(op->getOperand(0).getType());
  auto rhs = cast<MemRefType>(op->getOperand(1).getType());
  auto acc = cast<MemRefType>(op->getOperand(2).getType());
  if (!lhs.hasStaticShape() || !rhs.hasStaticShape() || !acc.hasStaticShape())
    return std::nullopt;
  if (!lhs.getElementType().isBF16() || !rhs.getElementType().isBF16() ||
      !acc.getElementType().isF32())
    return std::nullopt;
  // Leading dimensions: the batch (1 after tiling) then M1 / N1.
  int64_t lead = batched ? 1 : 0;
  if (batched && (lhs.getDimSize(0) != 1 || rhs.getDimSize(0) != 1))
    return std::nullopt;
  ArrayRef<int64_t> l = lhs.getShape().drop_front(lead),
                    r = rhs.getShape().drop_front(lead),
                    c = acc.getShape().drop_front(lead);
  // A: M x K1 x 1 x 2; B: 1 x K1 x n0 x 2; C: M x 1 x 1 x n0.
  if (l[2] != 1 || l[3] != 2 || r[0] != 1 || r[1] != l[1] || r[3] != 2 ||
      r[2] % kAccColumns != 0 || c[0] != l[0] || c[1] != 1 || c[2] != 1 ||
      c[3] != r[2])
    return std::nullopt;
  // The 2-D views, where the layouts allow them: each row of a tile is
  // contiguous (checked before any view is created, so that a mismatch
  // leaves nothing behind).
  int64_t rank = 4 + lead;
  SmallVector<SmallVector<ReassociationIndices>> groups = {
      twoGroups(rank, 1 + lead), twoGroups(rank, 2 + lead),
      twoGroups(rank, 1 + lead)};
  for (int64_t i = 0; i < 3; ++i) {
    auto type = cast<MemRefType>(op->getOperand(i).getType());
    SmallVector<int64_t> strides;
    int64_t offset;
    if (failed(type.getStridesAndOffset(strides, offset)) ||
        strides.back() != 1 ||
        !memref::CollapseShapeOp::isGuaranteedCollapsible(type, groups[i]))
      return std::nullopt;
  }
  Location loc = op.getLoc();
  AmxOperands views;
  views.m = l[0];
  views.k1 = l[1];
  views.n0 = r[2];
  views.a =
      memref::CollapseShapeOp::create(b, loc, op->getOperand(0), groups[0]);
  views.b =
      memref::CollapseShapeOp::create(b, loc, op->getOperand(1), groups[1]);
  views.c =
      memref::CollapseShapeOp::create(b, loc, op->getOperand(2), groups[2]);
  return views;
}

/// Stack buffers of one tile each, zero-padded copies of operand parts that
/// do not fill a tile: every tile then has the one shape of 16 rows of 64
/// bytes (LLVM configures the tile registers once per function, so tiles of
/// other shapes would take registers of their own and not fit).
struct Scratch {
  Value a; ///< 16 x 32 bf16: rows of A.
  Value b; ///< 16 x 64 bf16: pairs of B, two column tiles.
  Value c; ///< 16 x 16 f32: an accumulator.
};

Value constantIndex(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

/// `rows x cols` of `src` from (`row`, `col`) copied into the top left
/// corner of the zero-filled `scratch`.
void copyPadded(OpBuilder &b, Location loc, Value src, Value row, Value col,
                int64_t rows, int64_t cols, Value scratch) {
  Type elementType = cast<MemRefType>(scratch.getType()).getElementType();
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(elementType));
  linalg::FillOp::create(b, loc, ValueRange{zero}, ValueRange{scratch});
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(rows),
                                     b.getIndexAttr(cols)};
  SmallVector<OpFoldResult> unit = {b.getIndexAttr(1), b.getIndexAttr(1)};
  Value part = memref::SubViewOp::create(
      b, loc, src, SmallVector<OpFoldResult>{row, col}, sizes, unit);
  Value corner = memref::SubViewOp::create(
      b, loc, scratch,
      SmallVector<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(0)}, sizes,
      unit);
  linalg::CopyOp::create(b, loc, part, corner);
}

/// A 16-row tile of `type` from `src` at (`row`, `col`), of which `rows` x
/// `cols` are there and the rest reads zero (through `scratch`).
Value loadTile(OpBuilder &b, Location loc, amx::TileType type, Value src,
               Value row, Value col, int64_t rows, int64_t cols,
               Value scratch) {
  if (rows == type.getDimSize(0) && cols == type.getDimSize(1))
    return amx::TileLoadOp::create(b, loc, type, src, ValueRange{row, col});
  copyPadded(b, loc, src, row, col, rows, cols, scratch);
  Value zero = constantIndex(b, loc, 0);
  return amx::TileLoadOp::create(b, loc, type, scratch, ValueRange{zero, zero});
}

/// Emits the products of one block: `rows` rows of A (at most 32, in tiles
/// of 16) from row `m` by `columnTiles` accumulator tiles (16 columns each
/// from column `n`), reduced over all K1 pairs of k.
void emitBlock(OpBuilder &b, Location loc, const AmxOperands &v,
               const Scratch &scratch, Value m, int64_t n, int64_t rows,
               int64_t columnTiles) {
  Type bf16 = b.getBF16Type(), f32 = b.getF32Type();
  auto accType = amx::TileType::get({kTileRows, kAccColumns}, f32);
  auto aType = amx::TileType::get({kTileRows, 2 * kTileRows}, bf16);
  auto bType = amx::TileType::get({kTileRows, 2 * kAccColumns}, bf16);
  auto add = [&](Value lhs, int64_t offset) -> Value {
    if (offset == 0)
      return lhs;
    return arith::AddIOp::create(b, loc, lhs, constantIndex(b, loc, offset));
  };
  SmallVector<int64_t> rowTiles;
  for (int64_t r = 0; r < rows; r += kTileRows)
    rowTiles.push_back(std::min(kTileRows, rows - r));
  // Accumulators, row-tile major.
  SmallVector<Value> accs;
  for (auto [i, tileRows] : llvm::enumerate(rowTiles))
    for (int64_t j = 0; j < columnTiles; ++j)
      accs.push_back(loadTile(b, loc, accType, v.c, add(m, i * kTileRows),
                              constantIndex(b, loc, n + j * kAccColumns),
                              tileRows, kAccColumns, scratch.c));
  // One reduction step of `pairs` pairs of k from pair `k`.
  auto step = [&](Value k, int64_t pairs, ValueRange in) -> SmallVector<Value> {
    Value kElement = arith::MulIOp::create(b, loc, k, constantIndex(b, loc, 2));
    SmallVector<Value> aTiles, bTiles;
    for (auto [i, tileRows] : llvm::enumerate(rowTiles))
      aTiles.push_back(loadTile(b, loc, aType, v.a, add(m, i * kTileRows),
                                kElement, tileRows, 2 * pairs, scratch.a));
    Value bColumn = constantIndex(b, loc, 2 * n);
    if (pairs < kTileRows)
      copyPadded(b, loc, v.b, k, bColumn, pairs, 2 * kAccColumns * columnTiles,
                 scratch.b);
    for (int64_t j = 0; j < columnTiles; ++j) {
      if (pairs < kTileRows)
        bTiles.push_back(amx::TileLoadOp::create(
            b, loc, bType, scratch.b,
            ValueRange{constantIndex(b, loc, 0),
                       constantIndex(b, loc, j * 2 * kAccColumns)}));
      else
        bTiles.push_back(amx::TileLoadOp::create(
            b, loc, bType, v.b,
            ValueRange{k, add(bColumn, j * 2 * kAccColumns)}));
    }
    SmallVector<Value> out;
    for (auto [i, aTile] : llvm::enumerate(aTiles))
      for (auto [j, bTile] : llvm::enumerate(bTiles))
        out.push_back(amx::TileMulFOp::create(b, loc, accType, aTile, bTile,
                                              in[i * columnTiles + j]));
    return out;
  };
  int64_t fullPairs = v.k1 / kTileRows * kTileRows;
  if (fullPairs > 0) {
    auto loop = scf::ForOp::create(b, loc, constantIndex(b, loc, 0),
                                   constantIndex(b, loc, fullPairs),
                                   constantIndex(b, loc, kTileRows), accs);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    SmallVector<Value> next =
        step(loop.getInductionVar(), kTileRows, loop.getRegionIterArgs());
    scf::YieldOp::create(b, loc, next);
    b.setInsertionPointAfter(loop);
    accs.assign(loop.getResults().begin(), loop.getResults().end());
  }
  if (int64_t rest = v.k1 - fullPairs)
    accs = step(constantIndex(b, loc, fullPairs), rest, accs);
  Value zero = constantIndex(b, loc, 0);
  for (auto [i, tileRows] : llvm::enumerate(rowTiles))
    for (int64_t j = 0; j < columnTiles; ++j) {
      Value row = add(m, i * kTileRows);
      Value col = constantIndex(b, loc, n + j * kAccColumns);
      Value acc = accs[i * columnTiles + j];
      if (tileRows == kTileRows) {
        amx::TileStoreOp::create(b, loc, v.c, ValueRange{row, col}, acc);
        continue;
      }
      // The rows that exist, through the scratch tile.
      amx::TileStoreOp::create(b, loc, scratch.c, ValueRange{zero, zero}, acc);
      SmallVector<OpFoldResult> sizes = {b.getIndexAttr(tileRows),
                                         b.getIndexAttr(kAccColumns)};
      SmallVector<OpFoldResult> unit = {b.getIndexAttr(1), b.getIndexAttr(1)};
      Value corner = memref::SubViewOp::create(
          b, loc, scratch.c,
          SmallVector<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(0)},
          sizes, unit);
      Value part = memref::SubViewOp::create(
          b, loc, v.c, SmallVector<OpFoldResult>{row, col}, sizes, unit);
      linalg::CopyOp::create(b, loc, corner, part);
    }
}

/// Emits the blocks of `rows` rows from row `m` over every column group.
void emitRowBlock(OpBuilder &b, Location loc, const AmxOperands &v,
                  const Scratch &scratch, Value m, int64_t rows) {
  for (int64_t n = 0; n < v.n0; n += kBlockColumns)
    emitBlock(b, loc, v, scratch, m, n, rows,
              std::min(kBlockColumns, v.n0 - n) / kAccColumns);
}

/// Replaces the contraction `op` (views `v`) by AMX tile loops, in an
/// alloca scope holding the scratch tiles.
void rewriteToAmx(OpBuilder &b, linalg::LinalgOp op, const AmxOperands &v) {
  Location loc = op.getLoc();
  auto scope = memref::AllocaScopeOp::create(b, loc, TypeRange{});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&scope.getBodyRegion().emplaceBlock());
  Type bf16 = b.getBF16Type(), f32 = b.getF32Type();
  Scratch scratch;
  scratch.a = memref::AllocaOp::create(
      b, loc, MemRefType::get({kTileRows, 2 * kTileRows}, bf16));
  scratch.b = memref::AllocaOp::create(
      b, loc, MemRefType::get({kTileRows, 2 * kBlockColumns}, bf16));
  scratch.c = memref::AllocaOp::create(
      b, loc, MemRefType::get({kTileRows, kAccColumns}, f32));
  int64_t fullRows = v.m / kBlockRows * kBlockRows;
  if (fullRows > 0) {
    auto loop = scf::ForOp::create(b, loc, constantIndex(b, loc, 0),
                                   constantIndex(b, loc, fullRows),
                                   constantIndex(b, loc, kBlockRows));
    OpBuilder::InsertionGuard loopGuard(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    emitRowBlock(b, loc, v, scratch, loop.getInductionVar(), kBlockRows);
  }
  if (int64_t rest = v.m - fullRows)
    emitRowBlock(b, loc, v, scratch, constantIndex(b, loc, fullRows), rest);
  memref::AllocaScopeReturnOp::create(b, loc, ValueRange{});
  op->erase();
}

struct AmxContractionsPass
    : public autopar::impl::AmxContractionsPassBase<AmxContractionsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<CpuIsa> target = parseCpuIsa(isa);
    if (!target) {
      module.emitError() << "autopar-amx-contractions: unknown isa '" << isa
                         << "' (expected " << getCpuIsaNames() << ")";
      return signalPassFailure();
    }
    if (!hasAmxTiles(*target))
      return;

    SmallVector<linalg::LinalgOp> contractions;
    module.walk([&](linalg::LinalgOp op) {
      if (llvm::isa<linalg::Mmt4DOp, linalg::BatchMmt4DOp>(op.getOperation()))
        contractions.push_back(op);
    });
    llvm::SetVector<func::FuncOp> users;
    OpBuilder b(&getContext());
    for (linalg::LinalgOp op : contractions) {
      b.setInsertionPoint(op);
      std::optional<AmxOperands> views = matchAmxContraction(b, op);
      if (!views)
        continue;
      users.insert(op->getParentOfType<func::FuncOp>());
      rewriteToAmx(b, op, *views);
      ++numAmx;
    }
    if (users.empty())
      return;

    // The tile state is requested once per process, before the first tile
    // instruction (Linux raises SIGILL otherwise).
    b.setInsertionPointToStart(module.getBody());
    auto requireType = b.getFunctionType({}, {});
    if (!module.lookupSymbol<func::FuncOp>(kRequireAmx)) {
      auto decl =
          func::FuncOp::create(b, module.getLoc(), kRequireAmx, requireType);
      decl.setPrivate();
    }
    for (func::FuncOp func : users) {
      if (!func || func.isExternal())
        continue;
      b.setInsertionPointToStart(&func.getBody().front());
      func::CallOp::create(b, func.getLoc(), kRequireAmx, TypeRange{});
    }
  }
};

} // namespace
