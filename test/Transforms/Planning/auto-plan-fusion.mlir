// An elementwise chain is priced as one pass over memory, as
// autopar-fuse-elementwise runs it (ElementwiseFusion.h): on a cluster where
// only bytes count (1 GB/s, 1e18 FLOP/s), the predicted compute is the bytes
// the fused kernels move, in nanoseconds.
// RUN: autopar-opt %s -split-input-file --mlir-print-op-on-diagnostic=false --autopar-auto-plan="grid=1 cluster=%S/Inputs/cluster-memory-bound.json remarks=1" -o /dev/null 2>&1 | FileCheck %s
// Training prices the same kernels three times (forward and backward, 2x).
// RUN: autopar-opt %s -split-input-file --mlir-print-op-on-diagnostic=false --autopar-auto-plan="grid=1 cluster=%S/Inputs/cluster-memory-bound.json remarks=1 mode=training" -o /dev/null 2>&1 | FileCheck %s --check-prefix=TRAIN
// Recomputed, four times (the first case has no attention core to recompute).
// RUN: not autopar-opt %s -split-input-file --mlir-print-op-on-diagnostic=false --autopar-auto-plan="grid=1 cluster=%S/Inputs/cluster-memory-bound.json remarks=1 mode=training recompute=selective" -o /dev/null 2>&1 | FileCheck %s --check-prefix=RECOMPUTE

// A bias add and the exported GELU, 0.5 * f * (1 + erf(f / sqrt(2))): one
// kernel reads x (4 MiB) and b (4 KiB) and the three scalars, and writes g
// (4 MiB): 8392716 bytes. Each op on its own would move 13 passes of 4 MiB:
// 54530060 bytes.
// CHECK: predicted step 8.392716e-03 s (compute 8.392716e-03 s, communication 0.000000e+00 s)
// TRAIN: predicted step 2.517815e-02 s (compute 2.517815e-02 s, communication 0.000000e+00 s)
// RECOMPUTE: error: selective recomputation needs an attention core
func.func @main(%x: tensor<1024x1024xf32> loc("x"), %b: tensor<1024xf32> loc("b")) -> tensor<1024x1024xf32> {
  %c = autopar.constant dense<1.41421354> : tensor<f32>
  %one = autopar.constant dense<1.0> : tensor<f32>
  %half = autopar.constant dense<0.5> : tensor<f32>
  %f = autopar.add %x, %b : (tensor<1024x1024xf32>, tensor<1024xf32>) -> tensor<1024x1024xf32> loc("f")
  %d = autopar.div %f, %c : (tensor<1024x1024xf32>, tensor<f32>) -> tensor<1024x1024xf32> loc("d")
  %e = autopar.erf %d : (tensor<1024x1024xf32>) -> tensor<1024x1024xf32> loc("e")
  %e1 = autopar.add %e, %one : (tensor<1024x1024xf32>, tensor<f32>) -> tensor<1024x1024xf32> loc("e1")
  %m = autopar.mul %f, %e1 : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32> loc("m")
  %g = autopar.mul %m, %half : (tensor<1024x1024xf32>, tensor<f32>) -> tensor<1024x1024xf32> loc("g")
  return %g : tensor<1024x1024xf32>
}

// -----

// Attention scores: the scale is fused into the mask's add, which writes the
// masked scores for the softmax (a reduction: its lowering reads its input
// in two loop nests). Of [4, 256, 256] f32 (1 MiB): the mul reads the
// scores and the scale (1048580), the add the 256 KiB mask and writes
// (1310720), the softmax reads and writes (2097152): 4456452 bytes, against
// 6553604 op by op; the two matmuls move 1572864 each: 7602180 in all.
// Selective recomputation runs the whole core again before its backward.
// CHECK: predicted step 7.602180e-03 s (compute 7.602180e-03 s, communication 0.000000e+00 s)
// TRAIN: predicted step 2.280654e-02 s (compute 2.280654e-02 s, communication 0.000000e+00 s)
// RECOMPUTE: predicted step 3.040872e-02 s (compute 3.040872e-02 s, communication 0.000000e+00 s)
func.func @main(%q: tensor<4x256x64xf32> loc("q"), %k: tensor<4x64x256xf32> loc("k"), %v: tensor<4x256x64xf32> loc("v")) -> tensor<4x256x64xf32> {
  %c = autopar.constant dense<0.125> : tensor<f32>
  %mask = autopar.constant dense<0.0> : tensor<256x256xf32>
  %s = autopar.matmul %q, %k : (tensor<4x256x64xf32>, tensor<4x64x256xf32>) -> tensor<4x256x256xf32> loc("s")
  %t = autopar.mul %s, %c : (tensor<4x256x256xf32>, tensor<f32>) -> tensor<4x256x256xf32> loc("t")
  %u = autopar.add %t, %mask : (tensor<4x256x256xf32>, tensor<256x256xf32>) -> tensor<4x256x256xf32> loc("u")
  %p = autopar.softmax %u {axis = 2 : i64} : (tensor<4x256x256xf32>) -> tensor<4x256x256xf32> loc("p")
  %o = autopar.matmul %p, %v : (tensor<4x256x256xf32>, tensor<4x256x64xf32>) -> tensor<4x256x64xf32> loc("o")
  return %o : tensor<4x256x64xf32>
}
