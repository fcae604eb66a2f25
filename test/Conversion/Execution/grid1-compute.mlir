// Lowers a hand-written grid-1 device program (matmul, add, relu, gemm with
// transposed B and broadcast C, matrix-vector and broadcast batch matmul) to a
// shared object and runs it under autopar-runner.
// REQUIRES: autopar-runner
// RUN: rm -rf %t && mkdir -p %t
// RUN: autopar-opt %s --autopar-lower-to-llvm-pipeline | mlir-translate --mlir-to-llvmir -o %t/program.ll
// RUN: llc -O2 -filetype=obj -relocation-model=pic %t/program.ll -o %t/program.o
// RUN: cc -shared -o %t/program.so %t/program.o %omp_libs
// RUN: %python %S/Inputs/device_data.py gen grid1 %t
// RUN: mpirun --allow-run-as-root --oversubscribe -np 1 autopar-runner --program %t/program.so --grid 1 --weights %t/weights --inputs %t/inputs --outputs %t/outputs
// RUN: %python %S/Inputs/device_data.py check grid1 %t | FileCheck %s
// The register tiles of the other ISAs (8x32, 6x16, 4x8: rows and columns
// padded differently) give the same results on this CPU.
// RUN: for isa in avx512 avx2 generic; do \
// RUN:   autopar-opt %s --autopar-lower-to-llvm-pipeline=isa=$isa | mlir-translate --mlir-to-llvmir -o %t/program-$isa.ll && \
// RUN:   llc -O2 -filetype=obj -relocation-model=pic %t/program-$isa.ll -o %t/program-$isa.o && \
// RUN:   cc -shared -o %t/program-$isa.so %t/program-$isa.o %omp_libs && rm -rf %t/outputs && \
// RUN:   mpirun --allow-run-as-root --oversubscribe -np 1 autopar-runner --program %t/program-$isa.so --grid 1 --weights %t/weights --inputs %t/inputs --outputs %t/outputs && \
// RUN:   %python %S/Inputs/device_data.py check grid1 %t || exit 1; done | FileCheck %s --check-prefix=ISAS
// ISAS-COUNT-3: grid1: 3 outputs match

// CHECK: grid1: 3 outputs match

shard.grid @grid(shape = 1)
func.func @main(%x: tensor<4x8xf32>, %v: tensor<8xf32>) -> (tensor<4x16xf32>, tensor<4xf32>, tensor<2x4x5xf32>) {
  %w = autopar.weight "fc1.weight" : tensor<8x16xf32>
  %b = autopar.weight "fc1.bias" : tensor<16xf32>
  %h = autopar.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %hb = autopar.add %h, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %r = autopar.relu %hb : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %w2 = autopar.weight "fc2.weight" : tensor<16x16xf32>
  %c = autopar.constant dense<0.5> : tensor<1x16xf32>
  %y = autopar.gemm %r, %w2, %c {alpha = 2.0 : f32, beta = 3.0 : f32, trans_b = true} : (tensor<4x16xf32>, tensor<16x16xf32>, tensor<1x16xf32>) -> tensor<4x16xf32>
  %mv = autopar.matmul %x, %v : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4xf32>
  %bw = autopar.weight "bmm" : tensor<2x8x5xf32>
  %bm = autopar.matmul %x, %bw : (tensor<4x8xf32>, tensor<2x8x5xf32>) -> tensor<2x4x5xf32>
  return %y, %mv, %bm : tensor<4x16xf32>, tensor<4xf32>, tensor<2x4x5xf32>
}
