// RUN: flow-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(flow-strip-annotations))' | FileCheck %s
// RUN: flow-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(flow-strip-annotations{strip-signature=false}))' | FileCheck %s --check-prefix=KEEP

flow.mesh @mesh [2]

// CHECK-LABEL: func.func @f
// CHECK-SAME: (%[[X:.*]]: tensor<8x4xf32>) -> tensor<8x4xf32> {
// CHECK-NEXT: %[[R:.*]] = flow.relu %[[X]]
// CHECK-NEXT: return %[[R]]
// KEEP-LABEL: func.func @f
// KEEP-SAME: {flow.sbp = #flow.sbp<[S(0)]>}
// KEEP-SAME: attributes {flow.mesh = @mesh}
// KEEP-NOT: flow.annotate
func.func @f(%x: tensor<8x4xf32> {flow.sbp = #flow.sbp<[S(0)]>}) -> (tensor<8x4xf32> {flow.sbp = #flow.sbp<[B]>})
    attributes {flow.mesh = @mesh} {
  %0 = flow.annotate %x as #flow.sbp<[S(1)]> on @mesh : tensor<8x4xf32>
  %1 = flow.relu %0 : tensor<8x4xf32>
  %2 = flow.annotate %1 as #flow.sbp<[B]> on @mesh : tensor<8x4xf32>
  return %2 : tensor<8x4xf32>
}
