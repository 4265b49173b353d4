// RUN: flow-opt %s --pass-pipeline='builtin.module(func.func(flow-form-dispatch-regions{library-conv=1}))' | FileCheck %s
// RUN: flow-opt %s --pass-pipeline='builtin.module(func.func(flow-form-dispatch-regions))' | FileCheck %s --check-prefix=KERNEL

// With library-conv, an f32 convolution stays on the host (a library
// call): its relu starts a kernel and says why. An f16 convolution is a
// kernel either way.
// CHECK-LABEL: func.func @conv_relu
// CHECK: %[[C:.*]] = flow.conv2d %arg0
// CHECK-NEXT: flow.dispatch_region
// CHECK-NEXT: flow.relu %[[C]] {flow.fusion_refused = "its producer flow.conv2d runs on the host as a library convolution"}
// CHECK: flow.dispatch_region
// CHECK-NEXT: flow.conv2d %arg2
// KERNEL-LABEL: func.func @conv_relu
// KERNEL: flow.dispatch_region
// KERNEL-NEXT: flow.conv2d %arg0
// KERNEL-NEXT: flow.relu
func.func @conv_relu(%x: tensor<1x8x6x6xf32>, %w: tensor<16x8x3x3xf32>, %h: tensor<1x8x6x6xf16>, %wh: tensor<16x8x3x3xf16>) -> (tensor<1x16x4x4xf32>, tensor<1x16x4x4xf16>) {
  %c = flow.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : (tensor<1x8x6x6xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x4x4xf32>
  %r = flow.relu %c : tensor<1x16x4x4xf32>
  %d = flow.conv2d %h, %wh strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : (tensor<1x8x6x6xf16>, tensor<16x8x3x3xf16>) -> tensor<1x16x4x4xf16>
  return %r, %d : tensor<1x16x4x4xf32>, tensor<1x16x4x4xf16>
}
