// Every elementwise op of the dialect (unary, broadcasting binary,
// comparisons, logical ops, where, cast, clip, gelu) on f32, i64 and i1,
// lowered to a shared object, run under autopar-runner and compared with
// numpy (erf with Python's math.erf).
// REQUIRES: autopar-runner
// RUN: rm -rf %t && mkdir -p %t
// RUN: autopar-opt %s --autopar-lower-to-llvm-pipeline | mlir-translate --mlir-to-llvmir -o %t/program.ll
// RUN: llc -O2 -filetype=obj -relocation-model=pic %t/program.ll -o %t/program.o
// RUN: cc -shared -o %t/program.so %t/program.o %omp_libs -lm
// RUN: %python %S/Inputs/device_data.py gen elementwise %t
// RUN: mpirun --allow-run-as-root --oversubscribe -np 1 autopar-runner --program %t/program.so --grid 1 --weights %t/weights --inputs %t/inputs --outputs %t/outputs
// RUN: %python %S/Inputs/device_data.py check elementwise %t | FileCheck %s

// CHECK: elementwise: 42 outputs match

shard.grid @grid(shape = 1)
func.func @main(%x: tensor<3x4xf32>, %p: tensor<3x4xf32>, %r: tensor<4xf32>,
                %c: tensor<3x1xf32>, %i: tensor<3x4xi64>, %j: tensor<4xi64>,
                %m: tensor<3x4xi1>)
    -> (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>,
        tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>,
        tensor<3x4xf32>, tensor<3x4xi1>, tensor<3x4xf32>, tensor<3x4xf32>,
        tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xi64>,
        tensor<3x4xi1>, tensor<3x4xf32>, tensor<3x4xi32>, tensor<3x4xf32>,
        tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>,
        tensor<3x4xf32>, tensor<3x4xi64>, tensor<3x4xi1>, tensor<3x4xi1>,
        tensor<3x4xi1>, tensor<3x4xi1>, tensor<3x4xf32>, tensor<3x4xi64>,
        tensor<3x4xi64>, tensor<3x4xi64>, tensor<3x4xi1>, tensor<3x4xi64>,
        tensor<3x4xi64>, tensor<3x4xf32>, tensor<3x4xi64>, tensor<3x4xf64>,
        tensor<3x4xi1>, tensor<3x4xi64>) {
  %0 = autopar.abs %x : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %1 = autopar.neg %x : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %2 = autopar.sqrt %p : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %3 = autopar.reciprocal %p : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %4 = autopar.exp %x : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %5 = autopar.log %p : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %6 = autopar.sigmoid %x : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %7 = autopar.tanh %x : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %8 = autopar.erf %x : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %9 = autopar.not %m : (tensor<3x4xi1>) -> tensor<3x4xi1>
  %10 = autopar.leaky_relu %x {alpha = 0.1 : f32} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %11 = autopar.gelu %x : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %12 = autopar.gelu %x {approximate = "tanh"} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %13 = autopar.clip %x {min = -1.0 : f64, max = 1.5 : f64} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %14 = autopar.clip %x {max = 0.5 : f64} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %15 = autopar.cast %x : (tensor<3x4xf32>) -> tensor<3x4xi64>
  %16 = autopar.cast %x : (tensor<3x4xf32>) -> tensor<3x4xi1>
  %17 = autopar.cast %m : (tensor<3x4xi1>) -> tensor<3x4xf32>
  %18 = autopar.cast %i : (tensor<3x4xi64>) -> tensor<3x4xi32>
  %19 = autopar.cast %i : (tensor<3x4xi64>) -> tensor<3x4xf32>
  %20 = autopar.sub %x, %r : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  %21 = autopar.mul %x, %c : (tensor<3x4xf32>, tensor<3x1xf32>) -> tensor<3x4xf32>
  %22 = autopar.div %x, %p : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %23 = autopar.pow %p, %x : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %24 = autopar.pow %x, %j : (tensor<3x4xf32>, tensor<4xi64>) -> tensor<3x4xf32>
  %25 = autopar.pow %i, %j : (tensor<3x4xi64>, tensor<4xi64>) -> tensor<3x4xi64>
  %lt = autopar.less %x, %r : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xi1>
  %26 = autopar.and %m, %lt : (tensor<3x4xi1>, tensor<3x4xi1>) -> tensor<3x4xi1>
  %27 = autopar.equal %i, %j : (tensor<3x4xi64>, tensor<4xi64>) -> tensor<3x4xi1>
  %28 = autopar.greater %i, %j : (tensor<3x4xi64>, tensor<4xi64>) -> tensor<3x4xi1>
  %29 = autopar.less %i, %j : (tensor<3x4xi64>, tensor<4xi64>) -> tensor<3x4xi1>
  %30 = autopar.where %m, %x, %r : (tensor<3x4xi1>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  %31 = autopar.sub %i, %j : (tensor<3x4xi64>, tensor<4xi64>) -> tensor<3x4xi64>
  %32 = autopar.div %i, %j : (tensor<3x4xi64>, tensor<4xi64>) -> tensor<3x4xi64>
  %33 = autopar.mul %i, %j : (tensor<3x4xi64>, tensor<4xi64>) -> tensor<3x4xi64>
  %34 = autopar.equal %x, %r : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xi1>
  %35 = autopar.abs %i : (tensor<3x4xi64>) -> tensor<3x4xi64>
  %36 = autopar.neg %i : (tensor<3x4xi64>) -> tensor<3x4xi64>
  %37 = autopar.relu %x : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %38 = autopar.clip %i {min = -2.0 : f64, max = 3.0 : f64} : (tensor<3x4xi64>) -> tensor<3x4xi64>
  %39 = autopar.cast %p : (tensor<3x4xf32>) -> tensor<3x4xf64>
  %40 = autopar.greater %x, %c : (tensor<3x4xf32>, tensor<3x1xf32>) -> tensor<3x4xi1>
  %41 = autopar.cast %m : (tensor<3x4xi1>) -> tensor<3x4xi64>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,
         %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29,
         %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41
    : tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>,
      tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>,
      tensor<3x4xf32>, tensor<3x4xi1>, tensor<3x4xf32>, tensor<3x4xf32>,
      tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xi64>,
      tensor<3x4xi1>, tensor<3x4xf32>, tensor<3x4xi32>, tensor<3x4xf32>,
      tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>,
      tensor<3x4xf32>, tensor<3x4xi64>, tensor<3x4xi1>, tensor<3x4xi1>,
      tensor<3x4xi1>, tensor<3x4xi1>, tensor<3x4xf32>, tensor<3x4xi64>,
      tensor<3x4xi64>, tensor<3x4xi64>, tensor<3x4xi1>, tensor<3x4xi64>,
      tensor<3x4xi64>, tensor<3x4xf32>, tensor<3x4xi64>, tensor<3x4xf64>,
      tensor<3x4xi1>, tensor<3x4xi64>
}
