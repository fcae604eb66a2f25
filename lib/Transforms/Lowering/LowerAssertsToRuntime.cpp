//===- LowerAssertsToRuntime.cpp - cf.assert to autopar_rt_fail -*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements autopar-lower-asserts-to-runtime: every `cf.assert`
// becomes an `scf.if` that calls the runtime's `autopar_rt_fail` with the
// assertion's message (a private LLVM global string) when the condition is
// false, so that a failed check aborts the whole job with a message instead
// of reading out of bounds or calling `abort` on one rank.
//
//===----------------------------------------------------------------------===//

#include "autopar/Transforms/Lowering/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::autopar {
#define GEN_PASS_DEF_LOWERASSERTSTORUNTIMEPASS
#include "autopar/Transforms/Lowering/Passes.h.inc"
} // namespace mlir::autopar

using namespace mlir;
using namespace mlir::autopar;

/// The runtime entry point (autopar/Runtime/RuntimeABI.h).
static constexpr llvm::StringLiteral kFailFunction = "autopar_rt_fail";

namespace {

struct LowerAssertsToRuntimePass
    : public autopar::impl::LowerAssertsToRuntimePassBase<
          LowerAssertsToRuntimePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<cf::AssertOp> asserts;
    module.walk([&](cf::AssertOp op) { asserts.push_back(op); });
    if (asserts.empty())
      return;

    MLIRContext *ctx = &getContext();
    SymbolTable symbols(module);
    auto ptrType = LLVM::LLVMPointerType::get(ctx);
    auto fail = symbols.lookup<func::FuncOp>(kFailFunction);
    if (!fail) {
      OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
      fail = func::FuncOp::create(b, module.getLoc(), kFailFunction,
                                  b.getFunctionType({ptrType}, {}));
      fail.setPrivate();
      symbols.insert(fail);
    } else if (fail.getFunctionType() !=
               FunctionType::get(ctx, {ptrType}, {})) {
      fail.emitOpError() << "'" << kFailFunction
                         << "' must have type (!llvm.ptr) -> ()";
      return signalPassFailure();
    }

    // One global per distinct message.
    llvm::StringMap<LLVM::GlobalOp> globals;
    for (cf::AssertOp op : asserts) {
      std::string text = op.getMsg().str();
      text.push_back('\0');
      LLVM::GlobalOp &global = globals[text];
      if (!global) {
        OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
        auto type =
            LLVM::LLVMArrayType::get(IntegerType::get(ctx, 8), text.size());
        global = LLVM::GlobalOp::create(
            b, op.getLoc(), type,
            /*isConstant=*/true, LLVM::Linkage::Internal,
            "autopar_assert_message", b.getStringAttr(text));
        symbols.insert(global);
      }
      OpBuilder b(op);
      Location loc = op.getLoc();
      Value failed = arith::XOrIOp::create(
          b, loc, op.getArg(),
          arith::ConstantOp::create(b, loc, b.getBoolAttr(true)));
      auto ifOp = scf::IfOp::create(b, loc, failed, /*withElseRegion=*/false);
      b.setInsertionPointToStart(ifOp.thenBlock());
      Value message = LLVM::AddressOfOp::create(b, loc, global);
      func::CallOp::create(b, loc, fail, ValueRange{message});
      op.erase();
      ++numAsserts;
    }
  }
};

} // namespace
