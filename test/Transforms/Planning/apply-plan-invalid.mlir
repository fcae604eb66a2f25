// RUN: autopar-opt %s --autopar-apply-plan="grid=2x0 plan=data" -verify-diagnostics
// RUN: not autopar-opt %s --autopar-apply-plan="grid=2 plan=%S/Inputs/missing.json" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not autopar-opt %s --autopar-apply-plan="grid=2 plan=%S/Inputs/bad-rank-plan.json" 2>&1 | FileCheck %s --check-prefix=RANK

// expected-error @below {{invalid grid '2x0': grid sizes must be positive}}
module {
  func.func @main(%x: tensor<8xf32> loc("x")) -> tensor<8xf32> {
    return %x : tensor<8xf32>
  }
}

// MISSING: cannot read plan file '{{.*}}missing.json'
// RANK: plan gives value 'x' a sharding of rank 2, the value has rank 1

// RUN: not autopar-opt %s --autopar-apply-plan="grid=2 plan=%S/Inputs/unknown-name-plan.json" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: plan file '{{.*}}unknown-name-plan.json' pins 'nope', which is not a tensor of the model
// UNKNOWN: note: values computed at import
