//===- TrainingLoss.cpp - a loss appended for training plans --------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The losses are built from ONNX-level ops whose sharding rules the planner
// already knows, so a loss is planned like any other part of the graph:
//   cross_entropy: log_softmax(logits) * onehot(labels), summed over all
//     elements and scaled by -1/positions (onehot = cast(equal(labels
//     reshaped to [..., 1], iota [V])));
//   mse: (output - target)^2 summed over all elements, scaled by
//     1/elements.
//
//===----------------------------------------------------------------------===//

#include "autopar/Transforms/Planning/TrainingLoss.h"

#include "autopar/Dialect/Autopar/IR/Autopar.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringSwitch.h"

#include <numeric>

using namespace mlir;
using namespace mlir::autopar;

StringRef mlir::autopar::stringifyLossKind(LossKind kind) {
  switch (kind) {
  case LossKind::Output:
    return "output";
  case LossKind::CrossEntropy:
    return "cross_entropy";
  case LossKind::MeanSquaredError:
    return "mse";
  }
  llvm_unreachable("unknown loss");
}

std::optional<LossKind> mlir::autopar::symbolizeLossKind(StringRef name) {
  return llvm::StringSwitch<std::optional<LossKind>>(name)
      .Case("output", LossKind::Output)
      .Case("cross_entropy", LossKind::CrossEntropy)
      .Case("mse", LossKind::MeanSquaredError)
      .Default(std::nullopt);
}

/// Every dimension of a rank-`rank` tensor.
static SmallVector<int64_t> allAxes(int64_t rank) {
  SmallVector<int64_t> axes(rank);
  std::iota(axes.begin(), axes.end(), 0);
  return axes;
}

LogicalResult mlir::autopar::appendTrainingLoss(ModuleOp module,
                                                LossKind kind) {
  auto func = module.lookupSymbol<func::FuncOp>("main");
  if (!func)
    return module.emitError() << "expected a function @main to append a "
                                 "loss to";
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  MLIRContext *ctx = module.getContext();
  StringRef name = stringifyLossKind(kind);
  if (ret.getNumOperands() == 0)
    return emitError(func.getLoc())
           << "the model has no output to take a '" << name << "' loss of";
  if (kind != LossKind::CrossEntropy && ret.getNumOperands() != 1)
    return emitError(func.getLoc())
           << "a '" << name << "' loss needs a single model output, got "
           << ret.getNumOperands();
  Value output = ret.getOperand(ret.getNumOperands() - 1);
  auto type = dyn_cast<RankedTensorType>(output.getType());
  if (!type || !type.hasStaticShape())
    return emitError(func.getLoc())
           << "the output of a '" << name
           << "' loss must be a statically shaped tensor";
  auto loc = [&](StringRef op) {
    std::string node = ("loss." + op).str();
    return getOnnxNodeLoc(ctx, node, {node});
  };
  OpBuilder b(ret);
  Type f32 = b.getF32Type();
  auto scalar = RankedTensorType::get({}, type.getElementType());
  // A scalar constant of the output's element type.
  auto scaleBy = [&](double factor) -> Value {
    DenseElementsAttr value =
        type.getElementType() == f32
            ? DenseElementsAttr::get(scalar, float(factor))
            : DenseElementsAttr::get(
                  scalar, FloatAttr::get(type.getElementType(), factor));
    return ConstantOp::create(b, loc("scale"), scalar, value);
  };
  Value loss;
  switch (kind) {
  case LossKind::Output:
    if (type.getNumElements() != 1)
      return emitError(func.getLoc())
             << "an 'output' loss needs a scalar model output, got " << type;
    loss = output;
    break;
  case LossKind::CrossEntropy: {
    if (!isa<FloatType>(type.getElementType()) || type.getRank() < 2)
      return emitError(func.getLoc())
             << "a 'cross_entropy' loss needs float logits "
                "[..., V] as the last output, got "
             << type;
    int64_t rank = type.getRank();
    int64_t vocab = type.getDimSize(rank - 1);
    auto labelsType =
        RankedTensorType::get(type.getShape().drop_back(), b.getI64Type());
    if (failed(func.insertArgument(func.getNumArguments(), labelsType, {},
                                   getOnnxTensorLoc(ctx, "labels"))))
      return failure();
    BlockArgument labels = func.getArguments().back();
    SmallVector<int64_t> columnShape(type.getShape().drop_back());
    columnShape.push_back(1);
    Value column = ReshapeOp::create(
        b, loc("labels_column"),
        RankedTensorType::get(columnShape, b.getI64Type()), labels);
    SmallVector<int64_t> iota(vocab);
    std::iota(iota.begin(), iota.end(), 0);
    auto iotaType = RankedTensorType::get({vocab}, b.getI64Type());
    Value classes = ConstantOp::create(
        b, loc("classes"), iotaType,
        DenseElementsAttr::get(iotaType, ArrayRef<int64_t>(iota)));
    Value hit = EqualOp::create(b, loc("onehot_mask"),
                                type.clone(b.getI1Type()), column, classes);
    Value onehot = CastOp::create(b, loc("onehot"), type, hit);
    Value logProbs = LogSoftmaxOp::create(b, loc("log_softmax"), type, output,
                                          b.getI64IntegerAttr(rank - 1));
    Value picked = MulOp::create(b, loc("picked"), type, logProbs, onehot);
    Value total = ReduceSumOp::create(b, loc("sum"), scalar, picked,
                                      b.getDenseI64ArrayAttr(allAxes(rank)),
                                      b.getBoolAttr(false));
    double positions = double(type.getNumElements() / vocab);
    loss =
        MulOp::create(b, loc("mean"), scalar, total, scaleBy(-1.0 / positions));
    break;
  }
  case LossKind::MeanSquaredError: {
    if (!isa<FloatType>(type.getElementType()))
      return emitError(func.getLoc())
             << "an 'mse' loss needs a float output, got " << type;
    if (failed(func.insertArgument(func.getNumArguments(), type, {},
                                   getOnnxTensorLoc(ctx, "target"))))
      return failure();
    BlockArgument target = func.getArguments().back();
    Value diff = SubOp::create(b, loc("diff"), type, output, target);
    Value square = MulOp::create(b, loc("square"), type, diff, diff);
    // A sum scaled afterwards, not reduce_mean: a split sum stays a pending
    // sum, so the squares need not be gathered.
    Value total = ReduceSumOp::create(
        b, loc("sum"), scalar, square,
        b.getDenseI64ArrayAttr(allAxes(type.getRank())), b.getBoolAttr(false));
    loss = MulOp::create(b, loc("mean"), scalar, total,
                         scaleBy(1.0 / double(type.getNumElements())));
    break;
  }
  }
  ret->setOperands(loss);
  func.removeResAttrsAttr();
  func.setType(FunctionType::get(ctx, func.getBody().front().getArgumentTypes(),
                                 {loss.getType()}));
  return success();
}
