// RUN: flow-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(flow-conv-to-gemm))' | FileCheck %s

// CHECK-LABEL: func.func @conv3x3
// CHECK-SAME: (%[[X:.*]]: tensor<2x8x16x16xf32>, %[[W:.*]]: tensor<16x8x3x3xf32>, %[[B:.*]]: tensor<16xf32>)
// CHECK: %[[C:.*]] = flow.im2col %[[X]] kernel = [3, 3] strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] : tensor<2x8x16x16xf32> -> tensor<2x8x3x3x16x16xf32>
// CHECK: %[[M:.*]] = flow.reshape %[[C]] : tensor<2x8x3x3x16x16xf32> -> tensor<2x1x72x256xf32>
// CHECK: %[[K:.*]] = flow.reshape %[[W]] : tensor<16x8x3x3xf32> -> tensor<1x16x72xf32>
// CHECK: %[[P:.*]] = flow.matmul %[[K]], %[[M]] : (tensor<1x16x72xf32>, tensor<2x1x72x256xf32>) -> tensor<2x1x16x256xf32>
// CHECK: %[[Y:.*]] = flow.reshape %[[P]] : tensor<2x1x16x256xf32> -> tensor<2x16x16x16xf32>
// CHECK: %[[BB:.*]] = flow.reshape %[[B]] : tensor<16xf32> -> tensor<16x1x1xf32>
// CHECK: flow.add %[[Y]], %[[BB]]
// CHECK-NOT: flow.conv2d
func.func @conv3x3(%x: tensor<2x8x16x16xf32>, %w: tensor<16x8x3x3xf32>, %b: tensor<16xf32>) -> tensor<2x16x16x16xf32> {
  %0 = flow.conv2d %x, %w, %b strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1
      : (tensor<2x8x16x16xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<2x16x16x16xf32>
  return %0 : tensor<2x16x16x16xf32>
}

// -----

// A 1x1 stride-1 convolution needs no im2col; groups batch the product.
// CHECK-LABEL: func.func @pointwise_grouped
// CHECK-NOT: flow.im2col
// CHECK: flow.reshape %{{.*}} : tensor<1x8x4x4xf32> -> tensor<1x2x4x16xf32>
// CHECK: flow.reshape %{{.*}} : tensor<6x4x1x1xf32> -> tensor<2x3x4xf32>
// CHECK: flow.matmul %{{.*}}, %{{.*}} : (tensor<2x3x4xf32>, tensor<1x2x4x16xf32>) -> tensor<1x2x3x16xf32>
func.func @pointwise_grouped(%x: tensor<1x8x4x4xf32>, %w: tensor<6x4x1x1xf32>) -> tensor<1x6x4x4xf32> {
  %0 = flow.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 2
      : (tensor<1x8x4x4xf32>, tensor<6x4x1x1xf32>) -> tensor<1x6x4x4xf32>
  return %0 : tensor<1x6x4x4xf32>
}

// -----

// Half-precision convolutions stay (they are generated kernels).
// CHECK-LABEL: func.func @conv_f16
// CHECK: flow.conv2d
func.func @conv_f16(%x: tensor<1x2x4x4xf16>, %w: tensor<2x2x3x3xf16>) -> tensor<1x2x2x2xf16> {
  %0 = flow.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1
      : (tensor<1x2x4x4xf16>, tensor<2x2x3x3xf16>) -> tensor<1x2x2x2xf16>
  return %0 : tensor<1x2x2x2xf16>
}

