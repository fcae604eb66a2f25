// RUN: autopar-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(autopar-convert-to-linalg,canonicalize,autopar-vectorize-elementwise{isa=avx2}))' | FileCheck %s --check-prefix=AVX2
// RUN: autopar-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(autopar-convert-to-linalg,canonicalize,autopar-vectorize-elementwise{isa=avx512}))' | FileCheck %s --check-prefix=AVX512
// RUN: not autopar-opt %s --pass-pipeline='builtin.module(func.func(autopar-vectorize-elementwise{isa=mmx}))' 2>&1 | FileCheck %s --check-prefix=BADISA

// BADISA: autopar-vectorize-elementwise: unknown isa 'mmx' (expected auto, amx, avx512bf16, avx512, avx2 or generic)

// An elementwise op on NCHW: the four loops are contiguous in both operands
// and collapse into one of 128 elements, in vectors of 8 (AVX2) or 16.

// AVX2-LABEL: func.func @relu
// AVX2: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1, 2, 3]] : tensor<2x4x4x4xf32> into tensor<128xf32>
// AVX2: scf.for %{{.*}} = %c0 to %c128 step %c8
// AVX2: vector.transfer_read {{.*}} : tensor<128xf32>, vector<8xf32>
// AVX2: arith.maximumf {{.*}} : vector<8xf32>
// AVX2: vector.transfer_write {{.*}} : vector<8xf32>, tensor<128xf32>
// AVX2: tensor.expand_shape {{.*}} output_shape [2, 4, 4, 4] : tensor<128xf32> into tensor<2x4x4x4xf32>
// AVX512-LABEL: func.func @relu
// AVX512: arith.maximumf {{.*}} : vector<16xf32>
func.func @relu(%x: tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32> {
  %y = autopar.relu %x : (tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
  return %y : tensor<2x4x4x4xf32>
}

// -----

// An operand that does not read the outer loops: H and W collapse (the
// operand reads them contiguously), C stays a loop of its own.

// AVX2-LABEL: func.func @broadcast
// AVX2: tensor.collapse_shape %{{.*}} {{\[\[}}0], [1], [2, 3]] : tensor<1x3x4x4xf32> into tensor<1x3x16xf32>
// AVX2: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1]] : tensor<4x4xf32> into tensor<16xf32>
// AVX2: scf.for %{{.*}} = %c0 to %c3 step %c1
// AVX2: scf.for %{{.*}} = %c0 to %c16 step %c8
// AVX2: vector.transfer_read {{.*}} : tensor<1x3x16xf32>, vector<8xf32>
// AVX2: vector.transfer_read {{.*}} : tensor<16xf32>, vector<8xf32>
// AVX2: arith.addf {{.*}} : vector<8xf32>
func.func @broadcast(%x: tensor<1x3x4x4xf32>, %b: tensor<4x4xf32>) -> tensor<1x3x4x4xf32> {
  %y = autopar.add %x, %b : (tensor<1x3x4x4xf32>, tensor<4x4xf32>) -> tensor<1x3x4x4xf32>
  return %y : tensor<1x3x4x4xf32>
}

// -----

// Left scalar: an innermost loop the lanes do not divide (no masked
// vectors), and i1 operands (a vector of i1 loads packed bits, a buffer of
// i1 holds bytes).

// AVX2-LABEL: func.func @odd
// AVX2-NOT: vector.transfer_read
// AVX2: linalg.generic
func.func @odd(%x: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %y = autopar.relu %x : (tensor<3x5xf32>) -> tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}

// AVX2-LABEL: func.func @mask
// AVX2-NOT: vector.transfer_read
// AVX2: linalg.generic
func.func @mask(%c: tensor<16xi1>, %x: tensor<16xf32>, %y: tensor<16xf32>) -> tensor<16xf32> {
  %z = autopar.where %c, %x, %y : (tensor<16xi1>, tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  return %z : tensor<16xf32>
}
