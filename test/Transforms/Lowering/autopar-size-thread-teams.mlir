// Parallel loops (as convert-scf-to-openmp makes them) get no more threads
// than their iterations and their work fill at min-flops-per-thread each
// (default 1000000); a loop too small for two threads runs sequentially.
// RUN: autopar-opt %s -split-input-file --pass-pipeline="builtin.module(convert-scf-to-openmp,autopar-size-thread-teams)" | FileCheck %s
// RUN: autopar-opt %s -split-input-file --pass-pipeline="builtin.module(convert-scf-to-openmp,autopar-size-thread-teams{min-flops-per-thread=0})" | FileCheck %s --check-prefix=ALL
// RUN: not autopar-opt %s -split-input-file --pass-pipeline="builtin.module(convert-scf-to-openmp,autopar-size-thread-teams{min-flops-per-thread=-1})" 2>&1 | FileCheck %s --check-prefix=NEGATIVE

// NEGATIVE: autopar-size-thread-teams: min-flops-per-thread must not be negative, got: -1

// The two column panels of a 64x64x64 matmul (2 x 262144 FLOPs): too little
// work for two threads of a million FLOPs; the loop runs on the calling
// thread, over the same bounds (the body in an scf.execute_region, whose
// region may take the blocks of the alloca_scope's lowering).
// CHECK-LABEL: func.func @tiny_matmul
// CHECK-NOT: omp.
// CHECK: scf.for %[[N1:.*]] = %c0 to %c2 step %c1 {
// CHECK-NEXT: scf.execute_region {
// CHECK-NEXT: memref.alloca_scope {
// CHECK-NEXT: %[[OFFSET:.*]] = arith.muli %[[N1]], %c32 : index
// CHECK: %[[B:.*]] = memref.subview %{{.*}}[0, %[[OFFSET]]]
// CHECK: linalg.matmul ins(%{{.*}}, %[[B]] : memref<64x64xf32>, memref<64x32xf32, {{.*}}>)
// CHECK-NOT: omp.
// CHECK: return
// ALL-LABEL: func.func @tiny_matmul
// ALL: omp.parallel {
// ALL-NEXT: omp.wsloop {
// ALL-NEXT: omp.loop_nest (%{{.*}}) : index = (%c0) to (%c2) step (%c1) {
func.func @tiny_matmul(%a: memref<64x64xf32>, %b: memref<64x64xf32>, %c: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c32 = arith.constant 32 : index
  scf.parallel (%n1) = (%c0) to (%c2) step (%c1) {
    %n = arith.muli %n1, %c32 : index
    %bs = memref.subview %b[0, %n] [64, 32] [1, 1] : memref<64x64xf32> to memref<64x32xf32, strided<[64, 1], offset: ?>>
    %cs = memref.subview %c[0, %n] [64, 32] [1, 1] : memref<64x64xf32> to memref<64x32xf32, strided<[64, 1], offset: ?>>
    linalg.matmul ins(%a, %bs : memref<64x64xf32>, memref<64x32xf32, strided<[64, 1], offset: ?>>)
                  outs(%cs : memref<64x32xf32, strided<[64, 1], offset: ?>>)
    scf.reduce
  }
  return
}

// -----

// 16 panels of 8.4 MFLOP each: every panel fills a thread, so the team has
// at most 16 threads (the rank's threads when fewer); the loop does not wait
// for its threads before the region's end does (nowait).
// CHECK: func.func private @omp_get_max_threads() -> i32
// CHECK-LABEL: func.func @big_matmul
// CHECK: %[[MAX:.*]] = call @omp_get_max_threads() : () -> i32
// CHECK: %[[C16:.*]] = arith.constant 16 : i32
// CHECK: %[[N:.*]] = arith.minsi %[[MAX]], %[[C16]] : i32
// CHECK: omp.parallel num_threads(%[[N]] : i32) {
// CHECK-NEXT: omp.wsloop nowait {
// CHECK-NEXT: omp.loop_nest (%{{.*}}) : index = (%c0) to (%c16) step (%c1) {
// ALL-LABEL: func.func @big_matmul
// ALL-NOT: omp_get_max_threads
// ALL: omp.parallel {
func.func @big_matmul(%a: memref<256x512xf32>, %b: memref<512x512xf32>, %c: memref<256x512xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  scf.parallel (%n1) = (%c0) to (%c16) step (%c1) {
    %n = arith.muli %n1, %c32 : index
    %bs = memref.subview %b[0, %n] [512, 32] [1, 1] : memref<512x512xf32> to memref<512x32xf32, strided<[512, 1], offset: ?>>
    %cs = memref.subview %c[0, %n] [256, 32] [1, 1] : memref<256x512xf32> to memref<256x32xf32, strided<[512, 1], offset: ?>>
    linalg.matmul ins(%a, %bs : memref<256x512xf32>, memref<512x32xf32, strided<[512, 1], offset: ?>>)
                  outs(%cs : memref<256x32xf32, strided<[512, 1], offset: ?>>)
    scf.reduce
  }
  return
}

// -----

// 8 panels of 524288 FLOPs (4.2 MFLOP): 4 threads of a million FLOPs each,
// not 8; the work of an iteration counts its loops (a register tile of
// 8x32x1, 512 FLOPs, 16 x 64 times).
// CHECK-LABEL: func.func @work_bound
// CHECK: %[[MAX:.*]] = call @omp_get_max_threads() : () -> i32
// CHECK: %[[C4:.*]] = arith.constant 4 : i32
// CHECK: %[[N:.*]] = arith.minsi %[[MAX]], %[[C4]] : i32
// CHECK: omp.parallel num_threads(%[[N]] : i32) {
// CHECK: vector.contract
#lhs = affine_map<(m, n, k) -> (m, k)>
#rhs = affine_map<(m, n, k) -> (n, k)>
#acc = affine_map<(m, n, k) -> (m, n)>
func.func @work_bound(%a: memref<128x64x8x1xf32>, %b: memref<8x64x32x1xf32>, %c: memref<16x8x8x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %f0 = arith.constant 0.0 : f32
  %zero = arith.constant dense<0.0> : vector<8x32xf32>
  scf.parallel (%n1) = (%c0) to (%c8) step (%c1) {
    scf.for %m1 = %c0 to %c16 step %c1 {
      %sum = scf.for %k1 = %c0 to %c64 step %c1 iter_args(%r = %zero) -> (vector<8x32xf32>) {
        %va = vector.transfer_read %a[%m1, %k1, %c0, %c0], %f0 {in_bounds = [true, true]} : memref<128x64x8x1xf32>, vector<8x1xf32>
        %vb = vector.transfer_read %b[%n1, %k1, %c0, %c0], %f0 {in_bounds = [true, true]} : memref<8x64x32x1xf32>, vector<32x1xf32>
        %x = vector.contract {indexing_maps = [#lhs, #rhs, #acc], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %va, %vb, %r : vector<8x1xf32>, vector<32x1xf32> into vector<8x32xf32>
        scf.yield %x : vector<8x32xf32>
      }
      vector.transfer_write %sum, %c[%m1, %n1, %c0, %c0] {in_bounds = [true, true]} : vector<8x32xf32>, memref<16x8x8x32xf32>
    }
    scf.reduce
  }
  return
}

// -----

// One iteration, however big, gives no thread anything to share.
// CHECK-LABEL: func.func @one_iteration
// CHECK-NOT: omp.
// CHECK: scf.for %{{.*}} = %c0 to %c1 step %c1 {
// CHECK: linalg.matmul
func.func @one_iteration(%a: memref<512x512xf32>, %b: memref<512x512xf32>, %c: memref<512x512xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.parallel (%i) = (%c0) to (%c1) step (%c1) {
    linalg.matmul ins(%a, %b : memref<512x512xf32>, memref<512x512xf32>)
                  outs(%c : memref<512x512xf32>)
    scf.reduce
  }
  return
}

// -----

// Two dimensions (a batch and its column panels), 4 x 4 iterations of an
// elementwise vector op (16 FLOPs): sequential, both loops nested in order.
// CHECK-LABEL: func.func @two_dims
// CHECK-NOT: omp.
// CHECK: scf.for %[[B:.*]] = %c0 to %c4 step %c1 {
// CHECK-NEXT: scf.for %[[N:.*]] = %c0 to %c4 step %c1 {
// CHECK-NEXT: scf.execute_region {
// CHECK-NEXT: memref.alloca_scope {
// CHECK: vector.load %{{.*}}[%[[B]], %[[N]], %c0]
// CHECK: arith.addf
func.func @two_dims(%x: memref<4x4x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.parallel (%b, %n) = (%c0, %c0) to (%c4, %c4) step (%c1, %c1) {
    %v = vector.load %x[%b, %n, %c0] : memref<4x4x16xf32>, vector<16xf32>
    %w = arith.addf %v, %v : vector<16xf32>
    vector.store %w, %x[%b, %n, %c0] : memref<4x4x16xf32>, vector<16xf32>
    scf.reduce
  }
  return
}

// -----

// A trip count known at run time: the same decision when the loop starts.
// Each iteration has 262144 FLOPs, so a thread needs 4 iterations: the loop
// runs in parallel if min(n, n / 4) >= 2, on at most that many threads.
// CHECK-LABEL: func.func @dynamic_panels
// CHECK-SAME: (%{{.*}}: memref<64x64xf32>, %{{.*}}: memref<64x?xf32>, %{{.*}}: memref<64x?xf32>, %[[COUNT:.*]]: index)
// CHECK: %[[EXTENT:.*]] = arith.subi %[[COUNT]], %c0
// CHECK: %[[POS:.*]] = arith.maxsi %[[EXTENT]], %{{.*}} : index
// CHECK: %[[TRIPS:.*]] = arith.ceildivsi %[[POS]], %c1
// CHECK: %[[ITERS:.*]] = arith.muli %{{.*}}, %[[TRIPS]] : index
// CHECK: %[[FILLED:.*]] = arith.divsi %[[ITERS]], %[[C4:.*]] : index
// CHECK: %[[LIMIT:.*]] = arith.minsi %[[ITERS]], %[[FILLED]] : index
// CHECK: %[[IF:.*]] = arith.cmpi sge, %[[LIMIT]], %{{.*}} : index
// CHECK: %[[MAX:.*]] = call @omp_get_max_threads() : () -> i32
// CHECK: %[[N:.*]] = arith.minsi %[[MAX]], %{{.*}} : i32
// CHECK: omp.parallel if(%[[IF]]) num_threads(%[[N]] : i32) {
// CHECK-NEXT: omp.wsloop nowait {
func.func @dynamic_panels(%a: memref<64x64xf32>, %b: memref<64x?xf32>, %c: memref<64x?xf32>, %count: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  scf.parallel (%n1) = (%c0) to (%count) step (%c1) {
    %n = arith.muli %n1, %c32 : index
    %bs = memref.subview %b[0, %n] [64, 32] [1, 1] : memref<64x?xf32> to memref<64x32xf32, strided<[?, 1], offset: ?>>
    %cs = memref.subview %c[0, %n] [64, 32] [1, 1] : memref<64x?xf32> to memref<64x32xf32, strided<[?, 1], offset: ?>>
    linalg.matmul ins(%a, %bs : memref<64x64xf32>, memref<64x32xf32, strided<[?, 1], offset: ?>>)
                  outs(%cs : memref<64x32xf32, strided<[?, 1], offset: ?>>)
    scf.reduce
  }
  return
}

// -----

// Work that depends on a run-time value inside the body: left as it is.
// CHECK-LABEL: func.func @unknown_work
// CHECK-NOT: omp_get_max_threads
// CHECK: omp.parallel {
// CHECK-NEXT: omp.wsloop {
func.func @unknown_work(%x: memref<4x?xf32>, %count: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    scf.for %j = %c0 to %count step %c1 {
      %v = memref.load %x[%i, %j] : memref<4x?xf32>
      %w = arith.mulf %v, %v : f32
      memref.store %w, %x[%i, %j] : memref<4x?xf32>
    }
    scf.reduce
  }
  return
}

// -----

// AMX tiles: 2 x 16 x 32 x 16 FLOPs per tile product, 64 per iteration
// (1 MFLOP), 4 iterations: 4 threads.
// CHECK-LABEL: func.func @amx_panels
// CHECK: %[[C4:.*]] = arith.constant 4 : i32
// CHECK: %[[N:.*]] = arith.minsi %{{.*}}, %[[C4]] : i32
// CHECK: omp.parallel num_threads(%[[N]] : i32) {
func.func @amx_panels(%a: memref<16x2048xbf16>, %b: memref<1024x128xbf16>, %c: memref<16x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%n1) = (%c0) to (%c4) step (%c1) {
    %zero = amx.tile_zero : !amx.tile<16x16xf32>
    %n = arith.muli %n1, %c32 : index
    %sum = scf.for %k = %c0 to %c64 step %c1 iter_args(%acc = %zero) -> (!amx.tile<16x16xf32>) {
      %ka = arith.muli %k, %c32 : index
      %kb = arith.muli %k, %c16 : index
      %ta = amx.tile_load %a[%c0, %ka] : memref<16x2048xbf16> into !amx.tile<16x32xbf16>
      %tb = amx.tile_load %b[%kb, %n] : memref<1024x128xbf16> into !amx.tile<16x32xbf16>
      %r = amx.tile_mulf %ta, %tb, %acc : !amx.tile<16x32xbf16>, !amx.tile<16x32xbf16>, !amx.tile<16x16xf32>
      scf.yield %r : !amx.tile<16x16xf32>
    }
    %m = arith.muli %n1, %c16 : index
    amx.tile_store %c[%c0, %m], %sum : memref<16x64xf32>, !amx.tile<16x16xf32>
    scf.reduce
  }
  return
}

// -----

// Dot products of bf16 pairs: 2 x 32 FLOPs each, 4 x 1024 per iteration
// (262144 FLOPs), 8 iterations (2.1 MFLOP): 2 threads.
// CHECK-LABEL: func.func @bf16_dot_panels
// CHECK: %[[C2:.*]] = arith.constant 2 : i32
// CHECK: %[[N:.*]] = arith.minsi %{{.*}}, %[[C2]] : i32
// CHECK: omp.parallel num_threads(%[[N]] : i32) {
func.func @bf16_dot_panels(%a: vector<32xbf16>, %b: vector<32xbf16>, %out: memref<8x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c1024 = arith.constant 1024 : index
  %zero = arith.constant dense<0.0> : vector<16xf32>
  scf.parallel (%n1) = (%c0) to (%c8) step (%c1) {
    %sum = scf.for %k = %c0 to %c1024 step %c1 iter_args(%acc = %zero) -> (vector<16xf32>) {
      %d0 = x86vector.avx512.dot %acc, %a, %b : vector<32xbf16> -> vector<16xf32>
      %d1 = x86vector.avx512.dot %d0, %a, %b : vector<32xbf16> -> vector<16xf32>
      %d2 = x86vector.avx512.dot %d1, %a, %b : vector<32xbf16> -> vector<16xf32>
      %d3 = x86vector.avx512.dot %d2, %a, %b : vector<32xbf16> -> vector<16xf32>
      scf.yield %d3 : vector<16xf32>
    }
    vector.store %sum, %out[%n1, %c0] : memref<8x16xf32>, vector<16xf32>
    scf.reduce
  }
  return
}
