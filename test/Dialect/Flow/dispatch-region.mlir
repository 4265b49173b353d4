// RUN: flow-opt %s -split-input-file | flow-opt | FileCheck %s

// A region round-trips, with its rows and several results.
// CHECK-LABEL: func.func @two_results
// CHECK: %[[R:.*]]:2 = flow.dispatch_region rows = 8 -> (tensor<8x32xf32>, tensor<8x32xf32>) {
// CHECK-NEXT: %[[A:.*]] = flow.add
// CHECK-NEXT: %[[G:.*]] = flow.gelu %[[A]]
// CHECK-NEXT: flow.return %[[A]], %[[G]] : tensor<8x32xf32>, tensor<8x32xf32>
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @two_results(%m: tensor<8x32xf32>, %b: tensor<32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>) {
  %r:2 = flow.dispatch_region rows = 8 -> (tensor<8x32xf32>, tensor<8x32xf32>) {
    %a = flow.add %m, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
    %g = flow.gelu %a : tensor<8x32xf32>
    flow.return %a, %g : tensor<8x32xf32>, tensor<8x32xf32>
  }
  return %r#0, %r#1 : tensor<8x32xf32>, tensor<8x32xf32>
}

// Rows default to 1 and are not printed.
// CHECK-LABEL: func.func @serial
// CHECK: flow.dispatch_region -> (tensor<f32>)
func.func @serial(%x: tensor<8xf32>) -> tensor<f32> {
  %r = flow.dispatch_region -> (tensor<f32>) {
    %s = flow.reduce_sum %x [0] : tensor<8xf32> -> tensor<f32>
    flow.return %s : tensor<f32>
  }
  return %r : tensor<f32>
}
