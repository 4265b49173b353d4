// RUN: flow-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(flow-conv-to-gemm{max-columns-bytes=2200}))' | FileCheck %s

// Columns over max-columns-bytes run in blocks of output rows: one row of
// columns is 2 images x 3 channels x 3 x 3 x 5 columns x 4 bytes = 1080
// bytes, so 2200 bytes allow 2 rows; 5 rows make blocks of 2, 2 and 1. A
// block's im2col crops the input rows above and below the ones it reads
// (negative padding) and pads those beyond the input: rows r0..r1-1 of
// this stride-2 output read input rows 2 r0 - 1 .. 2 r1 - 1.
// CHECK-LABEL: func.func @conv_in_row_blocks
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x9x9xf32>
// CHECK: flow.im2col %[[X]] kernel = [3, 3] strides = [2, 2] padding = [1, 1, -5, 1] dilations = [1, 1] : tensor<2x3x9x9xf32> -> tensor<2x3x3x3x2x5xf32>
// CHECK: %[[P0:.*]] = flow.matmul {{.*}} -> tensor<2x1x4x10xf32>
// CHECK: %[[B0:.*]] = flow.reshape %[[P0]] : tensor<2x1x4x10xf32> -> tensor<2x4x2x5xf32>
// CHECK: flow.im2col %[[X]] kernel = [3, 3] strides = [2, 2] padding = [-3, 1, -1, 1] dilations = [1, 1] : tensor<2x3x9x9xf32> -> tensor<2x3x3x3x2x5xf32>
// CHECK: %[[B1:.*]] = flow.reshape {{.*}} -> tensor<2x4x2x5xf32>
// CHECK: flow.im2col %[[X]] kernel = [3, 3] strides = [2, 2] padding = [-7, 1, 1, 1] dilations = [1, 1] : tensor<2x3x9x9xf32> -> tensor<2x3x3x3x1x5xf32>
// CHECK: %[[B2:.*]] = flow.reshape {{.*}} -> tensor<2x4x1x5xf32>
// CHECK: %[[J:.*]] = flow.concat %[[B0]], %[[B1]], %[[B2]] axis = 2 : (tensor<2x4x2x5xf32>, tensor<2x4x2x5xf32>, tensor<2x4x1x5xf32>) -> tensor<2x4x5x5xf32>
// CHECK: flow.add %[[J]]
// CHECK-NOT: flow.conv2d
func.func @conv_in_row_blocks(%x: tensor<2x3x9x9xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<2x4x5x5xf32> {
  %0 = flow.conv2d %x, %w, %b strides = [2, 2] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1
      : (tensor<2x3x9x9xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x5x5xf32>
  return %0 : tensor<2x4x5x5xf32>
}

// -----

// Columns within the limit (1 x 2 x 3 x 3 x 4 x 4 x 4 bytes = 1152): one
// im2col, no concat.
// CHECK-LABEL: func.func @fits
// CHECK-COUNT-1: flow.im2col
// CHECK-NOT: flow.concat
func.func @fits(%x: tensor<1x2x6x6xf32>, %w: tensor<2x2x3x3xf32>) -> tensor<1x2x4x4xf32> {
  %0 = flow.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1
      : (tensor<1x2x6x6xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x4x4xf32>
  return %0 : tensor<1x2x4x4xf32>
}

// -----

// A 1x1 stride-1 convolution has no columns to make: one matmul.
// CHECK-LABEL: func.func @pointwise
// CHECK-NOT: flow.im2col
// CHECK-COUNT-1: flow.matmul
// CHECK-NOT: flow.concat
func.func @pointwise(%x: tensor<1x64x16x16xf32>, %w: tensor<8x64x1x1xf32>) -> tensor<1x8x16x16xf32> {
  %0 = flow.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1
      : (tensor<1x64x16x16xf32>, tensor<8x64x1x1xf32>) -> tensor<1x8x16x16xf32>
  return %0 : tensor<1x8x16x16xf32>
}

// -----

// Padding wider than the window (a row of columns is 96 x 4 x 4 bytes =
// 1536, so blocks would be single rows): the first and last output rows read
// only padding, so no block could be cut from the input; the convolution
// stays whole.
// CHECK-LABEL: func.func @rows_in_the_padding
// CHECK-COUNT-1: flow.im2col %{{.*}} padding = [3, 0, 3, 0]
// CHECK-NOT: flow.concat
func.func @rows_in_the_padding(%x: tensor<1x96x4x4xf32>, %w: tensor<2x96x1x1xf32>) -> tensor<1x2x10x4xf32> {
  %0 = flow.conv2d %x, %w strides = [1, 1] padding = [3, 0, 3, 0] dilations = [1, 1] groups = 1
      : (tensor<1x96x4x4xf32>, tensor<2x96x1x1xf32>) -> tensor<1x2x10x4xf32>
  return %0 : tensor<1x2x10x4xf32>
}
