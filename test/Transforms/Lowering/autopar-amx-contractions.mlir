// RUN: autopar-opt %s -split-input-file --autopar-amx-contractions=isa=amx | FileCheck %s
// RUN: autopar-opt %s -split-input-file --autopar-amx-contractions=isa=avx512bf16 | FileCheck %s --check-prefix=NOAMX
// RUN: not autopar-opt %s -split-input-file --autopar-amx-contractions=isa=sse9 2>&1 | FileCheck %s --check-prefix=BADISA

// BADISA: autopar-amx-contractions: unknown isa 'sse9' (expected auto, amx, avx512bf16, avx512, avx2 or generic)

// One column panel of a bf16 matmul M = 37, K = 70 (35 pairs), n0 = 32, as
// autopar-tile-contractions leaves it with isa=amx, after bufferization: a
// loop over blocks of 32 rows (two A tiles by two B tiles, four 16x16
// accumulators carried through the loop over steps of 16 pairs, then a step
// of the 3 pairs left), and the 5 rows left. Every tile is 16 rows of 64
// bytes: parts that do not fill one (the 3 pairs, the 5 rows) are copied
// into zero-filled stack tiles first. The function first asks the runtime
// for the AMX tile state.
// CHECK: func.func private @autopar_rt_require_amx()
// CHECK-LABEL: func.func @panel
// CHECK-NEXT: call @autopar_rt_require_amx() : () -> ()
// CHECK-DAG: %[[A:.*]] = memref.collapse_shape %{{.*}} {{\[\[}}0], [1, 2, 3]] : memref<37x35x1x2xbf16> into memref<37x70xbf16>
// CHECK-DAG: %[[B:.*]] = memref.collapse_shape %{{.*}} {{\[\[}}0, 1], [2, 3]] : memref<1x35x32x2xbf16, strided<[2240, 64, 2, 1], offset: ?>> into memref<35x64xbf16, strided<[64, 1], offset: ?>>
// CHECK-DAG: %[[C:.*]] = memref.collapse_shape %{{.*}} {{\[\[}}0], [1, 2, 3]] : memref<37x1x1x32xf32, strided<[64, 32, 32, 1], offset: ?>> into memref<37x32xf32, strided<[64, 1], offset: ?>>
// CHECK: memref.alloca_scope
// CHECK-DAG: %[[SA:.*]] = memref.alloca() : memref<16x32xbf16>
// CHECK-DAG: %[[SB:.*]] = memref.alloca() : memref<16x64xbf16>
// CHECK-DAG: %[[SC:.*]] = memref.alloca() : memref<16x16xf32>
// CHECK: scf.for %[[M:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-COUNT-4: amx.tile_load %[[C]][{{.*}}] : memref<37x32xf32, strided<[64, 1], offset: ?>> into !amx.tile<16x16xf32>
// CHECK: %[[R:.*]]:4 = scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args({{.*}}) -> (!amx.tile<16x16xf32>, !amx.tile<16x16xf32>, !amx.tile<16x16xf32>, !amx.tile<16x16xf32>) {
// CHECK-COUNT-2: amx.tile_load %[[A]][{{.*}}] : memref<37x70xbf16> into !amx.tile<16x32xbf16>
// CHECK-COUNT-2: amx.tile_load %[[B]][%[[K]], {{.*}}] : memref<35x64xbf16, strided<[64, 1], offset: ?>> into !amx.tile<16x32xbf16>
// CHECK-COUNT-4: amx.tile_mulf {{.*}} : !amx.tile<16x32xbf16>, !amx.tile<16x32xbf16>, !amx.tile<16x16xf32>
// CHECK: scf.yield
// The 3 pairs left: 16 x 6 of A and 3 x 64 of B, zero-padded.
// CHECK: linalg.fill {{.*}} outs(%[[SA]] : memref<16x32xbf16>)
// CHECK: memref.subview %[[A]][%[[M]], %{{.*}}] [16, 6] [1, 1]
// CHECK: linalg.copy
// CHECK: amx.tile_load %[[SA]]
// CHECK: linalg.fill {{.*}} outs(%[[SA]] : memref<16x32xbf16>)
// CHECK: amx.tile_load %[[SA]]
// CHECK: linalg.fill {{.*}} outs(%[[SB]] : memref<16x64xbf16>)
// CHECK: memref.subview %[[B]][%{{.*}}, %{{.*}}] [3, 64] [1, 1]
// CHECK: linalg.copy
// CHECK-COUNT-2: amx.tile_load %[[SB]]
// CHECK-COUNT-4: amx.tile_mulf {{.*}}%[[R]]#
// CHECK-COUNT-4: amx.tile_store %[[C]][{{.*}}], {{.*}} : memref<37x32xf32, strided<[64, 1], offset: ?>>, !amx.tile<16x16xf32>
// CHECK: }
// The 5 rows left, through the stack tiles; only the 5 rows are copied back.
// CHECK: memref.subview %[[C]][%{{.*}}, %{{.*}}] [5, 16] [1, 1]
// CHECK: linalg.copy
// CHECK: amx.tile_load %[[SC]]
// CHECK: scf.for {{.*}} -> (!amx.tile<16x16xf32>, !amx.tile<16x16xf32>) {
// CHECK: memref.subview %[[A]][%{{.*}}, %{{.*}}] [5, 32] [1, 1]
// CHECK-COUNT-2: amx.tile_mulf
// CHECK: scf.yield
// CHECK: memref.subview %[[A]][%{{.*}}, %{{.*}}] [5, 6] [1, 1]
// CHECK: amx.tile_store %[[SC]]
// CHECK: %[[OUT:.*]] = memref.subview %[[C]][%{{.*}}, %{{.*}}] [5, 16] [1, 1]
// CHECK: linalg.copy ins(%{{.*}} : memref<5x16xf32, strided<[16, 1]>>) outs(%[[OUT]]
// CHECK-NOT: amx.tile_store %[[C]]
// CHECK-NOT: linalg.mmt4d
// CHECK: return

// NOAMX-NOT: amx.
// NOAMX: linalg.mmt4d
// NOAMX-NOT: amx.
func.func @panel(%a: memref<37x35x1x2xbf16>,
                 %b: memref<1x35x32x2xbf16, strided<[2240, 64, 2, 1], offset: ?>>,
                 %c: memref<37x1x1x32xf32, strided<[64, 32, 32, 1], offset: ?>>) {
  linalg.mmt4d ins(%a, %b : memref<37x35x1x2xbf16>, memref<1x35x32x2xbf16, strided<[2240, 64, 2, 1], offset: ?>>)
      outs(%c : memref<37x1x1x32xf32, strided<[64, 32, 32, 1], offset: ?>>)
  return
}

// -----

// A batched panel (batch 1 after tiling): the batch dimension folds into
// the views. M = 20: one block of 16 + 4 rows; K1 = 16: one step, no rest.
// CHECK-LABEL: func.func @batched
// CHECK-NEXT: call @autopar_rt_require_amx() : () -> ()
// CHECK-NOT: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-COUNT-2: amx.tile_load {{.*}} : memref<20x32xf32> into !amx.tile<16x16xf32>
// CHECK-COUNT-2: amx.tile_load {{.*}} : memref<16x16xf32> into !amx.tile<16x16xf32>
// CHECK: scf.for
// CHECK: amx.tile_load {{.*}} : memref<20x32xbf16> into !amx.tile<16x32xbf16>
// CHECK: memref.subview {{.*}} [4, 32] [1, 1]
// CHECK: amx.tile_load {{.*}} : memref<16x32xbf16> into !amx.tile<16x32xbf16>
// CHECK-COUNT-2: amx.tile_load {{.*}} : memref<16x64xbf16> into !amx.tile<16x32xbf16>
// CHECK-COUNT-4: amx.tile_mulf
// CHECK-NOT: amx.tile_mulf
// CHECK: scf.yield
// CHECK-COUNT-2: amx.tile_store {{.*}} : memref<20x32xf32>, !amx.tile<16x16xf32>
// CHECK-COUNT-2: amx.tile_store {{.*}} : memref<16x16xf32>, !amx.tile<16x16xf32>
// NOAMX-LABEL: func.func @batched
// NOAMX: linalg.batch_mmt4d
func.func @batched(%a: memref<1x20x16x1x2xbf16>, %b: memref<1x1x16x32x2xbf16>,
                   %c: memref<1x20x1x1x32xf32>) {
  linalg.batch_mmt4d ins(%a, %b : memref<1x20x16x1x2xbf16>, memref<1x1x16x32x2xbf16>)
      outs(%c : memref<1x20x1x1x32xf32>)
  return
}

// -----

// Other contractions are left alone: f32 operands, and a pair tile with
// 8 rows (avx512bf16's packing).
// CHECK-LABEL: func.func @others
// CHECK-NOT: amx.
// CHECK-NOT: autopar_rt_require_amx
// CHECK: linalg.mmt4d
// CHECK: linalg.mmt4d
func.func @others(%a: memref<2x4x8x1xf32>, %b: memref<1x4x32x1xf32>, %c: memref<2x1x8x32xf32>,
                  %a2: memref<2x4x8x2xbf16>, %b2: memref<1x4x32x2xbf16>) {
  linalg.mmt4d ins(%a, %b : memref<2x4x8x1xf32>, memref<1x4x32x1xf32>) outs(%c : memref<2x1x8x32xf32>)
  linalg.mmt4d ins(%a2, %b2 : memref<2x4x8x2xbf16>, memref<1x4x32x2xbf16>) outs(%c : memref<2x1x8x32xf32>)
  return
}
