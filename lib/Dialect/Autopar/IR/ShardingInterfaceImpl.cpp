//===- ShardingInterfaceImpl.cpp - upstream sharding rules of autopar ops -===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Every autopar op with a sharding rule (ShardingRuleInterface, declared in
// ODS) gets upstream `shard::ShardingInterface` built from that rule: loop
// iterator types and indexing maps (operands then results; a broadcast
// dimension maps to the constant 0). autopar's planner and partitioner read
// the rule through it, and upstream `sharding-propagation`/`shard-partition`
// can use the same ops.
//
//===----------------------------------------------------------------------===//

#include "autopar/Dialect/Autopar/IR/Autopar.h"

#include "mlir/Dialect/Shard/Interfaces/ShardingInterface.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterfaceImpl.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"

using namespace mlir;
using namespace mlir::autopar;
using utils::IteratorType;

namespace {

/// The rule an op declares in ODS (ShardingRuleInterface).
static LoopShardingRule getRuleOf(Operation *op) {
  return cast<ShardingRuleInterface>(op).getShardingRule();
}

/// The upstream interface, implemented from getRuleOf.
template <typename OpTy>
struct AutoparShardingModel
    : public shard::ShardingInterface::ExternalModel<AutoparShardingModel<OpTy>,
                                                     OpTy> {
  SmallVector<IteratorType> getLoopIteratorTypes(Operation *op) const {
    return getRuleOf(op).iterators;
  }

  SmallVector<shard::ReductionKind>
  getReductionLoopIteratorKinds(Operation *op) const {
    SmallVector<shard::ReductionKind> kinds;
    for (IteratorType it : getRuleOf(op).iterators)
      if (it == IteratorType::reduction)
        kinds.push_back(shard::ReductionKind::Sum);
    return kinds;
  }

  SmallVector<AffineMap> getIndexingMaps(Operation *op) const {
    return getRuleOf(op).maps;
  }

  /// Partition for upstream `shard-partition`: a clone on local types, then
  /// an all-reduce of a split reduction (upstream has no pending-sum state).
  LogicalResult partition(Operation *op, ArrayRef<Value> partitionedOperands,
                          ArrayRef<shard::Sharding> operandShardings,
                          ArrayRef<shard::Sharding> resultShardings,
                          IRMapping &partitionMap,
                          SymbolTableCollection &symbolTable,
                          OpBuilder &builder) const {
    LoopShardingRule rule = getRuleOf(op);
    shard::ShardingArray loopAxes =
        shard::getGridAxisAssignmentForLoopIterators(
            operandShardings, resultShardings, rule.iterators, rule.maps);
    SmallVector<shard::GridAxis> reductionAxes =
        shard::getReductionGridAxes(rule.iterators, loopAxes);
    if (!reductionAxes.empty()) {
      auto partialRule = dyn_cast<ShardingRuleInterface>(op);
      for (unsigned i = 0; partialRule && i < op->getNumOperands(); ++i)
        if (partialRule.isAdditiveOperand(i))
          return op->emitOpError()
                 << "with a split contraction and an added operand cannot be "
                    "partitioned by upstream shard-partition (it would add "
                    "operand "
                 << i << " on every device); use autopar-partition";
    }
    shard::partitionTriviallyShardableOperation(
        *op, partitionedOperands, operandShardings, resultShardings,
        partitionMap, symbolTable, builder);
    if (reductionAxes.empty())
      return success();
    Value local = partitionMap.lookup(op->getResult(0));
    auto reduced =
        shard::AllReduceOp::create(builder, op->getLoc(), local,
                                   resultShardings[0].getGridAttr().getValue(),
                                   reductionAxes, shard::ReductionKind::Sum);
    partitionMap.map(op->getResult(0), reduced.getResult());
    return success();
  }
};

} // namespace

namespace mlir::autopar {
/// Attaches the upstream sharding interface to `OpTy` when it declares a
/// sharding rule in ODS.
template <typename OpTy> static void attachIfRule(MLIRContext &ctx) {
  if constexpr (OpTy::template hasTrait<ShardingRuleInterface::Trait>())
    OpTy::template attachInterface<AutoparShardingModel<OpTy>>(ctx);
}

template <typename... OpTys> static void attachModels(MLIRContext &ctx) {
  (attachIfRule<OpTys>(ctx), ...);
}

void attachShardingInterfaceModels(MLIRContext &ctx) {
  attachModels<
#define GET_OP_LIST
#include "autopar/Dialect/Autopar/IR/AutoparOps.cpp.inc"
      >(ctx);
}
} // namespace mlir::autopar
