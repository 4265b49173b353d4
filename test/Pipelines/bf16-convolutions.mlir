// --precision=bf16 with library convolutions: they run in bf16 (summed in
// f32), and the buffers only they touch hold bf16; the caller's tensors,
// and the one a kernel reads, stay f32. The final matmul is a bf16 GEMM.
// RUN: flow-compile %s --precision=bf16 --compile-to=host | FileCheck %s
// RUN: flow-compile %s --compile-to=host | FileCheck %s --check-prefix=F32
// RUN: flow-compile %s --precision=bf16 -o %t.fbin

// CHECK-LABEL: func.func @block
// CHECK: %[[A:.*]] = host.slice %{{.*}}[[[OFF:[0-9]+]]] live[1, 3] : {{.*}} -> memref<1x32x8x8xbf16>
// CHECK: host.conv %arg0, %{{.*}} -> %[[A]] {{.*}} {bf16, blocked_output, relu} : memref<1x3x8x8xf32>, memref<32x3x3x3xf32> -> memref<1x32x8x8xbf16>
// CHECK: %[[B:.*]] = host.{{.*}}memref<1x16x8x8xbf16>
// CHECK: host.conv %[[A]], %{{.*}} -> %[[B]] {{.*}} {bf16, blocked_input, blocked_output, relu}
// The residual add writes over %[[A]], which dies there (a sum post-op).
// CHECK: %[[C:.*]] = host.slice %{{.*}}[[[OFF]]] live[3, 4] in_place : {{.*}} -> memref<1x32x8x8xbf16>
// CHECK: host.conv %[[B]], %{{.*}} residual(%[[A]] : memref<1x32x8x8xbf16>) -> %[[C]] {{.*}} {bf16, blocked_input, blocked_output, blocked_residual, relu} : memref<1x16x8x8xbf16>, memref<32x16x1x1xf32> -> memref<1x32x8x8xbf16>
// CHECK: %[[D:.*]] = host.{{.*}}memref<1x32x8x8xf32>
// CHECK: host.conv %[[C]], %{{.*}} -> %[[D]] {{.*}} {bf16, blocked_input} : memref<1x32x8x8xbf16>, memref<32x32x1x1xf32> -> memref<1x32x8x8xf32>
// CHECK: host.dispatch @{{.*}}(%[[D]])
// CHECK: host.gemm {{.*}} : memref<1x32xbf16>, memref<10x32xbf16> -> memref<1x10xf32>
// F32-LABEL: func.func @block
// F32-NOT: bf16
func.func @block(%x: tensor<1x3x8x8xf32>) -> tensor<1x10xf32> {
  %w0 = flow.constant dense<0.5> : tensor<32x3x3x3xf32>
  %w1 = flow.constant dense<0.25> : tensor<16x32x1x1xf32>
  %w2 = flow.constant dense<0.125> : tensor<32x16x1x1xf32>
  %w3 = flow.constant dense<0.0625> : tensor<32x32x1x1xf32>
  %fc = flow.constant dense<0.1> : tensor<10x32xf32>
  %a0 = flow.conv2d %x, %w0 strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1 : (tensor<1x3x8x8xf32>, tensor<32x3x3x3xf32>) -> tensor<1x32x8x8xf32>
  %a = flow.relu %a0 : tensor<1x32x8x8xf32>
  %b0 = flow.conv2d %a, %w1 strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : (tensor<1x32x8x8xf32>, tensor<16x32x1x1xf32>) -> tensor<1x16x8x8xf32>
  %b = flow.relu %b0 : tensor<1x16x8x8xf32>
  %c0 = flow.conv2d %b, %w2 strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : (tensor<1x16x8x8xf32>, tensor<32x16x1x1xf32>) -> tensor<1x32x8x8xf32>
  %c1 = flow.add %c0, %a : (tensor<1x32x8x8xf32>, tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf32>
  %c = flow.relu %c1 : tensor<1x32x8x8xf32>
  %d = flow.conv2d %c, %w3 strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : (tensor<1x32x8x8xf32>, tensor<32x32x1x1xf32>) -> tensor<1x32x8x8xf32>
  %m = flow.reduce_mean %d [2, 3] : tensor<1x32x8x8xf32> -> tensor<1x32xf32>
  %y = flow.matmul %m, %fc {transpose_rhs} : (tensor<1x32xf32>, tensor<10x32xf32>) -> tensor<1x10xf32>
  return %y : tensor<1x10xf32>
}
