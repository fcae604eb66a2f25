// A gather index outside [-size, size) is a clean runtime error naming the
// ONNX node, not an out-of-bounds read: the whole job aborts through
// autopar_rt_fail.
// REQUIRES: autopar-runner
// RUN: rm -rf %t && mkdir -p %t
// RUN: autopar-opt %s --autopar-lower-to-llvm-pipeline | mlir-translate --mlir-to-llvmir -o %t/program.ll
// RUN: llc -O2 -filetype=obj -relocation-model=pic %t/program.ll -o %t/program.o
// RUN: cc -shared -o %t/program.so %t/program.o %omp_libs -lm
// RUN: %python %S/Inputs/device_data.py gen gather_error %t
// RUN: not mpirun --allow-run-as-root --oversubscribe -np 1 autopar-runner --program %t/program.so --grid 1 --weights %t/weights --inputs %t/inputs --outputs %t/outputs 2>&1 | FileCheck %s

// CHECK: autopar-runtime: rank 0: gather 'embed': index out of range [-3, 3) on axis 0 of data tensor<3x4xf32>

shard.grid @grid(shape = 1)
func.func @main(%x: tensor<3x4xf32>, %idx: tensor<2xi64>) -> tensor<2x4xf32> {
  %y = autopar.gather %x, %idx {axis = 0 : i64} : (tensor<3x4xf32>, tensor<2xi64>) -> tensor<2x4xf32> loc(fused<"embed">["y"])
  return %y : tensor<2x4xf32>
}
