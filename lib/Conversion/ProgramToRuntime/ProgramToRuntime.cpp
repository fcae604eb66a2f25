//===- ProgramToRuntime.cpp - device program to runtime calls ---*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements autopar-lower-program-to-runtime: the device program's
// `@main` becomes `autopar_main()`, whose inputs, outputs, weights and
// collectives are calls of the runtime ABI (autopar/Runtime/RuntimeABI.h).
//
//===----------------------------------------------------------------------===//

#include "autopar/Conversion/ProgramToRuntime.h"
#include "autopar/Conversion/Passes.h"
#include "autopar/Dialect/Autopar/IR/Autopar.h"
#include "autopar/Dialect/Autopar/IR/ShardLayout.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "autopar-lower-program-to-runtime"

namespace mlir::autopar {
#define GEN_PASS_DEF_LOWERPROGRAMTORUNTIMEPASS
#include "autopar/Conversion/Passes.h.inc"
} // namespace mlir::autopar

using namespace mlir;
using namespace mlir::autopar;

/// The id of the weight an `autopar.assign` stores, recorded before the
/// weight's load is lowered.
static constexpr llvm::StringLiteral kWeightIdAttrName = "autopar.weight_id";

/// Name of the entry point the runtime calls.
static constexpr llvm::StringLiteral kEntryName = "autopar_main";

SmallVector<std::string> mlir::autopar::getProgramWeightOrder(func::FuncOp func) {
  SmallVector<std::string> order;
  llvm::StringSet<> seen;
  func.walk<WalkOrder::PreOrder>([&](WeightOp weight) {
    if (seen.insert(weight.getName()).second)
      order.push_back(weight.getName().str());
  });
  return order;
}

/// The ABI suffix of `elementType` (`f32`, `f64`, `bf16`, `f16`, `i64`, `i32`,
/// `i8`, `i1`), or an empty string when the runtime has no entry points for
/// it.
static StringRef getTypeSuffix(Type elementType) {
  if (elementType.isF32())
    return "f32";
  if (elementType.isBF16())
    return "bf16";
  if (elementType.isF16())
    return "f16";
  if (elementType.isF64())
    return "f64";
  if (elementType.isSignlessInteger(64))
    return "i64";
  if (elementType.isSignlessInteger(32))
    return "i32";
  if (elementType.isSignlessInteger(8))
    return "i8";
  if (elementType.isUnsignedInteger(8))
    return "u8";
  if (elementType.isSignlessInteger(1))
    return "i1";
  return "";
}

/// The block layout the runtime's input and output calls take for a value
/// of local type `local`: its global sizes, then per dimension the encoded
/// grid axes that split it (0: whole). `sharding` and `global` come from the
/// argument or result attributes the partitioner leaves (both null for a
/// replicated value, whose global type is `local`). Each dimension must be
/// its global size divided by the devices of its axes on `grid` (empty when
/// the module has no grid).
static FailureOr<SmallVector<int64_t>>
getBlockLayout(Operation *op, StringRef what, RankedTensorType local,
               ShardingAttr sharding, TypeAttr global, ArrayRef<int64_t> grid) {
  if (!sharding && !global)
    return llvm::to_vector(llvm::concat<const int64_t>(
        local.getShape(), SmallVector<int64_t>(local.getRank(), 0)));
  auto globalType =
      global ? dyn_cast<RankedTensorType>(global.getValue()) : nullptr;
  if (!sharding || !globalType)
    return op->emitOpError()
           << what << " needs both '" << kShardingAttrName << "' and '"
           << kGlobalTypeAttrName << "' or neither";
  if (!globalType.hasStaticShape() || globalType.getRank() != local.getRank() ||
      sharding.getRank() != local.getRank() ||
      globalType.getElementType() != local.getElementType() ||
      sharding.isPartial())
    return op->emitOpError() << what << " of local type " << local
                             << " does not match its global type " << globalType
                             << " and sharding " << sharding;
  SmallVector<int64_t> layout(globalType.getShape());
  for (int64_t dim = 0; dim < local.getRank(); ++dim) {
    int64_t devices = 1;
    for (int64_t axis : sharding.getDimAxes(dim))
      devices *= axis >= 0 && axis < static_cast<int64_t>(grid.size())
                     ? grid[axis]
                     : 0;
    if (local.getDimSize(dim) * devices != globalType.getDimSize(dim))
      return op->emitOpError() << what << " of local type " << local
                               << " does not match its global type "
                               << globalType << " and sharding " << sharding;
    layout.push_back(encodeGridAxes(sharding.getDimAxes(dim)));
  }
  return layout;
}

namespace {

/// Emits runtime calls for one module: declares the runtime functions on first
/// use and builds the buffers passed to them.
class RuntimeCallBuilder {
public:
  RuntimeCallBuilder(ModuleOp module, int64_t &numCalls)
      : module(module), symbolTable(module), numCalls(numCalls) {}

  /// Checks that `type` is a statically shaped tensor of a supported element
  /// type; emits an error on `op` otherwise.
  static LogicalResult checkTensorType(Operation *op, Type type,
                                       StringRef what) {
    auto tensorType = dyn_cast<RankedTensorType>(type);
    if (!tensorType)
      return op->emitOpError() << what << " must be a ranked tensor, got "
                               << type;
    if (!tensorType.hasStaticShape())
      return op->emitOpError()
             << what << " must have a static shape, got " << type;
    if (getTypeSuffix(tensorType.getElementType()).empty())
      return op->emitOpError()
             << what << " has unsupported element type "
             << tensorType.getElementType()
             << " (expected f32, f64, bf16, f16, i64, i32, i8, ui8 or i1)";
    return success();
  }

  /// Allocates a buffer for a tensor of `type`; returns the buffer and its
  /// unranked cast.
  std::pair<Value, Value> allocate(OpBuilder &b, Location loc,
                                   RankedTensorType type) {
    auto memrefType = MemRefType::get(type.getShape(), type.getElementType());
    Value buffer = memref::AllocOp::create(b, loc, memrefType);
    return {buffer, toUnranked(b, loc, buffer)};
  }

  /// The tensor view of `buffer` once the runtime has filled it.
  static Value toTensor(OpBuilder &b, Location loc, RankedTensorType type,
                        Value buffer) {
    return bufferization::ToTensorOp::create(b, loc, type, buffer,
                                             /*restrict=*/true);
  }

  /// A read-only unranked buffer holding `tensor`.
  Value toReadOnlyBuffer(OpBuilder &b, Location loc, Value tensor) {
    auto type = cast<RankedTensorType>(tensor.getType());
    auto memrefType = MemRefType::get(type.getShape(), type.getElementType());
    Value buffer = bufferization::ToBufferOp::create(b, loc, memrefType, tensor,
                                                     /*read_only=*/true);
    return toUnranked(b, loc, buffer);
  }

  /// Calls runtime function `base` + `_` + suffix of `elementType` (or `base`
  /// itself when `elementType` is null) with `args`; returns its results.
  ValueRange call(OpBuilder &b, Location loc, StringRef base, Type elementType,
                  ValueRange args, TypeRange results = {}) {
    std::string name = base.str();
    if (elementType)
      name += ("_" + getTypeSuffix(elementType)).str();
    func::FuncOp callee = declare(name, args.getTypes(), results);
    ++numCalls;
    return func::CallOp::create(b, loc, callee, args).getResults();
  }

  /// A read-only unranked i64 buffer holding `values`.
  Value i64Buffer(OpBuilder &b, Location loc, ArrayRef<int64_t> values) {
    auto type = RankedTensorType::get({static_cast<int64_t>(values.size())},
                                      b.getI64Type());
    Value constant = arith::ConstantOp::create(
        b, loc, type, DenseIntElementsAttr::get(type, values));
    return toReadOnlyBuffer(b, loc, constant);
  }

  /// `autopar_rt_group_index(axes)` as an i64.
  Value groupIndex(OpBuilder &b, Location loc, ArrayRef<int64_t> axes) {
    Value encoded = i64Constant(b, loc, encodeGridAxes(axes));
    return call(b, loc, "autopar_rt_group_index", Type(), encoded,
                b.getI64Type())
        .front();
  }

  /// `autopar_rt_microbatch_index()` as an i64.
  Value microbatchIndex(OpBuilder &b, Location loc) {
    return call(b, loc, "autopar_rt_microbatch_index", Type(), {},
                b.getI64Type())
        .front();
  }

  static Value i64Constant(OpBuilder &b, Location loc, int64_t value) {
    return arith::ConstantIntOp::create(b, loc, value, 64);
  }

  /// Whether an existing symbol blocks a runtime declaration (set by
  /// `declare`; checked by the pass once all calls are emitted).
  Operation *getConflict() const { return conflict; }

private:
  static Value toUnranked(OpBuilder &b, Location loc, Value buffer) {
    auto type = cast<MemRefType>(buffer.getType());
    return memref::CastOp::create(
        b, loc, UnrankedMemRefType::get(type.getElementType(), 0), buffer);
  }

  func::FuncOp declare(StringRef name, TypeRange args, TypeRange results) {
    auto type = FunctionType::get(module.getContext(), args, results);
    if (auto existing = symbolTable.lookup<func::FuncOp>(name)) {
      if (existing.getFunctionType() != type && !conflict)
        conflict = existing;
      return existing;
    }
    OpBuilder b(module.getBodyRegion());
    b.setInsertionPointToStart(module.getBody());
    auto decl = func::FuncOp::create(b, module.getLoc(), name, type);
    decl.setPrivate();
    symbolTable.insert(decl);
    return decl;
  }

  ModuleOp module;
  SymbolTable symbolTable;
  int64_t &numCalls;
  Operation *conflict = nullptr;
};

struct LowerProgramToRuntimePass
    : public autopar::impl::LowerProgramToRuntimePassBase<LowerProgramToRuntimePass> {
  using Base::Base;

  void runOnOperation() override;

private:
  LogicalResult lowerFunction(func::FuncOp func, RuntimeCallBuilder &rt);
  LogicalResult lowerOp(Operation *op, RuntimeCallBuilder &rt,
                        const llvm::StringMap<int64_t> &weightIds);
};

} // namespace

/// Checks the collective's grid axes and element types; `op` must have one
/// tensor input and one tensor result.
static LogicalResult checkCollective(Operation *op) {
  if (failed(RuntimeCallBuilder::checkTensorType(op, op->getOperand(0).getType(),
                                                 "input")) ||
      failed(RuntimeCallBuilder::checkTensorType(op, op->getResult(0).getType(),
                                                 "result")))
    return failure();
  Type inElement = getElementTypeOrSelf(op->getOperand(0).getType());
  Type outElement = getElementTypeOrSelf(op->getResult(0).getType());
  if (inElement != outElement)
    return op->emitOpError() << "requires equal input and result element "
                                "types, got "
                             << inElement << " and " << outElement;
  return success();
}

/// The grid axes of a shard collective as plain integers.
static SmallVector<int64_t> getAxes(ArrayRef<shard::GridAxis> axes) {
  return llvm::to_vector(llvm::map_range(
      axes, [](shard::GridAxis axis) { return static_cast<int64_t>(axis); }));
}

static LogicalResult checkSum(Operation *op, shard::ReductionKind kind) {
  if (kind != shard::ReductionKind::Sum)
    return op->emitOpError() << "supports only sum reductions, got '"
                             << shard::stringifyReductionKind(kind) << "'";
  return success();
}

LogicalResult
LowerProgramToRuntimePass::lowerOp(Operation *op, RuntimeCallBuilder &rt,
                                   const llvm::StringMap<int64_t> &weightIds) {
  OpBuilder b(op);
  Location loc = op->getLoc();

  // Calls the runtime function `base(in, out, scalars...)` writing a fresh
  // buffer of `op`'s result type and replaces the op with that buffer.
  auto replaceWithRuntimeCall = [&](StringRef base, Value input,
                                    ArrayRef<int64_t> scalars) {
    auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
    Value in = rt.toReadOnlyBuffer(b, loc, input);
    auto [outBuffer, out] = rt.allocate(b, loc, resultType);
    SmallVector<Value> args = {in, out};
    for (int64_t value : scalars)
      args.push_back(RuntimeCallBuilder::i64Constant(b, loc, value));
    rt.call(b, loc, base, resultType.getElementType(), args);
    op->getResult(0).replaceAllUsesWith(
        RuntimeCallBuilder::toTensor(b, loc, resultType, outBuffer));
    op->erase();
    return success();
  };

  // A group collective: the encoded grid axes, then `extra`.
  auto replaceWithCollective = [&](StringRef base, Value input,
                                   ArrayRef<shard::GridAxis> axes,
                                   ArrayRef<int64_t> extra) {
    SmallVector<int64_t> scalars = {encodeGridAxes(getAxes(axes))};
    llvm::append_range(scalars, extra);
    return replaceWithRuntimeCall(base, input, scalars);
  };

  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](WeightOp weight) -> LogicalResult {
        auto type = weight.getResult().getType();
        if (failed(RuntimeCallBuilder::checkTensorType(op, type, "result")))
          return failure();
        auto [buffer, unranked] = rt.allocate(b, loc, type);
        Value id = RuntimeCallBuilder::i64Constant(
            b, loc, weightIds.lookup(weight.getName()));
        rt.call(b, loc, "autopar_rt_load_weight", type.getElementType(),
                {id, unranked});
        weight.replaceAllUsesWith(
            RuntimeCallBuilder::toTensor(b, loc, type, buffer));
        weight.erase();
        return success();
      })
      .Case([&](AssignOp assign) -> LogicalResult {
        // The weight's id was recorded before its load was lowered.
        auto weightId = assign->getAttrOfType<IntegerAttr>(kWeightIdAttrName);
        auto type = cast<RankedTensorType>(assign.getValue().getType());
        if (!weightId)
          return assign.emitOpError() << "stores no 'autopar.weight'";
        if (failed(RuntimeCallBuilder::checkTensorType(op, type, "value")))
          return failure();
        Value id = RuntimeCallBuilder::i64Constant(b, loc, weightId.getInt());
        Value buffer = rt.toReadOnlyBuffer(b, loc, assign.getValue());
        rt.call(b, loc, "autopar_rt_store_weight", type.getElementType(),
                {id, buffer});
        assign.replaceAllUsesWith(assign.getValue());
        assign.erase();
        return success();
      })
      .Case([&](SendOp send) -> LogicalResult {
        auto type = cast<RankedTensorType>(send.getInput().getType());
        if (failed(RuntimeCallBuilder::checkTensorType(op, type, "input")))
          return failure();
        Value buffer = rt.toReadOnlyBuffer(b, loc, send.getInput());
        rt.call(b, loc, "autopar_rt_send", type.getElementType(),
                {RuntimeCallBuilder::i64Constant(b, loc, send.getStage()),
                 RuntimeCallBuilder::i64Constant(b, loc, send.getTag()),
                 buffer});
        send.replaceAllUsesWith(send.getInput());
        send.erase();
        return success();
      })
      .Case([&](RecvOp recv) -> LogicalResult {
        RankedTensorType type = recv.getResult().getType();
        if (failed(RuntimeCallBuilder::checkTensorType(op, type, "result")))
          return failure();
        auto [buffer, unranked] = rt.allocate(b, loc, type);
        rt.call(b, loc, "autopar_rt_recv", type.getElementType(),
                {RuntimeCallBuilder::i64Constant(b, loc, recv.getStage()),
                 RuntimeCallBuilder::i64Constant(b, loc, recv.getTag()),
                 unranked});
        recv.replaceAllUsesWith(
            RuntimeCallBuilder::toTensor(b, loc, type, buffer));
        recv.erase();
        return success();
      })
      .Case([&](shard::AllReduceOp reduce) -> LogicalResult {
        if (failed(checkCollective(op)) ||
            failed(checkSum(op, reduce.getReduction())))
          return failure();
        return replaceWithCollective("autopar_rt_all_reduce",
                                     reduce.getInput(), reduce.getGridAxes(),
                                     {});
      })
      .Case([&](shard::AllGatherOp gather) -> LogicalResult {
        if (failed(checkCollective(op)))
          return failure();
        return replaceWithCollective(
            "autopar_rt_all_gather", gather.getInput(), gather.getGridAxes(),
            {static_cast<int64_t>(gather.getGatherAxis().getZExtValue())});
      })
      .Case([&](shard::ReduceScatterOp scatter) -> LogicalResult {
        if (failed(checkCollective(op)) ||
            failed(checkSum(op, scatter.getReduction())))
          return failure();
        return replaceWithCollective(
            "autopar_rt_reduce_scatter", scatter.getInput(),
            scatter.getGridAxes(),
            {static_cast<int64_t>(scatter.getScatterAxis().getZExtValue())});
      })
      .Case([&](shard::AllToAllOp allToAll) -> LogicalResult {
        if (failed(checkCollective(op)))
          return failure();
        return replaceWithCollective(
            "autopar_rt_all_to_all", allToAll.getInput(),
            allToAll.getGridAxes(),
            {static_cast<int64_t>(allToAll.getSplitAxis().getZExtValue()),
             static_cast<int64_t>(allToAll.getConcatAxis().getZExtValue())});
      })
      .Case([&](SwapGridAxesOp swap) -> LogicalResult {
        if (failed(checkCollective(op)))
          return failure();
        // Point to point: the two axes are passed as plain axis numbers.
        return replaceWithRuntimeCall("autopar_rt_swap_grid_axes",
                                      swap.getInput(), swap.getGridAxes());
      })
      .Case([&](shard::AllSliceOp slice) -> LogicalResult {
        if (failed(checkCollective(op)))
          return failure();
        auto resultType = cast<RankedTensorType>(slice.getResult().getType());
        int64_t axis = slice.getSliceAxis().getZExtValue();
        int64_t rank = resultType.getRank();
        Value groupIndex = rt.groupIndex(b, loc, getAxes(slice.getGridAxes()));
        Value offset = arith::MulIOp::create(
            b, loc, groupIndex,
            RuntimeCallBuilder::i64Constant(b, loc,
                                            resultType.getDimSize(axis)));
        Value offsetIndex = arith::IndexCastOp::create(
            b, loc, b.getIndexType(), offset);
        SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
        offsets[axis] = offsetIndex;
        SmallVector<OpFoldResult> sizes;
        for (int64_t size : resultType.getShape())
          sizes.push_back(b.getIndexAttr(size));
        SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
        Value result = tensor::ExtractSliceOp::create(
            b, loc, resultType, slice.getInput(), offsets, sizes, strides);
        slice.replaceAllUsesWith(result);
        slice.erase();
        return success();
      })
      .Case([&](RandomUniformOp random) -> LogicalResult {
        // The device's block of the global result starts, along each
        // dimension, at (its index in the group of the dimension's axes) x
        // (the block size); in an inference pipeline, the microbatch's block
        // of the whole batch's draw at (the runtime's microbatch index) x
        // (the global extent) along the dimension the microbatches split.
        auto sharding = op->getAttrOfType<ShardingAttr>(kShardingAttrName);
        auto microbatch =
            op->getAttrOfType<IntegerAttr>(kMicrobatchDrawAttrName);
        if (!sharding && !microbatch)
          return success();
        RankedTensorType type = random.getResult().getType();
        if (!random.getOffsets().empty())
          return op->emitOpError() << "has its block offsets already";
        if (sharding && sharding.getRank() != type.getRank())
          return op->emitOpError()
                 << "has sharding " << sharding
                 << " that does not match its result " << type;
        SmallVector<int64_t> global(type.getShape());
        if (std::optional<ArrayRef<int64_t>> shape = random.getGlobalShape())
          global.assign(shape->begin(), shape->end());
        int64_t split = -1;
        if (microbatch) {
          split = microbatch.getInt();
          std::optional<ArrayRef<int64_t>> whole = random.getWholeShape();
          if (split < 0 || split >= type.getRank() || !whole ||
              random.getWholeOffsets() || (*whole)[split] % global[split] != 0)
            return op->emitOpError()
                   << "has " << kMicrobatchDrawAttrName << " = " << split
                   << " without a whole_shape (and no whole_offsets) that "
                      "holds whole blocks of the op's along that dimension";
        }
        SmallVector<Value> offsets;
        for (int64_t d = 0; d < type.getRank(); ++d) {
          ArrayRef<int64_t> axes =
              sharding ? sharding.getDimAxes(d) : ArrayRef<int64_t>();
          Value offset = axes.empty()
                             ? RuntimeCallBuilder::i64Constant(b, loc, 0)
                             : Value(arith::MulIOp::create(
                                   b, loc, rt.groupIndex(b, loc, axes),
                                   RuntimeCallBuilder::i64Constant(
                                       b, loc, type.getDimSize(d))));
          if (d == split)
            offset = arith::AddIOp::create(
                b, loc, offset,
                arith::MulIOp::create(
                    b, loc, rt.microbatchIndex(b, loc),
                    RuntimeCallBuilder::i64Constant(b, loc, global[d])));
          offsets.push_back(offset);
        }
        random.getOffsetsMutable().assign(offsets);
        op->removeAttr(kShardingAttrName);
        op->removeAttr(kMicrobatchDrawAttrName);
        return success();
      })
      .Case([&](ToPartialOp partial) -> LogicalResult {
        auto type = partial.getResult().getType();
        if (failed(RuntimeCallBuilder::checkTensorType(op, type, "result")))
          return failure();
        Value groupIndex = rt.groupIndex(b, loc, partial.getGridAxes());
        Value isFirst = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::eq, groupIndex,
            RuntimeCallBuilder::i64Constant(b, loc, 0));
        auto zeros = DenseElementsAttr::get(
            type, b.getZeroAttr(type.getElementType()));
        Value zeroTensor = arith::ConstantOp::create(b, loc, type, zeros);
        Value result = arith::SelectOp::create(b, loc, isFirst,
                                               partial.getInput(), zeroTensor);
        partial.replaceAllUsesWith(result);
        partial.erase();
        return success();
      })
      .Default([&](Operation *other) -> LogicalResult {
        if (isa<shard::ShardDialect>(other->getDialect()))
          return other->emitOpError()
                 << "has no lowering to the autopar runtime";
        return success();
      });
}

LogicalResult
LowerProgramToRuntimePass::lowerFunction(func::FuncOp func,
                                         RuntimeCallBuilder &rt) {
  if (func.getBody().getBlocks().size() != 1)
    return func.emitOpError() << "must have a single block, got "
                              << func.getBody().getBlocks().size();
  Block &entryBlock = func.getBody().front();

  // Weights: one id per name, all uses with the same local type.
  SmallVector<std::string> weightOrder = getProgramWeightOrder(func);
  llvm::StringMap<int64_t> weightIds;
  for (auto [id, name] : llvm::enumerate(weightOrder))
    weightIds[name] = id;
  llvm::StringMap<WeightOp> firstWeight;
  WalkResult weightCheck = func.walk([&](WeightOp weight) {
    auto [it, inserted] =
        firstWeight.try_emplace(weight.getName(), weight);
    if (!inserted &&
        it->second.getResult().getType() != weight.getResult().getType()) {
      weight.emitOpError() << "uses weight '" << weight.getName()
                           << "' with type " << weight.getResult().getType()
                           << " but an earlier use has type "
                           << it->second.getResult().getType()
                           << "; a weight has one local shard per device";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (weightCheck.wasInterrupted())
    return failure();

  // Stores of weights (training state) name the weight by its id.
  WalkResult assignCheck = func.walk([&](AssignOp assign) {
    auto weight = assign.getWeight().getDefiningOp<WeightOp>();
    if (!weight) {
      assign.emitOpError() << "stores no 'autopar.weight'";
      return WalkResult::interrupt();
    }
    if (weight.getResult().getType() != assign.getValue().getType()) {
      assign.emitOpError() << "stores a value of type "
                           << assign.getValue().getType()
                           << " into a weight loaded as "
                           << weight.getResult().getType();
      return WalkResult::interrupt();
    }
    assign->setAttr(kWeightIdAttrName,
                    IntegerAttr::get(IntegerType::get(func.getContext(), 64),
                                     weightIds.lookup(weight.getName())));
    return WalkResult::advance();
  });
  if (assignCheck.wasInterrupted())
    return failure();

  for (auto [index, argument] : llvm::enumerate(func.getArguments()))
    if (failed(RuntimeCallBuilder::checkTensorType(
            func, argument.getType(),
            ("argument #" + Twine(index)).str())))
      return failure();
  for (auto [index, type] : llvm::enumerate(func.getResultTypes()))
    if (failed(RuntimeCallBuilder::checkTensorType(
            func, type, ("result #" + Twine(index)).str())))
      return failure();

  // Arguments: each device reads its own block of every input.
  SmallVector<int64_t> grid;
  auto grids = func->getParentOfType<ModuleOp>().getOps<shard::GridOp>();
  if (!grids.empty())
    grid.assign((*grids.begin()).getShape().begin(),
                (*grids.begin()).getShape().end());
  OpBuilder b = OpBuilder::atBlockBegin(&entryBlock);
  for (auto [index, argument] : llvm::enumerate(func.getArguments())) {
    Location loc = argument.getLoc();
    auto type = cast<RankedTensorType>(argument.getType());
    FailureOr<SmallVector<int64_t>> layout = getBlockLayout(
        func, ("argument #" + Twine(index)).str(), type,
        func.getArgAttrOfType<ShardingAttr>(index, kShardingAttrName),
        func.getArgAttrOfType<TypeAttr>(index, kGlobalTypeAttrName), grid);
    if (failed(layout))
      return failure();
    auto [buffer, unranked] = rt.allocate(b, loc, type);
    Value layoutBuffer = rt.i64Buffer(b, loc, *layout);
    rt.call(b, loc, "autopar_rt_read_input", type.getElementType(),
            {RuntimeCallBuilder::i64Constant(b, loc, index), unranked,
             layoutBuffer});
    argument.replaceAllUsesWith(
        RuntimeCallBuilder::toTensor(b, loc, type, buffer));
  }

  // Resident weights: every weight the program never stores lives in a
  // global of the program that the runtime fills on the first step only.
  llvm::StringSet<> storedWeights;
  func.walk([&](AssignOp assign) {
    storedWeights.insert(
        assign.getWeight().getDefiningOp<WeightOp>().getName());
  });
  SymbolTable symbols(func->getParentOfType<ModuleOp>());
  llvm::StringMap<Value> residentTensors;
  for (auto [id, name] : llvm::enumerate(weightOrder)) {
    if (storedWeights.contains(name))
      continue;
    WeightOp first = firstWeight.lookup(name);
    Location loc = first.getLoc();
    auto type = first.getResult().getType();
    if (failed(RuntimeCallBuilder::checkTensorType(first, type, "result")))
      return failure();
    auto memrefType = MemRefType::get(type.getShape(), type.getElementType());
    OpBuilder moduleBuilder(func);
    auto global = memref::GlobalOp::create(
        moduleBuilder, loc, ("__autopar_weight_" + Twine(id)).str(),
        moduleBuilder.getStringAttr("private"), memrefType,
        moduleBuilder.getUnitAttr(), /*constant=*/false,
        moduleBuilder.getI64IntegerAttr(64));
    symbols.insert(global);
    Value buffer =
        memref::GetGlobalOp::create(b, loc, memrefType, global.getSymName());
    Value unranked = memref::CastOp::create(
        b, loc, UnrankedMemRefType::get(type.getElementType(), 0), buffer);
    rt.call(b, loc, "autopar_rt_resident_weight", type.getElementType(),
            {RuntimeCallBuilder::i64Constant(b, loc, id), unranked});
    residentTensors[name] = RuntimeCallBuilder::toTensor(b, loc, type, buffer);
  }
  // Replaced only now: `b` may be inserting before one of them.
  SmallVector<WeightOp> residentUses;
  func.walk([&](WeightOp weight) {
    if (residentTensors.count(weight.getName()))
      residentUses.push_back(weight);
  });
  for (WeightOp weight : residentUses) {
    weight.replaceAllUsesWith(residentTensors.lookup(weight.getName()));
    weight.erase();
  }

  // Body: stored weights and collectives.
  SmallVector<Operation *> ops;
  func.walk([&](Operation *op) {
    if (op != func.getOperation())
      ops.push_back(op);
  });
  for (Operation *op : ops)
    if (failed(lowerOp(op, rt, weightIds)))
      return failure();

  // Results: each block is written once, by the device of its replicas
  // whose coordinates on the grid axes that split nothing are all 0.
  auto returnOp = cast<func::ReturnOp>(entryBlock.getTerminator());
  b.setInsertionPoint(returnOp);
  for (auto [index, value] : llvm::enumerate(returnOp.getOperands())) {
    Location loc = returnOp.getLoc();
    FailureOr<SmallVector<int64_t>> layout = getBlockLayout(
        func, ("result #" + Twine(index)).str(),
        cast<RankedTensorType>(value.getType()),
        func.getResultAttrOfType<ShardingAttr>(index, kShardingAttrName),
        func.getResultAttrOfType<TypeAttr>(index, kGlobalTypeAttrName), grid);
    if (failed(layout))
      return failure();
    Value buffer = rt.toReadOnlyBuffer(b, loc, value);
    Value layoutBuffer = rt.i64Buffer(b, loc, *layout);
    rt.call(
        b, loc, "autopar_rt_write_output", getElementTypeOrSelf(value),
        {RuntimeCallBuilder::i64Constant(b, loc, index), buffer, layoutBuffer});
  }
  func::ReturnOp::create(b, returnOp.getLoc());
  returnOp.erase();

  entryBlock.eraseArguments(0, entryBlock.getNumArguments());
  func.setFunctionType(FunctionType::get(func.getContext(), {}, {}));
  func.removeArgAttrsAttr();
  func.removeResAttrsAttr();
  func.setPublic();
  return success();
}

void LowerProgramToRuntimePass::runOnOperation() {
  ModuleOp module = getOperation();
  auto func = module.lookupSymbol<func::FuncOp>(entry);
  if (!func) {
    module.emitError() << "no function @" << entry << " to lower";
    return signalPassFailure();
  }
  if (Operation *clash = module.lookupSymbol(kEntryName)) {
    clash->emitOpError() << "uses the symbol @" << kEntryName
                         << " reserved for the device program's entry point";
    return signalPassFailure();
  }

  int64_t calls = 0;
  RuntimeCallBuilder rt(module, calls);
  if (failed(lowerFunction(func, rt)))
    return signalPassFailure();
  if (Operation *conflict = rt.getConflict()) {
    conflict->emitOpError()
        << "clashes with a runtime function of a different type";
    return signalPassFailure();
  }
  SymbolTable::setSymbolName(func, kEntryName);
  numRuntimeCalls += calls;

  // mlir-translate rejects a leftover grid; nothing refers to it anymore.
  for (auto grid : llvm::make_early_inc_range(module.getOps<shard::GridOp>()))
    grid.erase();
  LLVM_DEBUG(llvm::dbgs() << "emitted " << calls << " runtime calls\n");
}
