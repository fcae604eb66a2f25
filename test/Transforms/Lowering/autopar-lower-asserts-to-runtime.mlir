// RUN: autopar-opt %s -split-input-file --autopar-lower-asserts-to-runtime | FileCheck %s

// One private global per distinct message, the runtime function declared
// once, each assert an scf.if on the negated condition.
// CHECK-DAG: llvm.mlir.global internal constant @[[MSG:autopar_assert_message[_0-9]*]]("index out of range\00")
// CHECK-DAG: llvm.mlir.global internal constant @[[OTHER:autopar_assert_message[_0-9]*]]("other\00")
// CHECK-DAG: func.func private @autopar_rt_fail(!llvm.ptr)
// CHECK-LABEL: func.func @checks
// CHECK-SAME: (%[[A:.*]]: i1, %[[B:.*]]: i1)
// CHECK: %[[TRUE:.*]] = arith.constant true
// CHECK: %[[BAD:.*]] = arith.xori %[[A]], %[[TRUE]] : i1
// CHECK: scf.if %[[BAD]] {
// CHECK: %[[PTR:.*]] = llvm.mlir.addressof @[[MSG]] : !llvm.ptr
// CHECK: func.call @autopar_rt_fail(%[[PTR]]) : (!llvm.ptr) -> ()
// CHECK: }
// CHECK: arith.xori %[[B]]
// CHECK: llvm.mlir.addressof @[[MSG]]
// CHECK: arith.xori %[[A]]
// CHECK: llvm.mlir.addressof @[[OTHER]]
// CHECK-NOT: cf.assert
func.func @checks(%a: i1, %b: i1) {
  cf.assert %a, "index out of range"
  cf.assert %b, "index out of range"
  cf.assert %a, "other"
  return
}

// -----

// An existing declaration is reused; a global of the same name is not clobbered.
// CHECK: llvm.mlir.global internal constant @autopar_assert_message_0("x\00")
// CHECK: llvm.mlir.global internal constant @autopar_assert_message(0 : i32)
// CHECK: func.func private @autopar_rt_fail(!llvm.ptr)
// CHECK-NOT: func.func private @autopar_rt_fail
// CHECK: llvm.mlir.addressof @autopar_assert_message_0
llvm.mlir.global internal constant @autopar_assert_message(0 : i32) : i32
func.func private @autopar_rt_fail(!llvm.ptr)
func.func @reuse(%a: i1) {
  cf.assert %a, "x"
  return
}
