// AUTOPAR_CPU_ISA names the ISA that `isa=auto` (the default, and the
// driver's) takes instead of the host's, so that one machine can compare the
// code of several ISAs; an invalid name is reported once and ignored.
// RUN: env AUTOPAR_CPU_ISA=avx2 autopar-opt %s --autopar-pack-contractions | FileCheck %s --check-prefix=AVX2
// RUN: env AUTOPAR_CPU_ISA=generic autopar-opt %s --autopar-pack-contractions | FileCheck %s --check-prefix=GENERIC
// RUN: env AUTOPAR_CPU_ISA=avx512bf16 autopar-opt %s --autopar-lower-precision=precision=bf16 --autopar-pack-contractions | FileCheck %s --check-prefix=DOT
// RUN: env AUTOPAR_CPU_ISA=amx autopar-opt %s --autopar-lower-precision=precision=bf16 --autopar-pack-contractions | FileCheck %s --check-prefix=AMX
// An explicit isa wins over the variable.
// RUN: env AUTOPAR_CPU_ISA=generic autopar-opt %s --autopar-pack-contractions=isa=avx2 | FileCheck %s --check-prefix=AVX2
// RUN: env AUTOPAR_CPU_ISA=avx9 autopar-opt %s --autopar-pack-contractions --autopar-pack-contractions 2>&1 | FileCheck %s --check-prefix=BAD

// AVX2: linalg.mmt4d ins(%{{.*}}, %{{.*}} : tensor<3x64x6x1xf32>, tensor<6x64x16x1xf32>)
// GENERIC: linalg.mmt4d ins(%{{.*}}, %{{.*}} : tensor<4x64x4x1xf32>, tensor<12x64x8x1xf32>)
// DOT: linalg.mmt4d ins(%{{.*}}, %{{.*}} : tensor<2x32x8x2xbf16>, tensor<3x32x32x2xbf16>)
// AMX: linalg.mmt4d ins(%{{.*}}, %{{.*}} : tensor<16x32x1x2xbf16>, tensor<3x32x32x2xbf16>)
// BAD: autopar: ignoring AUTOPAR_CPU_ISA='avx9' (expected amx, avx512bf16, avx512, avx2 or generic)
// BAD-NOT: AUTOPAR_CPU_ISA
// BAD: func.func @main

shard.grid @grid(shape = 1)
func.func @main(%x: tensor<16x64xf32>, %w: tensor<64x96xf32>) -> tensor<16x96xf32> {
  %y = autopar.matmul %x, %w : (tensor<16x64xf32>, tensor<64x96xf32>) -> tensor<16x96xf32>
  return %y : tensor<16x96xf32>
}
