// RUN: not autopar-opt %s --autopar-apply-plan="grid=2 plan=%S/Inputs/off-grid-plan.json" 2>&1 | FileCheck %s --check-prefix=OFFGRID
// RUN: not autopar-opt %s --autopar-apply-plan="grid=2 plan=%S/Inputs/partial-relu-plan.json" 2>&1 | FileCheck %s --check-prefix=PARTIAL

// An invalid pin is an error that names the pinned value (found by the
// randomized differential test: these two named only the op or nothing).
// OFFGRID: error: {{.*}}plan value 'w' uses grid axis 1 on a 1-d grid
// PARTIAL: error: {{.*}}result 'y' cannot be a pending sum: the op has no reduction
func.func @main(%x: tensor<8x16xf32> loc("x")) -> tensor<8x4xf32> {
  %w = autopar.weight "w" : tensor<16x4xf32>
  %h = autopar.matmul %x, %w : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32> loc(fused<"mm">["h"])
  %y = autopar.relu %h : (tensor<8x4xf32>) -> tensor<8x4xf32> loc(fused<"relu">["y"])
  return %y : tensor<8x4xf32>
}
