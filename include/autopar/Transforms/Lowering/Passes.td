//===- Passes.td - autopar lowering transforms -------------*- tablegen -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Transforms of the lowering stage that are not conversions of autopar ops:
// buffer placement and copies after bufferization, runtime checks.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOPAR_TRANSFORMS_LOWERING_PASSES_TD
#define AUTOPAR_TRANSFORMS_LOWERING_PASSES_TD

include "mlir/Pass/PassBase.td"

def LowerAssertsToRuntimePass
    : Pass<"autopar-lower-asserts-to-runtime", "mlir::ModuleOp"> {
  let summary = "turn cf.assert into a call of the runtime's autopar_rt_fail";
  let description = [{
    Input contract: any module (typically right after
    `autopar-convert-to-linalg`, whose gather lowering checks indices with
    `cf.assert`). `cf.assert` would lower to a bare `abort()` of one rank;
    instead each one becomes an `scf.if` on the negated condition calling
    `autopar_rt_fail(const char *)` (autopar/Runtime/RuntimeABI.h), which
    prints the message with the rank and aborts the whole job. Messages
    become private constant LLVM globals (one per distinct message); the
    runtime function is declared when missing.

    Before:
    ```mlir
    cf.assert %ok, "gather: index out of range"
    ```
    After:
    ```mlir
    llvm.mlir.global internal constant @autopar_assert_message("gather: index out of range\00")
    func.func private @autopar_rt_fail(!llvm.ptr)
    ...
    %bad = arith.xori %ok, %true : i1
    scf.if %bad {
      %m = llvm.mlir.addressof @autopar_assert_message : !llvm.ptr
      func.call @autopar_rt_fail(%m) : (!llvm.ptr) -> ()
    }
    ```
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect",
    "mlir::func::FuncDialect",
    "mlir::LLVM::LLVMDialect",
    "mlir::scf::SCFDialect",
  ];
  let statistics = [
    Statistic<"numAsserts", "asserts", "number of cf.assert ops lowered">,
  ];
}

def LowerStridedCopiesPass
    : Pass<"autopar-lower-strided-copies", "mlir::func::FuncOp"> {
  let summary = "rewrite memref.copy of non-identity layouts into linalg.copy";
  let description = [{
    Input contract: bufferized IR. `finalize-memref-to-llvm` lowers a
    `memref.copy` between identity-layout (contiguous) memrefs to `memcpy`,
    but any other copy to a call of `memrefCopy` from MLIR's C runner
    utilities, a library the device program is not linked with. This pass
    rewrites those copies (e.g. of a column block produced by
    `shard.all_slice`, copied by One-Shot Bufferize to hand the runtime an
    identity-layout buffer) into `linalg.copy`, which `convert-linalg-to-loops`
    turns into loops. Copies of identity layouts are left alone.

    Before:
    ```mlir
    memref.copy %sv, %buf : memref<8x2xf32, strided<[4, 1], offset: ?>> to memref<8x2xf32>
    ```
    After:
    ```mlir
    linalg.copy ins(%sv : memref<8x2xf32, strided<[4, 1], offset: ?>>) outs(%buf : memref<8x2xf32>)
    ```
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def FreeBuffersEarlyPass
    : Pass<"autopar-free-buffers-early", "mlir::func::FuncOp"> {
  let summary = "move each buffer's dealloc right after its last use";
  let description = [{
    Input contract: bufferized IR after `buffer-deallocation-pipeline`, where
    every `memref.dealloc` of a straight-line device program sits at the end
    of the function. A program then holds every intermediate buffer until it
    returns, so its peak memory is the sum of all of them instead of what is
    live at once. This pass moves each unconditional `memref.dealloc` of a
    buffer allocated in the same block to just after the last op of that
    block that uses the buffer or any of its aliases (views, casts, reshapes:
    `BufferViewFlowAnalysis`), with uses inside nested regions counting as
    their enclosing op. A buffer with a use outside the block, or one not
    allocated by `memref.alloc`, is left alone, and so are the buffers of
    weights and runtime inputs (filled by `autopar_rt_load_weight_*` and
    `autopar_rt_read_input_*`), which stay resident for the whole step. The device program is single
    threaded and the runtime's calls are synchronous, so freeing after the
    last use is safe; the cost model's liveness-based peak memory then
    describes what runs.

    Before:
    ```mlir
    %a = memref.alloc() : memref<4xf32>
    linalg.exp ins(%x : memref<4xf32>) outs(%a : memref<4xf32>)
    %b = memref.alloc() : memref<4xf32>
    linalg.exp ins(%a : memref<4xf32>) outs(%b : memref<4xf32>)
    ...
    memref.dealloc %a : memref<4xf32>
    memref.dealloc %b : memref<4xf32>
    ```
    After:
    ```mlir
    %a = memref.alloc() : memref<4xf32>
    linalg.exp ins(%x : memref<4xf32>) outs(%a : memref<4xf32>)
    %b = memref.alloc() : memref<4xf32>
    linalg.exp ins(%a : memref<4xf32>) outs(%b : memref<4xf32>)
    memref.dealloc %a : memref<4xf32>
    ...
    ```
  }];
  let statistics = [
    Statistic<"numMoved", "moved", "number of deallocs moved earlier">,
  ];
}

#endif // AUTOPAR_TRANSFORMS_LOWERING_PASSES_TD
