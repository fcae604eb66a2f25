// The register tile of a bf16 contraction (autopar-lower-precision, then the
// data tiling with the forced AVX2 tile 6x16): bf16 vectors are read from the
// packed operands and contracted into the f32 accumulator, which stays in
// registers across the reduction loop (the conversion path: each operand is
// extended to f32 before the FMA).
// RUN: autopar-opt %s --autopar-lower-precision=precision=bf16 --autopar-pack-contractions="isa=avx2 pack-weights=true" --autopar-lower-program-to-runtime --autopar-convert-to-linalg --canonicalize --autopar-tile-contractions | FileCheck %s

shard.grid @grid(shape = 1)
// CHECK-LABEL: func.func @autopar_main
// CHECK: scf.forall
// CHECK: scf.for {{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (vector<6x16xf32>)
// CHECK: %[[A:.*]] = vector.transfer_read {{.*}} : tensor<4x64x6x1xbf16>, vector<6x1xbf16>
// CHECK: %[[B:.*]] = vector.transfer_read {{.*}} : tensor<6x64x16x1xbf16>, vector<16x1xbf16>
// CHECK: vector.contract {{.*}} %[[A]], %[[B]], %[[ACC]] : vector<6x1xbf16>, vector<16x1xbf16> into vector<6x16xf32>
func.func @main(%x: tensor<2x10x64xf32>) -> tensor<2x10x96xf32> {
  %w = autopar.weight "fc.weight" : tensor<64x96xf32>
  %y = autopar.matmul %x, %w : (tensor<2x10x64xf32>, tensor<64x96xf32>) -> tensor<2x10x96xf32>
  return %y : tensor<2x10x96xf32>
}
