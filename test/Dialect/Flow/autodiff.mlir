// flow-autodiff: the backward ops each rule builds, and the new results.
// RUN: flow-opt %s -split-input-file --flow-autodiff --canonicalize | FileCheck %s
// Running it twice changes nothing more: the marks are consumed.
// RUN: flow-opt %s -split-input-file --flow-autodiff --flow-autodiff --canonicalize | FileCheck %s

// A linear layer: dW = x^T g as one product, db = g summed over the batch;
// the gradients follow the loss, in argument order, with their argument.
// CHECK-LABEL: func.func @linear
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<8x2xf32>, %[[B:.*]]: tensor<2xf32>)
// CHECK-SAME: -> (tensor<f32>, tensor<8x2xf32> {flow.gradient_of = 1 : i64}, tensor<2xf32> {flow.gradient_of = 2 : i64})
// CHECK: %[[T:.*]] = flow.tanh
// CHECK: %[[L:.*]] = flow.reduce_sum %[[T]] [0, 1]
// CHECK: %[[SQ:.*]] = flow.mul %[[T]], %[[T]]
// CHECK: %[[G:.*]] = flow.sub %{{.*}}, %[[SQ]]
// CHECK: %[[DB:.*]] = flow.reduce_sum %[[G]] [0] {keepdims} : tensor<4x2xf32> -> tensor<1x2xf32>
// CHECK: %[[DBR:.*]] = flow.reshape %[[DB]] : tensor<1x2xf32> -> tensor<2xf32>
// CHECK: %[[DW:.*]] = flow.matmul %[[X]], %[[G]] {transpose_lhs} : (tensor<4x8xf32>, tensor<4x2xf32>) -> tensor<8x2xf32>
// CHECK: return %[[L]], %[[DW]], %[[DBR]]
func.func @linear(%x: tensor<4x8xf32>, %w: tensor<8x2xf32> {flow.requires_grad},
                  %b: tensor<2xf32> {flow.requires_grad}) -> tensor<f32> {
  %y = flow.matmul %x, %w : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  %z = flow.add %y, %b : (tensor<4x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  %t = flow.tanh %z : tensor<4x2xf32>
  %l = flow.reduce_sum %t [0, 1] : tensor<4x2xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// nn.Linear's layout on a batch of sequences: the weight's gradient is one
// 2-D product over the merged rows, g^T x, not a batched product and a sum.
// CHECK-LABEL: func.func @linear_rows
// CHECK: %[[XR:.*]] = flow.reshape %arg0 : tensor<2x3x8xf32> -> tensor<6x8xf32>
// CHECK: %[[GR:.*]] = flow.reshape %{{.*}} : tensor<2x3x4xf32> -> tensor<6x4xf32>
// CHECK: flow.matmul %[[GR]], %[[XR]] {transpose_lhs} : (tensor<6x4xf32>, tensor<6x8xf32>) -> tensor<4x8xf32>
func.func @linear_rows(%x: tensor<2x3x8xf32>, %w: tensor<4x8xf32> {flow.requires_grad},
                       %r: tensor<2x3x4xf32>) -> tensor<f32> {
  %y = flow.matmul %x, %w {transpose_rhs} : (tensor<2x3x8xf32>, tensor<4x8xf32>) -> tensor<2x3x4xf32>
  %p = flow.mul %y, %r : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %l = flow.reduce_sum %p [0, 1, 2] : tensor<2x3x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A value used three times (twice by one op) sums its three gradients:
// exp(x) + x + x.
// CHECK-LABEL: func.func @fan_out
// CHECK: %[[E:.*]] = flow.exp %arg0
// CHECK: %[[S1:.*]] = flow.add %[[E]], %arg0
// CHECK: %[[S2:.*]] = flow.add %[[S1]], %arg0
// CHECK: return %{{.*}}, %[[S2]]
func.func @fan_out(%x: tensor<3xf32> {flow.requires_grad}) -> tensor<f32> {
  %a = flow.mul %x, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %b = flow.exp %x : tensor<3xf32>
  %c = flow.add %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %l = flow.reduce_sum %c [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// An embedding's gradient is a scatter-add of the rows, at the indices the
// gather read (clamped into the table as the gather clamps them).
// CHECK-LABEL: func.func @embedding
// CHECK: %[[LO:.*]] = flow.maximum %arg1, %{{.*}} : (tensor<2x3xi64>, tensor<i64>)
// CHECK: %[[HI:.*]] = flow.minimum %[[LO]], %{{.*}} : (tensor<2x3xi64>, tensor<i64>)
// CHECK: %[[T:.*]] = flow.reshape %[[HI]] : tensor<2x3xi64> -> tensor<2x3x1xi64>
// CHECK: flow.scatter_nd %{{.*}}[%[[T]]], %{{.*}} reduction = add : (tensor<10x4xf32>, tensor<2x3x1xi64>, tensor<2x3x4xf32>) -> tensor<10x4xf32>
func.func @embedding(%table: tensor<10x4xf32> {flow.requires_grad},
                     %ids: tensor<2x3xi64>) -> tensor<f32> {
  %e = flow.gather %table[%ids] axis = 0 : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  %s = flow.sin %e : tensor<2x3x4xf32>
  %l = flow.reduce_sum %s [0, 1, 2] : tensor<2x3x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Slices and concatenations trade places; softmax uses its own result.
// CHECK-LABEL: func.func @slice_concat_softmax
// CHECK: %[[S:.*]] = flow.softmax
// CHECK: flow.slice %{{.*}} starts = [0, 0] limits = [2, 3] strides = [1, 1] : tensor<2x5xf32> -> tensor<2x3xf32>
// CHECK: flow.pad %{{.*}} low = [0, 1] high = [0, 1] value = 0.000000e+00 : tensor<2x3xf32> -> tensor<2x5xf32>
func.func @slice_concat_softmax(%x: tensor<2x5xf32> {flow.requires_grad},
                                %y: tensor<2x2xf32>) -> tensor<f32> {
  %s = flow.slice %x starts = [0, 1] limits = [2, 4] strides = [1, 1] : tensor<2x5xf32> -> tensor<2x3xf32>
  %c = flow.concat %s, %y axis = 1 : (tensor<2x3xf32>, tensor<2x2xf32>) -> tensor<2x5xf32>
  %p = flow.softmax %c axis = 1 : tensor<2x5xf32>
  %q = flow.mul %p, %p : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
  %l = flow.reduce_sum %q [0, 1] : tensor<2x5xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Functions without a marked argument are left alone, and other results
// stay where they were.
// CHECK-LABEL: func.func @untouched
// CHECK-SAME: -> tensor<4xf32>
func.func @untouched(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = flow.exp %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// CHECK-LABEL: func.func @two_results
// CHECK-SAME: -> (tensor<1xf32>, tensor<4xf32>, tensor<4xf32> {flow.gradient_of = 0 : i64})
func.func @two_results(%x: tensor<4xf32> {flow.requires_grad}) -> (tensor<1xf32>, tensor<4xf32>) {
  %y = flow.exp %x : tensor<4xf32>
  %l = flow.reduce_sum %y [0] {keepdims} : tensor<4xf32> -> tensor<1xf32>
  return %l, %y : tensor<1xf32>, tensor<4xf32>
}
