// The register tile of a bf16 matmul per ISA (forced, so that the test does
// not depend on the machine), after autopar-lower-precision and the data
// tiling:
// - avx512bf16: both operands packed in bf16 pairs (k0 = 2); the 8 x 2 tile
//   of A is read as one 16-element vector and viewed as 8 32-bit pairs, the
//   32 x 2 tile of B as one 64-element vector (two zmm of 16 pairs); per row
//   of the tile, A's pair is broadcast to 16 lanes and two
//   x86vector.avx512.dot (vdpbf16ps) accumulate into the row's two halves of
//   the f32 accumulator, which stays in registers across the reduction loop;
// - avx512 (AVX-512F without BF16): the extension path, the f32 left tile
//   (extended once per call) and the 32 x 1 bf16 weight tile extended in
//   registers, an f32 vector.contract of the 8x32 tile;
// - a bf16-pair tile on an ISA without dot products (pack for avx512bf16,
//   tile for avx512): both operands are extended to f32 in registers;
// - amx: A packed row-major (m0 = 1), B as for avx512bf16; the mmt4d is only
//   tiled into the parallel loop over column panels, and left for
//   autopar-amx-contractions (after bufferization).
// RUN: autopar-opt %s --autopar-lower-precision=precision=bf16 --autopar-pack-contractions="isa=avx512bf16 pack-weights=true" --autopar-lower-program-to-runtime --autopar-convert-to-linalg --canonicalize --autopar-tile-contractions=isa=avx512bf16 | FileCheck %s --check-prefix=DOT
// RUN: autopar-opt %s --autopar-lower-precision=precision=bf16 --autopar-pack-contractions="isa=avx512 pack-weights=true" --autopar-lower-program-to-runtime --autopar-convert-to-linalg --canonicalize --autopar-tile-contractions=isa=avx512 | FileCheck %s --check-prefix=EXT
// RUN: autopar-opt %s --autopar-lower-precision=precision=bf16 --autopar-pack-contractions="isa=avx512bf16 pack-weights=true" --autopar-lower-program-to-runtime --autopar-convert-to-linalg --canonicalize --autopar-tile-contractions=isa=avx512 | FileCheck %s --check-prefix=NODOT
// RUN: autopar-opt %s --autopar-lower-precision=precision=bf16 --autopar-pack-contractions="isa=amx pack-weights=true" --autopar-lower-program-to-runtime --autopar-convert-to-linalg --canonicalize --autopar-tile-contractions=isa=amx | FileCheck %s --check-prefix=AMX
// RUN: not autopar-opt %s --autopar-tile-contractions=isa=sse9 2>&1 | FileCheck %s --check-prefix=BADISA

// BADISA: autopar-tile-contractions: unknown isa 'sse9' (expected auto, amx, avx512bf16, avx512, avx2 or generic)

shard.grid @grid(shape = 1)
// DOT-LABEL: func.func @autopar_main
// DOT: scf.forall
// DOT: scf.for {{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (vector<8x32xf32>)
// DOT-NOT: vector.contract
// DOT: %[[A:.*]] = vector.transfer_read %{{.*}} : tensor<3x32x16xbf16>, vector<16xbf16>
// DOT: %[[AW:.*]] = vector.bitcast %[[A]] : vector<16xbf16> to vector<8xi32>
// DOT: %[[B:.*]] = vector.transfer_read %{{.*}} : tensor<1x32x64xbf16>, vector<64xbf16>
// DOT: %[[B0:.*]] = vector.extract_strided_slice %[[B]] {offsets = [0], sizes = [32], strides = [1]} : vector<64xbf16> to vector<32xbf16>
// DOT: %[[B1:.*]] = vector.extract_strided_slice %[[B]] {offsets = [32], sizes = [32], strides = [1]} : vector<64xbf16> to vector<32xbf16>
// DOT: %[[W0:.*]] = vector.extract %[[AW]][0] : i32 from vector<8xi32>
// DOT: %[[WB:.*]] = vector.broadcast %[[W0]] : i32 to vector<16xi32>
// DOT: %[[A0:.*]] = vector.bitcast %[[WB]] : vector<16xi32> to vector<32xbf16>
// DOT: %[[R0:.*]] = vector.extract %[[ACC]][0] : vector<32xf32> from vector<8x32xf32>
// DOT: %[[C00:.*]] = vector.extract_strided_slice %[[R0]] {offsets = [0], sizes = [16], strides = [1]} : vector<32xf32> to vector<16xf32>
// DOT: x86vector.avx512.dot %[[C00]], %[[A0]], %[[B0]] : vector<32xbf16> -> vector<16xf32>
// DOT: %[[C01:.*]] = vector.extract_strided_slice %[[R0]] {offsets = [16], sizes = [16], strides = [1]} : vector<32xf32> to vector<16xf32>
// DOT: x86vector.avx512.dot %[[C01]], %[[A0]], %[[B1]] : vector<32xbf16> -> vector<16xf32>
// DOT-COUNT-14: x86vector.avx512.dot
// DOT-NOT: x86vector.avx512.dot
// DOT: scf.yield %{{.*}} : vector<8x32xf32>
// DOT-NOT: vector.contract

// AMX-LABEL: func.func @autopar_main
// AMX: memref.get_global @__autopar_weight_0 : memref<3x32x32x2xbf16>
// AMX: scf.forall (%[[N1:.*]]) in (3)
// AMX-NOT: scf.for
// AMX: linalg.mmt4d ins(%{{.*}}, %{{.*}} : tensor<20x32x1x2xbf16>, tensor<1x32x32x2xbf16>) outs(%{{.*}} : tensor<20x1x1x32xf32>)
// AMX-NOT: vector.contract
// AMX-NOT: x86vector

// EXT-LABEL: func.func @autopar_main
// EXT: scf.for {{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (vector<8x32xf32>)
// EXT: %[[A:.*]] = vector.transfer_read {{.*}} : tensor<3x64x8x1xf32>, vector<8x1xf32>
// EXT: %[[B16:.*]] = vector.transfer_read %{{.*}} : tensor<1x64x32xbf16>, vector<32xbf16>
// EXT: %[[B32:.*]] = arith.extf %[[B16]] : vector<32xbf16> to vector<32xf32>
// EXT: %[[B:.*]] = vector.shape_cast %[[B32]] : vector<32xf32> to vector<1x32x1xf32>
// EXT: vector.contract {{.*}} %[[A]], %[[B]], %[[ACC]] : vector<8x1xf32>, vector<1x32x1xf32> into vector<8x32xf32>
// EXT-NOT: x86vector

// NODOT-LABEL: func.func @autopar_main
// NODOT: scf.for {{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (vector<8x32xf32>)
// NODOT: %[[A:.*]] = arith.extf %{{.*}} : vector<8x2xbf16> to vector<8x2xf32>
// NODOT: %[[B:.*]] = arith.extf %{{.*}} : vector<32x2xbf16> to vector<32x2xf32>
// NODOT: vector.contract {{.*}} %[[A]], %[[B]], %[[ACC]] : vector<8x2xf32>, vector<32x2xf32> into vector<8x32xf32>
// NODOT-NOT: x86vector
func.func @main(%x: tensor<2x10x64xf32>) -> tensor<2x10x96xf32> {
  %w = autopar.weight "fc.weight" : tensor<64x96xf32>
  %y = autopar.matmul %x, %w : (tensor<2x10x64xf32>, tensor<64x96xf32>) -> tensor<2x10x96xf32>
  return %y : tensor<2x10x96xf32>
}
