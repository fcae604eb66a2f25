//===- StageStep.cpp - a pipeline stage's forward over microbatches -------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements autopar-build-stage-step: after autopar-split-stages,
// each stage's @main (one microbatch, boundary tensors as arguments and
// results) becomes the forward half of the stage's training step over all
// microbatches, with the boundary tensors sent and received in the program
// (autopar.send, autopar.recv). autopar-differentiate then adds the backward
// half, whose boundary gradients travel back the same way.
//
//===----------------------------------------------------------------------===//

#include "autopar/Transforms/Autodiff/Markers.h"
#include "autopar/Transforms/Autodiff/MicrobatchDraws.h"
#include "autopar/Transforms/Autodiff/Trainable.h"
#include "autopar/Transforms/Passes.h"
#include "autopar/Transforms/Planning/StageSplit.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::autopar {
#define GEN_PASS_DEF_BUILDSTAGESTEPPASS
#include "autopar/Transforms/Passes.h.inc"
} // namespace mlir::autopar

using namespace mlir;
using namespace mlir::autopar;

namespace {

struct BuildStageStepPass
    : public mlir::autopar::impl::BuildStageStepPassBase<BuildStageStepPass> {
  using Base::Base;
  void runOnOperation() override;

private:
  LogicalResult buildStep(ModuleOp stage, int64_t index);
};

} // namespace

/// The integer `key` of port dictionary `port`, or -1.
static int64_t getPortInt(DictionaryAttr port, StringRef key) {
  auto value = port ? port.getAs<IntegerAttr>(key) : nullptr;
  return value ? value.getInt() : -1;
}

/// Gives microbatch `j` of `m` its block of the whole batch's draw
/// (getMicrobatchDrawDim): the offsets of block `j` along the dimension the
/// microbatches split, zeros for a draw of the whole shape.
static LogicalResult placeMicrobatchDraw(RandomUniformOp random, int64_t j,
                                         int64_t m) {
  if (!random.getWholeShape())
    return success();
  FailureOr<std::optional<int64_t>> split = getMicrobatchDrawDim(random, m);
  if (failed(split))
    return failure();
  ArrayRef<int64_t> shape = random.getResult().getType().getShape();
  SmallVector<int64_t> offsets(shape.size(), 0);
  if (*split)
    offsets[**split] = j * shape[**split];
  random.setWholeOffsetsAttr(
      DenseI64ArrayAttr::get(random.getContext(), offsets));
  return success();
}

LogicalResult BuildStageStepPass::buildStep(ModuleOp stage, int64_t index) {
  MLIRContext *ctx = &getContext();
  auto main = stage.lookupSymbol<func::FuncOp>("main");
  if (!main || !main.getBody().hasOneBlock())
    return stage.emitError()
           << "stage " << index << " needs a one-block function @main";
  int64_t m = microbatches;
  llvm::SmallDenseSet<int64_t> wholeInputs(whole.begin(), whole.end());

  // The new signature: per runtime input, one argument per microbatch (or
  // one read whole by every microbatch); the loss, if the stage holds it.
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  // Each keeps its input's location (its ONNX name, which plan files pin).
  SmallVector<Location> argLocs;
  // For each old argument: its new argument per microbatch (-1: received).
  SmallVector<SmallVector<int64_t>> argIndex;
  Builder b(ctx);
  for (unsigned i = 0; i < main.getNumArguments(); ++i) {
    auto port = main.getArgAttrOfType<DictionaryAttr>(i, kStageInputAttr);
    int64_t input = getPortInt(port, "input");
    if (!port || (input < 0 && getPortInt(port, "boundary") < 0))
      return main.emitError()
             << "argument " << i << " of stage " << index << " has no '"
             << kStageInputAttr << "' (run autopar-split-stages first)";
    argIndex.emplace_back();
    if (input < 0) {
      argIndex.back().assign(m, -1);
      continue;
    }
    for (int64_t j = 0; j < m; ++j) {
      if (j > 0 && wholeInputs.contains(input)) {
        argIndex.back().push_back(argIndex.back().front());
        continue;
      }
      argIndex.back().push_back(argTypes.size());
      argTypes.push_back(main.getArgument(i).getType());
      argLocs.push_back(main.getArgument(i).getLoc());
      SmallVector<NamedAttribute> fields = {
          b.getNamedAttr("input", b.getI64IntegerAttr(input))};
      if (!wholeInputs.contains(input))
        fields.push_back(b.getNamedAttr("microbatch", b.getI64IntegerAttr(j)));
      argAttrs.push_back(b.getDictionaryAttr(fields));
    }
  }
  auto ret = cast<func::ReturnOp>(main.getBody().front().getTerminator());
  SmallVector<Type> resultTypes;
  SmallVector<DictionaryAttr> resultAttrs;
  for (unsigned r = 0; r < main.getNumResults(); ++r) {
    auto port = main.getResultAttrOfType<DictionaryAttr>(r, kStageOutputAttr);
    if (!port)
      return main.emitError() << "result " << r << " of stage " << index
                              << " has no '" << kStageOutputAttr << "'";
    if (getPortInt(port, "output") < 0)
      continue;
    auto type = dyn_cast<RankedTensorType>(main.getResultTypes()[r]);
    if (!type || type.getNumElements() != 1 ||
        !isa<FloatType>(type.getElementType()))
      return main.emitError()
             << "output " << getPortInt(port, "output") << " of stage " << index
             << " has type " << main.getResultTypes()[r]
             << "; a stage's training step returns only the scalar loss "
                "(append the loss before the stage split)";
    resultTypes.push_back(type);
    resultAttrs.push_back(port);
  }

  // The new function, next to the old one.
  OpBuilder builder(main);
  auto step =
      func::FuncOp::create(builder, main.getLoc(), "main.step",
                           builder.getFunctionType(argTypes, resultTypes));
  Block *body = step.addEntryBlock();
  for (auto [arg, loc] : llvm::zip(body->getArguments(), argLocs))
    arg.setLoc(loc);
  builder.setInsertionPointToStart(body);
  SmallVector<Value> losses(resultTypes.size());
  for (int64_t j = 0; j < m; ++j) {
    IRMapping map;
    Attribute microbatch = builder.getI64IntegerAttr(j);
    auto tag = [&](int64_t boundary) -> FailureOr<int64_t> {
      int64_t value = boundary * m + j;
      if (value > 32767)
        return main.emitError()
               << "boundary tensor " << boundary << " of microbatch " << j
               << " needs message tag " << value
               << ", above MPI's guaranteed 32767";
      return value;
    };
    for (unsigned i = 0; i < main.getNumArguments(); ++i) {
      if (argIndex[i][j] >= 0) {
        map.map(main.getArgument(i), step.getArgument(argIndex[i][j]));
        continue;
      }
      auto port = main.getArgAttrOfType<DictionaryAttr>(i, kStageInputAttr);
      FailureOr<int64_t> t = tag(getPortInt(port, "boundary"));
      if (failed(t))
        return failure();
      auto recv =
          RecvOp::create(builder, main.getArgument(i).getLoc(),
                         cast<RankedTensorType>(main.getArgument(i).getType()),
                         getPortInt(port, "from"), *t);
      recv->setAttr(kMicrobatchAttrName, microbatch);
      map.map(main.getArgument(i), recv.getResult());
    }
    for (Operation &op : main.getBody().front().without_terminator()) {
      Operation *copy = builder.clone(op, map);
      copy->setAttr(kMicrobatchAttrName, microbatch);
      if (auto random = dyn_cast<RandomUniformOp>(copy))
        if (failed(placeMicrobatchDraw(random, j, m)))
          return failure();
    }
    unsigned lossIndex = 0;
    for (unsigned r = 0; r < main.getNumResults(); ++r) {
      auto port = main.getResultAttrOfType<DictionaryAttr>(r, kStageOutputAttr);
      Value value = map.lookup(ret.getOperand(r));
      if (getPortInt(port, "output") >= 0) {
        Value &sum = losses[lossIndex++];
        sum = sum ? AddOp::create(builder, ret.getLoc(), value.getType(), sum,
                                  value)
                        .getResult()
                  : value;
        continue;
      }
      FailureOr<int64_t> t = tag(getPortInt(port, "boundary"));
      if (failed(t))
        return failure();
      auto to = port.getAs<ArrayAttr>("to");
      if (!to || to.empty())
        return main.emitError() << "boundary result " << r << " of stage "
                                << index << " is sent to no stage";
      for (Attribute peer : to) {
        auto send = SendOp::create(builder, ret.getLoc(), value.getType(),
                                   value, cast<IntegerAttr>(peer).getInt(), *t);
        send->setAttr(kMicrobatchAttrName, microbatch);
      }
    }
  }
  // The step's loss: the mean of the microbatches' losses (each the mean
  // over its own positions, and the microbatches are equal).
  for (Value &loss : losses) {
    if (m == 1)
      continue;
    auto type = cast<RankedTensorType>(loss.getType());
    Value scale = ConstantOp::create(
        builder, ret.getLoc(), type,
        DenseElementsAttr::get(
            type, FloatAttr::get(type.getElementType(), 1.0 / double(m))));
    loss = MulOp::create(builder, ret.getLoc(), type, loss, scale);
  }
  func::ReturnOp::create(builder, ret.getLoc(), losses);
  for (auto [i, attrs] : llvm::enumerate(argAttrs))
    step.setArgAttr(i, kStageInputAttr, attrs);
  for (auto [r, attrs] : llvm::enumerate(resultAttrs))
    step.setResultAttr(r, kStageOutputAttr, attrs);
  main.erase();
  step.setName("main");
  return success();
}

void BuildStageStepPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (microbatches < 1) {
    module.emitError() << "microbatches must be positive, got " << microbatches;
    return signalPassFailure();
  }
  SmallVector<ModuleOp> stages;
  for (ModuleOp stage : module.getBody()->getOps<ModuleOp>())
    if (stage->hasAttr(kStageIndexAttr))
      stages.push_back(stage);
  if (stages.empty()) {
    module.emitError() << "expected the stage modules of "
                          "autopar-split-stages";
    return signalPassFailure();
  }

  // A trainable weight read by several stages (tied embeddings) keeps one
  // value: each of those stages marks its loads, and autopar-differentiate
  // sums the stages' gradients (tags after the boundary tensors').
  llvm::StringSet<> frozen;
  for (const std::string &name : freeze)
    frozen.insert(name);
  llvm::MapVector<StringRef, SmallVector<int64_t>> readers;
  int64_t boundaries = 0;
  for (ModuleOp stage : stages) {
    int64_t index = stage->getAttrOfType<IntegerAttr>(kStageIndexAttr).getInt();
    auto main = stage.lookupSymbol<func::FuncOp>("main");
    if (main) {
      for (unsigned i = 0; i < main.getNumArguments(); ++i)
        if (auto port =
                main.getArgAttrOfType<DictionaryAttr>(i, kStageInputAttr))
          boundaries = std::max(boundaries, getPortInt(port, "boundary") + 1);
    }
    stage.walk([&](WeightOp w) {
      if (!isTrainableWeight(w, frozen))
        return;
      SmallVector<int64_t> &list = readers[w.getName()];
      if (list.empty() || list.back() != index)
        list.push_back(index);
    });
  }
  int64_t nextTag = boundaries * microbatches;
  MLIRContext *ctx = &getContext();
  Builder b(ctx);
  for (auto &[name, list] : readers) {
    if (list.size() < 2)
      continue;
    llvm::sort(list);
    if (nextTag > 32767) {
      module.emitError() << "the gradient of weight '" << name
                         << "', shared by several stages, needs message tag "
                         << nextTag << ", above MPI's guaranteed 32767";
      return signalPassFailure();
    }
    for (ModuleOp stage : stages) {
      int64_t index =
          stage->getAttrOfType<IntegerAttr>(kStageIndexAttr).getInt();
      DictionaryAttr tied = b.getDictionaryAttr(
          {b.getNamedAttr("stages", b.getDenseI64ArrayAttr(list)),
           b.getNamedAttr("self", b.getI64IntegerAttr(index)),
           b.getNamedAttr("tag", b.getI64IntegerAttr(nextTag))});
      stage.walk([&](WeightOp w) {
        if (w.getName() == name)
          w->setAttr(kTiedAttrName, tied);
      });
    }
    ++numTiedWeights;
    ++nextTag;
  }
  for (ModuleOp stage : stages)
    if (failed(buildStep(
            stage,
            stage->getAttrOfType<IntegerAttr>(kStageIndexAttr).getInt())))
      return signalPassFailure();
}
