// RUN: flow-opt %s --flow-propagate-sbp=print-rules -o /dev/null 2>&1 | FileCheck %s

// Each op's SBP rules along one mesh axis (docs/distributed.md), all-B
// first.

flow.mesh @m [2]
func.func @rules(%x: tensor<4x8xf32>, %v: tensor<8xf32>, %w: tensor<8x6xf32>,
                 %b3: tensor<2x4x8xf32>, %img: tensor<2x4x6x6xf32>,
                 %f: tensor<8x4x3x3xf32>, %t: tensor<10x8xf32>,
                 %ids: tensor<2x3xi64>) attributes {flow.mesh = @m} {
  // CHECK: remark: rules: ([B] -> [B]) ([S(0)] -> [S(0)]) ([S(1)] -> [S(1)])
  %0 = flow.relu %x : tensor<4x8xf32>
  // Negation is linear: partial sums pass.
  // CHECK: remark: rules: ([B] -> [B]) ([S(0)] -> [S(0)]) ([S(1)] -> [S(1)]) ([P] -> [P])
  %1 = flow.neg %x : tensor<4x8xf32>
  // The broadcast operand is whole when the result splits along its
  // missing dimension.
  // CHECK: remark: rules: ([B, B] -> [B]) ([S(0), B] -> [S(0)]) ([S(1), S(0)] -> [S(1)]) ([P, P] -> [P])
  %2 = flow.add %x, %v : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: remark: rules: ([B, B] -> [B]) ([S(0), B] -> [S(0)]) ([S(1), S(0)] -> [S(1)]) ([P, B] -> [P]) ([B, P] -> [P])
  %3 = flow.mul %x, %v : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: remark: rules: ([B, B] -> [B]) ([S(0), B] -> [S(0)]) ([B, S(1)] -> [S(1)]) ([S(1), S(0)] -> [P]) ([P, B] -> [P]) ([B, P] -> [P])
  %4 = flow.matmul %x, %w : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
  // Batch matmul adds the batch split; transposed operands swap dims.
  // CHECK: remark: rules: ([B, B] -> [B]) ([S(1), B] -> [S(1)]) ([B, S(1)] -> [S(2)]) ([S(2), S(2)] -> [P]) ([P, B] -> [P]) ([B, P] -> [P]) ([S(0), S(0)] -> [S(0)])
  %5 = flow.matmul %b3, %b3 {transpose_rhs} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
  // CHECK: remark: rules: ([B] -> [B]) ([S(0)] -> [S(0)]) ([S(1)] -> [P]) ([P] -> [P])
  %6 = flow.reduce_sum %x [1] : tensor<4x8xf32> -> tensor<4xf32>
  // CHECK: remark: rules: ([B] -> [B]) ([S(0)] -> [P(max)]) ([S(1)] -> [S(1)]) ([P(max)] -> [P(max)])
  %7 = flow.reduce_max %x [0] {keepdims} : tensor<4x8xf32> -> tensor<1x8xf32>
  // CHECK: remark: rules: ([B] -> [B]) ([S(0)] -> [S(0)])
  %8 = flow.softmax %x axis = 1 : tensor<4x8xf32>
  // CHECK: remark: rules: ([B, B, B] -> [B]) ([S(0), B, B] -> [S(0)])
  %9 = flow.layer_norm %x weight %v bias %v axis = 1 epsilon = 1.0e-05
      : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: remark: rules: ([B, B] -> [B]) ([S(0), B] -> [S(0)]) ([B, S(0)] -> [S(1)]) ([S(1), S(1)] -> [P])
  %10 = flow.conv2d %img, %f strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1
      : (tensor<2x4x6x6xf32>, tensor<8x4x3x3xf32>) -> tensor<2x8x6x6xf32>
  // CHECK: remark: rules: ([B] -> [B]) ([S(1)] -> [S(0)]) ([S(0)] -> [S(1)]) ([P] -> [P])
  %11 = flow.transpose %x [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  // Reshape keeps the split of a dimension it keeps.
  // CHECK: remark: rules: ([B] -> [B]) ([P] -> [P]) ([S(0)] -> [S(0)])
  %12 = flow.reshape %b3 : tensor<2x4x8xf32> -> tensor<2x32xf32>
  // CHECK: remark: rules: ([B, B] -> [B]) ([B, S(0)] -> [S(0)]) ([B, S(1)] -> [S(1)]) ([S(1), B] -> [S(2)])
  %13 = flow.gather %t[%ids] axis = 0 : (tensor<10x8xf32>, tensor<2x3xi64>) -> tensor<2x3x8xf32>
  // CHECK: remark: rules: ([B, B] -> [B]) ([S(0), S(0)] -> [S(0)]) ([P, P] -> [P])
  %14 = flow.concat %x, %x axis = 1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x16xf32>
  return
}
