//===- Differentiate.cpp - one training step from a forward loss ----------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements autopar-differentiate: reverse-mode differentiation of
// @main's scalar loss with respect to the trainable weights through each
// op's GradientOpInterface, followed by the optimizer update of every
// trainable weight (autopar.assign). Only the ops on a path from a trainable
// weight to the loss are differentiated (activity analysis), so integer
// label handling and frozen buffers need no rule.
//
//===----------------------------------------------------------------------===//

#include "autopar/Transforms/Autodiff/Markers.h"
#include "autopar/Transforms/Autodiff/Trainable.h"
#include "autopar/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringSet.h"

#define DEBUG_TYPE "autopar-differentiate"

namespace mlir::autopar {
#define GEN_PASS_DEF_DIFFERENTIATEPASS
#include "autopar/Transforms/Passes.h.inc"
} // namespace mlir::autopar

using namespace mlir;
using namespace mlir::autopar;

namespace {

struct DifferentiatePass
    : public mlir::autopar::impl::DifferentiatePassBase<DifferentiatePass> {
  using Base::Base;
  void runOnOperation() override;

private:
  LogicalResult differentiate(func::FuncOp func);
};

/// Builds the optimizer ops at one insertion point.
struct UpdateBuilder {
  OpBuilder &b;
  Location loc;

  static RankedTensorType typeOf(Value v) {
    return cast<RankedTensorType>(v.getType());
  }
  Value scalar(Type element, double value) {
    auto type = RankedTensorType::get({}, element);
    return ConstantOp::create(
        b, loc, type,
        DenseElementsAttr::get(type, FloatAttr::get(element, value)));
  }
  template <typename OpTy> Value binary(Value lhs, Value rhs) {
    FailureOr<SmallVector<int64_t>> shape =
        broadcastShapes(typeOf(lhs).getShape(), typeOf(rhs).getShape());
    assert(succeeded(shape) && "optimizer operands broadcast");
    return OpTy::create(
        b, loc, RankedTensorType::get(*shape, typeOf(lhs).getElementType()),
        lhs, rhs);
  }
  Value mul(Value l, double r) {
    return binary<MulOp>(l, scalar(typeOf(l).getElementType(), r));
  }
};

} // namespace

/// Values that depend on a trainable weight (forward activity).
static llvm::DenseSet<Value> getVaryingValues(func::FuncOp func,
                                              ArrayRef<WeightOp> trainable) {
  llvm::DenseSet<Value> varying;
  for (WeightOp w : trainable)
    varying.insert(w.getResult());
  // A boundary tensor received from an earlier stage depends on that
  // stage's weights.
  func.walk([&](RecvOp recv) {
    if (isa<FloatType>(recv.getType().getElementType()))
      varying.insert(recv.getResult());
  });
  func.walk([&](Operation *op) {
    if (isa<WeightOp, RecvOp>(op))
      return;
    if (llvm::any_of(op->getOperands(),
                     [&](Value v) { return varying.contains(v); }))
      for (Value r : op->getResults())
        if (isa<FloatType>(getElementTypeOrSelf(r.getType())))
          varying.insert(r);
  });
  return varying;
}

/// Replaces the gradient of each weight marked `autopar.tied` (read by
/// several pipeline stages) by the sum of all those stages' gradients: this
/// stage sends its own to the others and receives theirs, every send before
/// every receive (in tag order), and sums them in stage order so that each
/// stage gets the same bits. A stage whose copy does not reach the loss
/// contributes zeros.
static LogicalResult sumTiedGradients(
    OpBuilder &b,
    const llvm::MapVector<StringRef, SmallVector<WeightOp>> &byName,
    llvm::MapVector<StringRef, Value> &weightGrads) {
  struct Tied {
    StringRef name;
    WeightOp weight;
    SmallVector<int64_t> stages;
    int64_t self;
    int64_t tag;
  };
  SmallVector<Tied> tied;
  for (auto &[name, ops] : byName) {
    WeightOp w = ops.front();
    auto attr = w->getAttrOfType<DictionaryAttr>(kTiedAttrName);
    if (!attr)
      continue;
    auto stages = attr.getAs<DenseI64ArrayAttr>("stages");
    auto self = attr.getAs<IntegerAttr>("self");
    auto tag = attr.getAs<IntegerAttr>("tag");
    if (!stages || !self || !tag ||
        !llvm::is_contained(stages.asArrayRef(), self.getInt()))
      return w.emitError() << "malformed '" << kTiedAttrName << "' " << attr
                           << " (expected {stages, self, tag} with self "
                              "among the stages)";
    tied.push_back({name, w, llvm::to_vector(stages.asArrayRef()),
                    self.getInt(), tag.getInt()});
  }
  llvm::sort(tied, [](const Tied &l, const Tied &r) { return l.tag < r.tag; });
  MLIRContext *ctx = b.getContext();
  for (Tied &t : tied) {
    Value &g = weightGrads[t.name];
    auto type = cast<RankedTensorType>(t.weight.getType());
    if (!g)
      g = ConstantOp::create(
          b, t.weight.getLoc(), type,
          DenseElementsAttr::get(type,
                                 FloatAttr::get(type.getElementType(), 0.0)));
    std::string node = ("tied." + t.name).str();
    Location loc = getOnnxNodeLoc(ctx, node, {node});
    if (Operation *zero = g.getDefiningOp<ConstantOp>())
      zero->setAttr(kGradientExchangeAttrName, UnitAttr::get(ctx));
    for (int64_t peer : t.stages)
      if (peer != t.self)
        SendOp::create(b, loc, type, g, peer, t.tag)
            ->setAttr(kGradientExchangeAttrName, UnitAttr::get(ctx));
  }
  for (Tied &t : tied) {
    Value &g = weightGrads[t.name];
    auto type = cast<RankedTensorType>(t.weight.getType());
    std::string node = ("tied." + t.name).str();
    Location loc = getOnnxNodeLoc(ctx, node, {node});
    Value sum;
    for (int64_t peer : t.stages) {
      Value part = g;
      if (peer != t.self) {
        auto recv = RecvOp::create(b, loc, type, peer, t.tag);
        recv->setAttr(kGradientExchangeAttrName, UnitAttr::get(ctx));
        part = recv;
      }
      if (sum) {
        auto add = AddOp::create(b, loc, type, sum, part);
        add->setAttr(kGradientExchangeAttrName, UnitAttr::get(ctx));
        sum = add;
      } else {
        sum = part;
      }
    }
    g = sum;
  }
  return success();
}

LogicalResult DifferentiatePass::differentiate(func::FuncOp func) {
  MLIRContext *ctx = &getContext();
  Block &body = func.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  // A pipeline stage before the last one has no loss: its backward pass is
  // seeded by the gradients its sends receive back.
  bool stage = !func.getOps<SendOp>().empty() || !func.getOps<RecvOp>().empty();
  if (ret.getNumOperands() != 1 && !(stage && ret.getNumOperands() == 0))
    return func.emitError() << "expected @main to return one scalar loss (run "
                               "autopar-append-loss first), got "
                            << ret.getNumOperands() << " results";
  Value loss = ret.getNumOperands() ? ret.getOperand(0) : Value();
  auto lossType = loss ? dyn_cast<RankedTensorType>(loss.getType()) : nullptr;
  if (loss && (!lossType || lossType.getNumElements() != 1 ||
               !isa<FloatType>(lossType.getElementType())))
    return func.emitError() << "expected @main to return a scalar float "
                               "loss, got "
                            << loss.getType();

  bool adam;
  if (optimizer == "sgd")
    adam = false;
  else if (optimizer == "adam")
    adam = true;
  else
    return func.emitError()
           << "unknown optimizer '" << optimizer << "', expected sgd or adam";

  // Trainable weights, by name in program order (a name may be loaded by
  // several ops; their gradients add up).
  llvm::StringSet<> frozen;
  for (const std::string &name : freeze)
    frozen.insert(name);
  llvm::StringSet<> seenFrozen;
  llvm::MapVector<StringRef, SmallVector<WeightOp>> byName;
  SmallVector<WeightOp> trainable;
  func.walk([&](WeightOp w) {
    if (frozen.contains(w.getName()))
      seenFrozen.insert(w.getName());
    if (!isTrainableWeight(w, frozen))
      return;
    byName[w.getName()].push_back(w);
    trainable.push_back(w);
  });
  for (const std::string &name : freeze)
    if (!seenFrozen.contains(name))
      return func.emitError()
             << "--freeze: the model has no weight named '" << name << "'";
  if (trainable.empty() && !stage)
    return func.emitError() << "the model has no trainable weight (float "
                               "initializers of rank >= 1 not frozen)";

  llvm::DenseSet<Value> varying = getVaryingValues(func, trainable);
  if (loss && !varying.contains(loss))
    return func.emitError() << "the loss does not depend on any trainable "
                               "weight";

  SmallVector<Operation *> forward;
  for (Operation &op : body.without_terminator())
    forward.push_back(&op);

  OpBuilder b(ret);
  auto lossLoc = getOnnxNodeLoc(ctx, "grad.loss", {"grad.loss"});
  DenseMap<Value, Value> grads;
  auto accumulate = [&](Value v, Value g) {
    auto [it, inserted] = grads.try_emplace(v, g);
    if (inserted)
      return;
    Location loc = g.getLoc();
    it->second = AddOp::create(b, loc, cast<RankedTensorType>(v.getType()),
                               it->second, g);
  };
  // Where the backward pass starts: the seed of the loss, or (a stage
  // without the loss) the first op built below.
  Operation *firstBackward = nullptr;
  if (loss) {
    grads[loss] = ConstantOp::create(
        b, lossLoc, lossType,
        DenseElementsAttr::get(lossType,
                               FloatAttr::get(lossType.getElementType(), 1.0)));
    firstBackward = grads[loss].getDefiningOp();
  }
  Operation *lastForward = ret->getPrevNode();

  for (Operation *op : llvm::reverse(forward)) {
    if (isa<WeightOp>(op))
      continue;
    SmallVector<Value> resultGrads;
    bool any = false;
    for (Value r : op->getResults()) {
      resultGrads.push_back(grads.lookup(r));
      any |= bool(resultGrads.back());
    }
    SmallVector<bool> wanted;
    for (Value v : op->getOperands())
      wanted.push_back(varying.contains(v));
    // A send seeds its operand's gradient (received back from the other
    // stage); a float receive always answers with its result's gradient.
    bool seed = isa<SendOp>(op) && wanted[0];
    bool answer = isa<RecvOp>(op) && varying.contains(op->getResult(0));
    if (!any && !seed && !answer)
      continue;
    if (!answer && llvm::none_of(wanted, [](bool w) { return w; }))
      continue;
    auto rule = dyn_cast<GradientOpInterface>(op);
    if (!rule) {
      std::string node = getOnnxNodeName(op);
      InFlightDiagnostic diag = op->emitError();
      if (!node.empty())
        diag << "node '" << node << "': ";
      return diag << "op '" << op->getName()
                  << "' has no gradient rule (it lies between a trainable "
                     "weight and the loss)";
    }
    Operation *before = ret->getPrevNode();
    SmallVector<Value> operandGrads;
    if (failed(rule.buildGradients(b, resultGrads, wanted, operandGrads)))
      return failure();
    for (auto [i, g] : llvm::enumerate(operandGrads))
      if (g && wanted[i])
        accumulate(op->getOperand(i), g);
    // The vector-Jacobian product of a microbatch's op belongs to that
    // microbatch's backward pass.
    if (Attribute microbatch = op->getAttr(kMicrobatchAttrName))
      for (Operation *built = before->getNextNode(); built != ret;
           built = built->getNextNode()) {
        built->setAttr(kMicrobatchAttrName, microbatch);
        built->setAttr(kBackwardAttrName, UnitAttr::get(ctx));
      }
  }
  if (!firstBackward)
    firstBackward = lastForward ? lastForward->getNextNode() : &body.front();

  // The optimizer: one update per trainable weight name.
  UpdateBuilder ub{b, func.getLoc()};
  Value stepNext, bias1, bias2;
  Type f32 = b.getF32Type();
  if (adam) {
    ub.loc = getOnnxNodeLoc(ctx, "adam.step", {"adam.step"});
    auto stepType = RankedTensorType::get({1}, f32);
    b.setInsertionPointToStart(&body);
    auto step = WeightOp::create(b, ub.loc, stepType, "adam.step");
    step->setAttr(kZeroInitAttrName, UnitAttr::get(ctx));
    b.setInsertionPoint(ret);
    stepNext = ub.binary<AddOp>(step, ub.scalar(f32, 1.0));
    AssignOp::create(b, ub.loc, stepType, step, stepNext);
    auto one = ub.scalar(f32, 1.0);
    bias1 =
        ub.binary<SubOp>(one, ub.binary<PowOp>(ub.scalar(f32, 0.9), stepNext));
    bias2 = ub.binary<SubOp>(one,
                             ub.binary<PowOp>(ub.scalar(f32, 0.999), stepNext));
  }
  // Each weight's gradient, summed over its loads.
  llvm::MapVector<StringRef, Value> weightGrads;
  for (auto &[name, ops] : byName) {
    Value g;
    for (WeightOp w : ops)
      if (Value gw = grads.lookup(w.getResult()))
        g = g ? Value(AddOp::create(b, gw.getLoc(), w.getType(), g, gw)) : gw;
    weightGrads[name] = g;
  }
  if (failed(sumTiedGradients(b, byName, weightGrads)))
    return failure();

  int64_t updated = 0;
  for (auto &[name, ops] : byName) {
    Value g = weightGrads[name];
    if (!g)
      continue; // No path to the loss: nothing to update.
    ++updated;
    Operation *beforeUpdate = ret->getPrevNode();
    WeightOp w = ops.front();
    auto type = cast<RankedTensorType>(w.getType());
    Type element = type.getElementType();
    std::string node = ("update." + name).str();
    ub.loc = getOnnxNodeLoc(ctx, node, {node});
    Value lr = ub.scalar(element, learningRate);
    Value param = w.getResult();
    Value next;
    if (!adam) {
      if (weightDecay != 0.0)
        g = ub.binary<AddOp>(g, ub.mul(param, weightDecay));
      next = ub.binary<SubOp>(param, ub.binary<MulOp>(g, lr));
    } else {
      // Optimizer state next to the parameter's first load.
      auto state = [&](StringRef suffix) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointAfter(w);
        auto s = WeightOp::create(b, ub.loc, type, (name + suffix).str());
        s->setAttr(kZeroInitAttrName, UnitAttr::get(ctx));
        return s;
      };
      WeightOp m = state(".adam_m"), v = state(".adam_v");
      Value mNext = ub.binary<AddOp>(ub.mul(m, 0.9), ub.mul(g, 0.1));
      Value vNext = ub.binary<AddOp>(ub.mul(v, 0.999),
                                     ub.mul(ub.binary<MulOp>(g, g), 0.001));
      AssignOp::create(b, ub.loc, type, m, mNext);
      AssignOp::create(b, ub.loc, type, v, vNext);
      Value base = param;
      if (weightDecay != 0.0)
        base = ub.mul(param, 1.0 - learningRate * weightDecay);
      // denom = sqrt(v) / sqrt(1 - b2^t) + eps; w -= lr/(1 - b1^t) m/denom.
      Value denom = ub.binary<AddOp>(
          ub.binary<DivOp>(SqrtOp::create(b, ub.loc, type, vNext),
                           SqrtOp::create(b, ub.loc, bias2.getType(), bias2)),
          ub.scalar(element, 1e-8));
      Value stepSize = ub.binary<DivOp>(lr, bias1);
      next = ub.binary<SubOp>(
          base, ub.binary<MulOp>(ub.binary<DivOp>(mNext, denom), stepSize));
    }
    AssignOp::create(b, ub.loc, type, param, next);
    // Name the weight on every op of its update (the state loads were
    // created next to the weight's first load).
    auto nameAttr = b.getStringAttr(name);
    for (Operation *op = beforeUpdate ? beforeUpdate->getNextNode()
                                      : &body.front();
         op != ret.getOperation(); op = op->getNextNode())
      op->setAttr(kOptimizerUpdateAttrName, nameAttr);
    for (Operation *op = w->getNextNode(); op; op = op->getNextNode()) {
      auto state = dyn_cast<WeightOp>(op);
      if (!state || !state->hasAttr(kZeroInitAttrName) ||
          !state.getName().starts_with((name + ".adam_").str()))
        break;
      state->setAttr(kOptimizerUpdateAttrName, nameAttr);
    }
  }
  if (updated == 0 && !stage)
    return func.emitError() << "no trainable weight reaches the loss";

  // Random ops (dropout) draw new values each step: their Philox counter is
  // the step number, a zero-initialized int64 state incremented by the step.
  // Forward and backward read the same counter, so the gradient uses the
  // forward's mask (recomputed or stored).
  SmallVector<RandomUniformOp> randoms;
  func.walk([&](RandomUniformOp random) {
    if (!random.getCounter())
      randoms.push_back(random);
  });
  if (!randoms.empty()) {
    Location loc = getOnnxNodeLoc(ctx, "random.step", {"random.step"});
    auto counterType = RankedTensorType::get({1}, b.getI64Type());
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&body);
    auto counter = WeightOp::create(b, loc, counterType, "random.step");
    counter->setAttr(kZeroInitAttrName, UnitAttr::get(ctx));
    for (RandomUniformOp random : randoms)
      random.getCounterMutable().assign(counter.getResult());
    b.setInsertionPoint(ret);
    Value one = ConstantOp::create(
        b, loc, counterType,
        DenseElementsAttr::get(counterType, b.getI64IntegerAttr(1)));
    Value next = AddOp::create(b, loc, counterType, counter.getResult(), one);
    AssignOp::create(b, loc, counterType, counter, next);
  }
  numTrainable += updated;

  // Drop what the rules built but nothing reads.
  SmallVector<Operation *> built;
  for (Operation *op = firstBackward; op && op != ret.getOperation();
       op = op->getNextNode())
    built.push_back(op);
  for (Operation *op : llvm::reverse(built))
    if (op->use_empty() && isPure(op))
      op->erase();
    else
      ++numBackwardOps;
  return success();
}

void DifferentiatePass::runOnOperation() {
  auto func = getOperation().lookupSymbol<func::FuncOp>("main");
  if (!func) {
    getOperation().emitError() << "expected a function @main to "
                                  "differentiate";
    return signalPassFailure();
  }
  if (!func.getBody().hasOneBlock()) {
    func.emitError() << "expected @main to have one block";
    return signalPassFailure();
  }
  if (failed(differentiate(func)))
    signalPassFailure();
}
