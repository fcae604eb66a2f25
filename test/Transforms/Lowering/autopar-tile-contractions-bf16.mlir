// The register tile of a bf16 contraction (autopar-lower-precision, then the
// data tiling with the forced AVX2 tile 6x16): the f32 left tile (extended
// once per call) is read as before; the 16 x 1 bf16 tile of the packed weight
// is read as one 16-element vector from its panel viewed without the unit
// k0 dimension (a 2-D read would unroll into 16 element loads), extended to
// f32 in registers and contracted into the f32 accumulator, which stays in
// registers across the reduction loop.
// RUN: autopar-opt %s --autopar-lower-precision=precision=bf16 --autopar-pack-contractions="isa=avx2 pack-weights=true" --autopar-lower-program-to-runtime --autopar-convert-to-linalg --canonicalize --autopar-tile-contractions | FileCheck %s

shard.grid @grid(shape = 1)
// CHECK-LABEL: func.func @autopar_main
// CHECK: scf.forall
// CHECK: scf.for {{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (vector<6x16xf32>)
// CHECK: %[[A:.*]] = vector.transfer_read {{.*}} : tensor<4x64x6x1xf32>, vector<6x1xf32>
// CHECK: %[[PANEL:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0], [1], [2, 3]] : tensor<1x64x16x1xbf16> into tensor<1x64x16xbf16>
// CHECK: %[[B16:.*]] = vector.transfer_read %[[PANEL]]{{.*}} : tensor<1x64x16xbf16>, vector<16xbf16>
// CHECK: %[[B32:.*]] = arith.extf %[[B16]] : vector<16xbf16> to vector<16xf32>
// CHECK: %[[B:.*]] = vector.shape_cast %[[B32]] : vector<16xf32> to vector<1x16x1xf32>
// CHECK: vector.contract {{.*}} %[[A]], %[[B]], %[[ACC]] : vector<6x1xf32>, vector<1x16x1xf32> into vector<6x16xf32>
func.func @main(%x: tensor<2x10x64xf32>) -> tensor<2x10x96xf32> {
  %w = autopar.weight "fc.weight" : tensor<64x96xf32>
  %y = autopar.matmul %x, %w : (tensor<2x10x64xf32>, tensor<64x96xf32>) -> tensor<2x10x96xf32>
  return %y : tensor<2x10x96xf32>
}
