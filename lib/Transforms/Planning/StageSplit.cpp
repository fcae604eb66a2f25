//===- StageSplit.cpp - pipeline stages as programs of their own ----------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements the cut points and stage extraction shared with the
// pipeline planner, the executed stage split (splitPipelineStages) and its
// pass, `autopar-split-stages`.
//
//===----------------------------------------------------------------------===//

#include "autopar/Transforms/Planning/StageSplit.h"
#include "autopar/Transforms/Passes.h"

#include "BlockFolding.h"
#include "StageExtraction.h"

#include "autopar/Dialect/Autopar/IR/Autopar.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::autopar {
#define GEN_PASS_DEF_SPLITSTAGESPASS
#include "autopar/Transforms/Passes.h.inc"
} // namespace mlir::autopar

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::planning;

//===----------------------------------------------------------------------===//
// Shared with the planner
//===----------------------------------------------------------------------===//

FailureOr<CutPoints> planning::findCutPoints(StrategyGraph &graph,
                                             unsigned stages, Location loc) {
  std::vector<FoldedBlock> found = foldRepeatedBlocks(graph, /*share=*/false);
  const FoldedBlock *main = nullptr;
  for (const FoldedBlock &b : found)
    if (!main || b.repeats > main->repeats ||
        (b.repeats == main->repeats && b.period > main->period))
      main = &b;
  if (!main || main->repeats < stages)
    return emitError(loc) << "pipeline stages are cut between repeated "
                             "blocks, and the model has "
                          << (main ? main->repeats : 0)
                          << " repeated blocks for " << stages << " stages";
  return CutPoints{main->start, main->period, main->repeats,
                   unsigned(graph.sequence.size())};
}

OwningOpRef<ModuleOp> planning::extractStageModule(
    func::FuncOp func, ArrayRef<Operation *> ops, ArrayRef<Value> exports,
    SmallVectorImpl<Value> &external, SmallVectorImpl<Value> &results) {
  MLIRContext *ctx = func.getContext();
  Location loc = func.getLoc();
  DenseSet<Operation *> inStage(ops.begin(), ops.end());
  // Arguments: operands produced outside the stage by something other than
  // a weight or a constant, in order of first use.
  size_t firstExternal = external.size();
  DenseSet<Value> seen;
  SmallVector<Operation *> copied;
  DenseSet<Operation *> copiedSet;
  for (Operation *op : ops) {
    op->walk([&](Operation *nested) {
      for (Value v : nested->getOperands()) {
        Operation *def = v.getDefiningOp();
        if (def && inStage.contains(def))
          continue;
        if (def && def->getParentOp() != func.getOperation())
          continue; // defined inside a region of the op itself
        if (def && isa<WeightOp, ConstantOp>(def)) {
          if (copiedSet.insert(def).second)
            copied.push_back(def);
          continue;
        }
        if (seen.insert(v).second)
          external.push_back(v);
      }
    });
  }
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  size_t firstResult = results.size();
  for (Value v : ret.getOperands())
    if (Operation *def = v.getDefiningOp(); def && inStage.contains(def))
      results.push_back(v);
  results.append(exports.begin(), exports.end());
  ArrayRef<Value> args = ArrayRef<Value>(external).drop_front(firstExternal);
  ArrayRef<Value> returned = ArrayRef<Value>(results).drop_front(firstResult);

  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  for (NamedAttribute attr :
       func->getParentOfType<ModuleOp>()->getDiscardableAttrs())
    (*module)->setAttr(attr.getName(), attr.getValue());
  OpBuilder b = OpBuilder::atBlockBegin(module->getBody());
  SmallVector<Type> argTypes, resultTypes;
  for (Value v : args)
    argTypes.push_back(v.getType());
  for (Value v : returned)
    resultTypes.push_back(v.getType());
  auto stage = func::FuncOp::create(b, loc, "main",
                                    b.getFunctionType(argTypes, resultTypes));
  Block *body = stage.addEntryBlock();
  IRMapping map;
  for (auto [i, v] : llvm::enumerate(args)) {
    std::string name = getOnnxValueName(v);
    BlockArgument arg = body->getArgument(i);
    if (!name.empty())
      arg.setLoc(NameLoc::get(StringAttr::get(ctx, name)));
    map.map(v, arg);
  }
  b.setInsertionPointToStart(body);
  for (Operation *op : copied)
    b.clone(*op, map);
  for (Operation *op : ops)
    b.clone(*op, map);
  SmallVector<Value> mapped;
  for (Value v : returned)
    mapped.push_back(map.lookup(v));
  func::ReturnOp::create(b, loc, mapped);
  return module;
}

//===----------------------------------------------------------------------===//
// The executed stage split
//===----------------------------------------------------------------------===//

FailureOr<unsigned> mlir::autopar::countPipelineBlocks(ModuleOp module) {
  auto func = module.lookupSymbol<func::FuncOp>("main");
  if (!func)
    return module.emitError() << "expected a function @main to split";
  AutoPlanOptions options;
  options.gridShape = {1};
  StrategyGraph graph(func, options);
  if (failed(graph.build()))
    return failure();
  unsigned most = 0;
  for (const FoldedBlock &b : foldRepeatedBlocks(graph, /*share=*/false))
    most = std::max(most, b.repeats);
  return most;
}

SmallVector<unsigned> mlir::autopar::evenBlockSplit(unsigned blocks,
                                                    unsigned stages) {
  SmallVector<unsigned> counts(stages, stages ? blocks / stages : 0);
  for (unsigned s = 0; stages && s < blocks % stages; ++s)
    ++counts[stages - 1 - s];
  return counts;
}

LogicalResult
mlir::autopar::splitPipelineStages(ModuleOp module,
                                   ArrayRef<unsigned> blocksPerStage) {
  auto func = module.lookupSymbol<func::FuncOp>("main");
  if (!func)
    return module.emitError() << "expected a function @main to split";
  Location loc = func.getLoc();
  unsigned p = blocksPerStage.size();
  if (p < 2)
    return emitError(loc) << "a pipeline needs at least 2 stages, got " << p;
  AutoPlanOptions options;
  options.gridShape = {1};
  StrategyGraph graph(func, options);
  if (failed(graph.build()))
    return failure();
  FailureOr<CutPoints> cuts = findCutPoints(graph, p, loc);
  if (failed(cuts))
    return failure();
  unsigned total = 0;
  for (unsigned k : blocksPerStage) {
    if (k == 0)
      return emitError(loc) << "a pipeline stage holds at least one repeated "
                               "block, got 0";
    total += k;
  }
  if (total != cuts->blocks)
    return emitError(loc) << "the stages hold " << total
                          << " repeated blocks, the model has " << cuts->blocks;

  // The ops of each stage, and the stage of each compute op.
  std::vector<SmallVector<Operation *>> stageOps(p);
  DenseMap<Operation *, unsigned> stageOf;
  unsigned nextBlock = 0;
  for (unsigned s = 0; s < p; ++s) {
    unsigned begin = s == 0 ? 0 : cuts->blockBegin(nextBlock);
    nextBlock += blocksPerStage[s];
    unsigned end = s + 1 == p ? cuts->numOps : cuts->blockBegin(nextBlock);
    for (unsigned pos = begin; pos < end; ++pos) {
      Operation *op = graph.nodes[graph.sequence[pos]].op;
      stageOps[s].push_back(op);
      stageOf[op] = s;
    }
  }

  // Boundary tensors: results used by ops of later stages, numbered in
  // program order.
  Block &body = func.getBody().front();
  struct Boundary {
    unsigned from;
    SmallVector<unsigned> to;
  };
  llvm::MapVector<Value, Boundary> boundaries;
  std::vector<SmallVector<Value>> exports(p);
  for (unsigned s = 0; s < p; ++s)
    for (Operation *op : stageOps[s])
      for (Value result : op->getResults()) {
        Boundary boundary{s, {}};
        for (OpOperand &use : result.getUses()) {
          Operation *user = body.findAncestorOpInBlock(*use.getOwner());
          if (!user || isa<func::ReturnOp>(user))
            continue;
          auto it = stageOf.find(user);
          if (it == stageOf.end())
            return user->emitError()
                   << "op outside every pipeline stage reads a stage's result";
          if (it->second < s)
            return user->emitError()
                   << "stage " << it->second << " reads a result of stage " << s
                   << ": stages must follow program order";
          if (it->second != s && !llvm::is_contained(boundary.to, it->second))
            boundary.to.push_back(it->second);
        }
        if (boundary.to.empty())
          continue;
        llvm::sort(boundary.to);
        exports[s].push_back(result);
        boundaries.insert({result, boundary});
      }
  DenseMap<Value, unsigned> boundaryId;
  for (auto [i, entry] : llvm::enumerate(boundaries))
    boundaryId[entry.first] = i;

  MLIRContext *ctx = module.getContext();
  Builder b(ctx);
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  SmallVector<OwningOpRef<ModuleOp>> stages;
  for (unsigned s = 0; s < p; ++s) {
    SmallVector<Value> external, results;
    OwningOpRef<ModuleOp> stage =
        extractStageModule(func, stageOps[s], exports[s], external, results);
    auto stageMain = stage->lookupSymbol<func::FuncOp>("main");
    for (auto [i, v] : llvm::enumerate(external)) {
      NamedAttrList source;
      if (auto arg = dyn_cast<BlockArgument>(v)) {
        source.append("input", b.getI64IntegerAttr(arg.getArgNumber()));
      } else {
        auto it = boundaryId.find(v);
        if (it == boundaryId.end())
          return emitError(v.getLoc())
                 << "stage " << s << " reads a value no stage produces";
        source.append("boundary", b.getI64IntegerAttr(it->second));
        source.append("from", b.getI64IntegerAttr(boundaries[v].from));
      }
      stageMain.setArgAttr(i, kStageInputAttr, source.getDictionary(ctx));
    }
    unsigned numOutputs = results.size() - exports[s].size();
    for (auto [i, v] : llvm::enumerate(results)) {
      NamedAttrList sink;
      if (i < numOutputs) {
        // The first return operand equal to v that no earlier result took.
        unsigned index = 0;
        for (OpOperand &operand : ret->getOpOperands())
          if (operand.get() == v) {
            index = operand.getOperandNumber();
            bool taken = false;
            for (unsigned j = 0; j < i; ++j)
              if (results[j] == v)
                taken = true;
            if (!taken)
              break;
          }
        sink.append("output", b.getI64IntegerAttr(index));
      } else {
        const Boundary &boundary = boundaries[v];
        SmallVector<int64_t> to(boundary.to.begin(), boundary.to.end());
        sink.append("boundary", b.getI64IntegerAttr(boundaryId[v]));
        sink.append("to", b.getI64ArrayAttr(to));
      }
      stageMain.setResultAttr(i, kStageOutputAttr, sink.getDictionary(ctx));
    }
    stages.push_back(std::move(stage));
  }
  // Every model output must come from a stage (not straight from an input).
  for (OpOperand &operand : ret->getOpOperands())
    if (!operand.get().getDefiningOp() ||
        !stageOf.count(operand.get().getDefiningOp()))
      return ret.emitError() << "output " << operand.getOperandNumber()
                             << " is not computed by any pipeline stage";

  func.erase();
  OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
  for (auto [s, stage] : llvm::enumerate(stages)) {
    auto nested = ModuleOp::create(builder, loc, ("stage" + Twine(s)).str());
    nested->setAttr(kStageIndexAttr, builder.getI64IntegerAttr(s));
    for (NamedAttribute attr : (*stage)->getDiscardableAttrs())
      nested->setAttr(attr.getName(), attr.getValue());
    nested.getBody()->getOperations().splice(nested.getBody()->begin(),
                                             stage->getBody()->getOperations());
  }
  return success();
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

namespace {
struct SplitStagesPass
    : public mlir::autopar::impl::SplitStagesPassBase<SplitStagesPass> {
  using Base::Base;
  void runOnOperation() override;
};
} // namespace

void SplitStagesPass::runOnOperation() {
  ModuleOp module = getOperation();
  SmallVector<unsigned> counts(blocks.begin(), blocks.end());
  if (counts.empty()) {
    if (stages < 2) {
      module.emitError() << "autopar-split-stages needs stages=P (P >= 2) or "
                            "blocks=K0,K1,...";
      return signalPassFailure();
    }
    FailureOr<unsigned> numBlocks = countPipelineBlocks(module);
    if (failed(numBlocks))
      return signalPassFailure();
    if (*numBlocks < stages) {
      module.lookupSymbol("main")->emitError()
          << "pipeline stages are cut between repeated blocks, and the model "
             "has "
          << *numBlocks << " repeated blocks for " << unsigned(stages)
          << " stages";
      return signalPassFailure();
    }
    counts = evenBlockSplit(*numBlocks, stages);
  } else if (stages != 0 && stages != counts.size()) {
    module.emitError() << "stages=" << unsigned(stages) << " but blocks= names "
                       << counts.size() << " stages";
    return signalPassFailure();
  }
  if (failed(splitPipelineStages(module, counts)))
    signalPassFailure();
}
