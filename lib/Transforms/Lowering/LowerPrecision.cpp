//===- LowerPrecision.cpp - bf16/f16 storage of a device program -*- C++
//-*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements autopar-lower-precision: the f32 weights and
// activations of a device program are stored in bf16 or f16, ops that only
// move data (and the collectives) move the lower type, and every other op
// computes in f32 between conversions. It also implements
// convertWeightPrecision, the driver's side of the weights' contract.
//
//===----------------------------------------------------------------------===//

#include "autopar/Transforms/Lowering/Passes.h"
#include "autopar/Transforms/Lowering/Precision.h"

#include "autopar/Dialect/Autopar/IR/Autopar.h"
#include "autopar/Transforms/Autodiff/MixedPrecision.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/StringSwitch.h"

#include <cstring>

namespace mlir::autopar {
#define GEN_PASS_DEF_LOWERPRECISIONPASS
#include "autopar/Transforms/Lowering/Passes.h.inc"
} // namespace mlir::autopar

using namespace mlir;
using namespace mlir::autopar;

std::optional<StoragePrecision>
mlir::autopar::parseStoragePrecision(StringRef name) {
  return llvm::StringSwitch<std::optional<StoragePrecision>>(name)
      .Case("f32", StoragePrecision::F32)
      .Case("bf16", StoragePrecision::BF16)
      .Case("f16", StoragePrecision::F16)
      .Default(std::nullopt);
}

StringRef mlir::autopar::stringifyStoragePrecision(StoragePrecision precision) {
  switch (precision) {
  case StoragePrecision::F32:
    return "f32";
  case StoragePrecision::BF16:
    return "bf16";
  case StoragePrecision::F16:
    return "f16";
  }
  llvm_unreachable("unknown storage precision");
}

Type mlir::autopar::getStorageElementType(MLIRContext *ctx,
                                          StoragePrecision precision) {
  switch (precision) {
  case StoragePrecision::F32:
    return Float32Type::get(ctx);
  case StoragePrecision::BF16:
    return BFloat16Type::get(ctx);
  case StoragePrecision::F16:
    return Float16Type::get(ctx);
  }
  llvm_unreachable("unknown storage precision");
}

void mlir::autopar::convertWeightPrecision(ArrayRef<char> f32Data,
                                           Type elementType,
                                           std::vector<char> &out) {
  assert(f32Data.size() % 4 == 0 && "f32 data holds whole elements");
  size_t count = f32Data.size() / 4;
  auto floatType = cast<FloatType>(elementType);
  const llvm::fltSemantics &semantics = floatType.getFloatSemantics();
  out.resize(count * 2);
  for (size_t i = 0; i < count; ++i) {
    float value;
    std::memcpy(&value, f32Data.data() + 4 * i, 4);
    llvm::APFloat converted(value);
    bool losesInfo = false;
    converted.convert(semantics, llvm::APFloat::rmNearestTiesToEven,
                      &losesInfo);
    uint16_t bits =
        static_cast<uint16_t>(converted.bitcastToAPInt().getZExtValue());
    std::memcpy(out.data() + 2 * i, &bits, 2);
  }
}

namespace {

bool isF32Tensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getElementType().isF32();
}

RankedTensorType withElementType(Type type, Type element) {
  return cast<RankedTensorType>(type).clone(element);
}

struct LowerPrecisionPass
    : public autopar::impl::LowerPrecisionPassBase<LowerPrecisionPass> {
  using Base::Base;

  void runOnOperation() override {
    std::optional<StoragePrecision> parsed = parseStoragePrecision(precision);
    if (!parsed) {
      getOperation().emitError()
          << "autopar-lower-precision: unknown precision '" << precision
          << "' (expected f32, bf16 or f16)";
      return signalPassFailure();
    }
    if (*parsed == StoragePrecision::F32)
      return;
    Type low = getStorageElementType(&getContext(), *parsed);
    Type f32 = Float32Type::get(&getContext());

    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      if (!func.getBody().hasOneBlock()) {
        func.emitError() << "autopar-lower-precision: '" << func.getName()
                         << "' has more than one block";
        return signalPassFailure();
      }
      if (failed(lowerFunction(func, low, f32)))
        return signalPassFailure();
    }
  }

  LogicalResult lowerFunction(func::FuncOp func, Type low, Type f32) {
    Block &body = func.getBody().front();
    OpBuilder b(func.getContext());
    llvm::StringSet<> assigned = getAssignedWeights(body);
    llvm::DenseSet<Operation *> master = getMasterRegion(body, assigned);

    // Graph inputs stay f32 at the boundary.
    b.setInsertionPointToStart(&body);
    for (BlockArgument arg : body.getArguments()) {
      if (!isF32Tensor(arg.getType()) || arg.use_empty())
        continue;
      auto cast = CastOp::create(b, arg.getLoc(),
                                 withElementType(arg.getType(), low), arg);
      arg.replaceAllUsesExcept(cast.getResult(), cast);
    }

    // Uses of the f32 `value` outside the master region read `low`.
    auto roundForOthers = [&](Value value, Location loc) {
      if (!isF32Tensor(value.getType()) ||
          llvm::all_of(value.getUsers(),
                       [&](Operation *user) { return master.contains(user); }))
        return;
      auto cast =
          CastOp::create(b, loc, withElementType(value.getType(), low), value);
      value.replaceUsesWithIf(cast.getResult(), [&](OpOperand &use) {
        return use.getOwner() != cast && !master.contains(use.getOwner());
      });
    };

    for (Operation &op : llvm::make_early_inc_range(body)) {
      if (op.getNumRegions() != 0) {
        return op.emitOpError()
               << "has regions, which autopar-lower-precision does not "
                  "convert";
      }
      if (auto weight = dyn_cast<WeightOp>(op)) {
        if (!isF32Tensor(weight.getType()))
          continue;
        if (assigned.contains(weight.getName())) {
          // A master weight or optimizer state: stored and updated in f32;
          // the forward and backward passes read a rounded copy.
          b.setInsertionPointAfter(weight);
          roundForOthers(weight.getResult(), weight.getLoc());
          ++numMasterWeights;
          continue;
        }
        weight.getResult().setType(withElementType(weight.getType(), low));
        if (auto global = weight->getAttrOfType<TypeAttr>(kGlobalTypeAttrName))
          weight->setAttr(kGlobalTypeAttrName, TypeAttr::get(withElementType(
                                                   global.getValue(), low)));
        ++numLoweredWeights;
        continue;
      }
      if (master.contains(&op)) {
        // The optimizer's region computes, moves and stores f32.
        b.setInsertionPoint(&op);
        for (OpOperand &operand : op.getOpOperands()) {
          Type type = operand.get().getType();
          if (isa<RankedTensorType>(type) && getElementTypeOrSelf(type) == low)
            operand.set(CastOp::create(
                b, op.getLoc(), withElementType(type, f32), operand.get()));
        }
        b.setInsertionPointAfter(&op);
        for (OpResult result : op.getResults())
          roundForOthers(result, op.getLoc());
        if (!isa<func::ReturnOp>(op))
          ++numMasterOps;
        continue;
      }
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        b.setInsertionPoint(ret);
        for (OpOperand &operand : ret->getOpOperands())
          if (isa<RankedTensorType>(operand.get().getType()) &&
              getElementTypeOrSelf(operand.get().getType()) == low)
            operand.set(CastOp::create(
                b, ret.getLoc(), withElementType(operand.get().getType(), f32),
                operand.get()));
        continue;
      }
      if (movesDataOnly(&op)) {
        // f32 operands (constants) are converted in.
        b.setInsertionPoint(&op);
        for (OpOperand &operand : op.getOpOperands())
          if (isF32Tensor(operand.get().getType()))
            operand.set(CastOp::create(
                b, op.getLoc(), withElementType(operand.get().getType(), low),
                operand.get()));
        for (OpResult result : op.getResults())
          if (isF32Tensor(result.getType()))
            result.setType(withElementType(result.getType(), low));
        continue;
      }
      // Constants stay f32 for the ops computing with them (rounding them
      // would only lose digits); ops moving data convert them in.
      if (isa<ConstantOp>(op))
        continue;
      // Computes in f32: lower-type operands are converted in, f32 results
      // rounded out.
      bool converted = false;
      b.setInsertionPoint(&op);
      for (OpOperand &operand : op.getOpOperands()) {
        Type type = operand.get().getType();
        if (!isa<RankedTensorType>(type) || getElementTypeOrSelf(type) != low)
          continue;
        operand.set(CastOp::create(b, op.getLoc(), withElementType(type, f32),
                                   operand.get()));
        converted = true;
      }
      b.setInsertionPointAfter(&op);
      for (OpResult result : op.getResults()) {
        if (!isF32Tensor(result.getType()) || result.use_empty())
          continue;
        auto cast = CastOp::create(
            b, op.getLoc(), withElementType(result.getType(), low), result);
        result.replaceAllUsesExcept(cast.getResult(), cast);
        converted = true;
      }
      if (converted)
        ++numComputeOps;
    }
    return success();
  }
};

} // namespace
