// RUN: autopar-opt %s --pass-pipeline="builtin.module(func.func(autopar-approximate-math))" | FileCheck %s

// f32 transcendentals become call-free polynomials; f64 and other functions
// are left to libm.

// CHECK-LABEL: func.func @approximated
// CHECK-NOT: math.erf
// CHECK-NOT: math.tanh
// CHECK-NOT: math.exp
// CHECK-NOT: math.log
// CHECK: math.fma
// CHECK: return
func.func @approximated(%x: f32, %v: vector<8xf32>) -> (f32, f32, f32, f32, vector<8xf32>) {
  %e = math.erf %x : f32
  %t = math.tanh %x : f32
  %x1 = math.exp %x : f32
  %l = math.log %x : f32
  %ve = math.erf %v : vector<8xf32>
  return %e, %t, %x1, %l, %ve : f32, f32, f32, f32, vector<8xf32>
}

// CHECK-LABEL: func.func @kept
// CHECK: math.erf %{{.*}} : f64
// CHECK: math.sin %{{.*}} : f32
func.func @kept(%x: f64, %y: f32) -> (f64, f32) {
  %e = math.erf %x : f64
  %s = math.sin %y : f32
  return %e, %s : f64, f32
}
