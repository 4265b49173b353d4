// flow-compile --sbp-plan-graph draws each mesh function's plan: a row per
// argument and op in program order, filled by its SBP, and an edge per use,
// red and named where a collective boxes the value.
// RUN: flow-compile %s --compile-to=flow -o %t.mlir --sbp-plan-graph=%t.svg
// RUN: FileCheck %s --input-file=%t.svg
// RUN: sed -e 's/attributes {flow.mesh = @m}//' -e 's/ {flow.sbp = #flow.sbp<\[S(0)\]>}//' %s | not flow-compile - -o %t.fbin --sbp-plan-graph=%t2.svg 2>&1 | FileCheck %s --check-prefix=NOMESH

// CHECK: <svg xmlns="http://www.w3.org/2000/svg"
// CHECK: @mlp on a 2 mesh
// CHECK: fill="#8ecae6"
// CHECK-NEXT: argument 0 : 8x16xf32
// CHECK-NEXT: [S(0)]
// CHECK: argument 1 : 16x4xf32
// CHECK-NEXT: [B]
// CHECK: flow.matmul : 8x4xf32
// CHECK-NEXT: [S(0)]
// CHECK: >return<
// CHECK: stroke="#c1121f" stroke-width="2"
// CHECK-NEXT: fill="#c1121f">all_gather on axis 0</text>
// CHECK: </svg>
// NOMESH: error: --sbp-plan-graph: no function was placed on a mesh
flow.mesh @m [2]
func.func @mlp(%x: tensor<8x16xf32> {flow.sbp = #flow.sbp<[S(0)]>},
               %w: tensor<16x4xf32>) -> tensor<8x4xf32> attributes {flow.mesh = @m} {
  %y = flow.matmul %x, %w : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}
