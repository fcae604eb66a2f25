// RUN: autopar-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(autopar-lower-strided-copies))" | FileCheck %s

// CHECK-LABEL: func.func @strided
// CHECK-SAME: (%[[SRC:.*]]: memref<8x2xf32, strided<[4, 1], offset: ?>>, %[[DST:.*]]: memref<8x2xf32>)
// CHECK-NEXT: linalg.copy ins(%[[SRC]] : memref<8x2xf32, strided<[4, 1], offset: ?>>) outs(%[[DST]] : memref<8x2xf32>)
// CHECK-NEXT: return
func.func @strided(%src: memref<8x2xf32, strided<[4, 1], offset: ?>>, %dst: memref<8x2xf32>) {
  memref.copy %src, %dst : memref<8x2xf32, strided<[4, 1], offset: ?>> to memref<8x2xf32>
  return
}

// -----

// CHECK-LABEL: func.func @identity
// CHECK-NEXT: memref.copy
// CHECK-NOT: linalg.copy
func.func @identity(%src: memref<8x2xf32>, %dst: memref<8x2xf32>) {
  memref.copy %src, %dst : memref<8x2xf32> to memref<8x2xf32>
  return
}
