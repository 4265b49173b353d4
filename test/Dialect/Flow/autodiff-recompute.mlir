// flow-autodiff's recompute: the backward reads copies of the chosen ops,
// built just before their first backward reader, and the forward values
// die in the forward pass.
// RUN: flow-opt %s -split-input-file --flow-autodiff="recompute=flow.tanh" | FileCheck %s
// RUN: flow-opt %s -split-input-file --flow-autodiff | FileCheck %s --check-prefix=SAVED

// tanh's gradient and the square's read t = tanh(x): with recompute they
// read a second tanh, made after the forward pass.
// CHECK-LABEL: func.func @square_of_tanh
// CHECK-SAME: (%[[X:[^:]*]]: tensor<4xf32>)
// CHECK: %[[T:.*]] = flow.tanh %[[X]]
// CHECK: flow.mul %[[T]], %[[T]]
// CHECK: flow.reduce_sum
// CHECK: %[[T2:.*]] = flow.tanh %[[X]]
// CHECK-NOT: %[[T]]{{[,) ]}}
// CHECK: return
// SAVED-LABEL: func.func @square_of_tanh
// SAVED-COUNT-1: flow.tanh
// SAVED-NOT: flow.tanh
func.func @square_of_tanh(%x: tensor<4xf32> {flow.requires_grad}) -> tensor<f32> {
  %t = flow.tanh %x : tensor<4xf32>
  %s = flow.mul %t, %t : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %l = flow.reduce_sum %s [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// The function's own flow.recompute (here every element-wise op): a chain
// recomputes whole, each copy before its first backward reader and after
// the copies of its operands' producers; the attribute is consumed.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%[[X:[^:]*]]: tensor<4xf32>, %[[W:[^:]*]]: tensor<4x4xf32>)
// CHECK-NOT: flow.recompute
// CHECK: %[[E:.*]] = flow.exp %[[X]]
// CHECK: %[[T:.*]] = flow.tanh %[[E]]
// CHECK: %[[Y:.*]] = flow.matmul
// CHECK: flow.reduce_sum %[[Y]]
// CHECK: %[[E2:.*]] = flow.exp %[[X]]
// CHECK: %[[T2:.*]] = flow.tanh %[[E2]]
// CHECK-NOT: %[[T]]{{[,) ]}}
// CHECK-NOT: %[[E]]{{[,) ]}}
// CHECK: return
// (The attribute applies without the pass option too.)
// SAVED-LABEL: func.func @chain
// SAVED-COUNT-2: flow.exp
func.func @chain(%x: tensor<4xf32> {flow.requires_grad},
                 %w: tensor<4x4xf32> {flow.requires_grad}) -> tensor<f32>
    attributes {flow.recompute = ["elementwise"]} {
  %e = flow.exp %x : tensor<4xf32>
  %t = flow.tanh %e : tensor<4xf32>
  %r = flow.reshape %t : tensor<4xf32> -> tensor<1x4xf32>
  %y = flow.matmul %r, %w : (tensor<1x4xf32>, tensor<4x4xf32>) -> tensor<1x4xf32>
  %l = flow.reduce_sum %y [0, 1] : tensor<1x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
