//===- TestShardingRules.cpp - print each op's sharding rule --------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// `autopar-test-sharding-rules` emits, for every op that declares a sharding
// rule (ShardingRuleInterface), a remark with that rule, so that lit tests can
// check a rule from IR:
//
//   remark: sharding rule: loops = [parallel, parallel, reduction*],
//     maps = [(d0, d1, d2) -> (d0, d2), ...], additive = [2]
//
// A loop marked `*` must stay whole. An op without a rule gets "no sharding
// rule". Test-only (CIRCT style): no public header; autopar-opt registers it.
//
//===----------------------------------------------------------------------===//

#include "autopar/Dialect/Autopar/IR/Autopar.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::autopar;

namespace {

struct TestShardingRulesPass
    : public PassWrapper<TestShardingRulesPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestShardingRulesPass)

  StringRef getArgument() const final { return "autopar-test-sharding-rules"; }
  StringRef getDescription() const final {
    return "Emit each autopar op's sharding rule as a remark (test only)";
  }

  void runOnOperation() override {
    getOperation().walk([](Operation *op) {
      if (op->getDialect() == nullptr ||
          op->getDialect()->getNamespace() != "autopar")
        return;
      auto ruleOp = dyn_cast<ShardingRuleInterface>(op);
      if (!ruleOp) {
        op->emitRemark("no sharding rule");
        return;
      }
      LoopShardingRule rule = ruleOp.getShardingRule();
      std::string text;
      llvm::raw_string_ostream os(text);
      os << "sharding rule: loops = [";
      for (auto [i, it] : llvm::enumerate(rule.iterators)) {
        os << (i ? ", " : "") << utils::stringifyIteratorType(it);
        if (!ruleOp.isLoopSplittable(i))
          os << "*";
      }
      os << "], maps = [";
      for (auto [i, map] : llvm::enumerate(rule.maps))
        os << (i ? ", " : "") << map;
      os << "], additive = [";
      bool first = true;
      for (unsigned i = 0; i < op->getNumOperands(); ++i)
        if (ruleOp.isAdditiveOperand(i)) {
          os << (first ? "" : ", ") << i;
          first = false;
        }
      os << "]";
      op->emitRemark(text);
    });
  }
};

} // namespace

namespace mlir::autopar::test {
void registerTestShardingRulesPass() {
  PassRegistration<TestShardingRulesPass>();
}
} // namespace mlir::autopar::test
