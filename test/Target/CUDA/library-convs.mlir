// The CUDA targets run f32 convolutions on cuDNN (host.conv, NCHW,
// the residual add and ReLU fused in), except one padded differently on
// two sides (cuDNN takes one padding per dimension): that one becomes
// im2col and a GEMM, as every convolution does with --conv=gemm or
// --precision=bf16 (the mixed precision of f32 convolutions is the CPU
// library's).
// RUN: flow-compile %s --target=cuda-emulated --compile-to=host | FileCheck %s
// RUN: flow-compile %s --target=cuda-emulated --conv=gemm --compile-to=host | FileCheck %s --check-prefix=GEMM
// RUN: flow-compile %s --target=cuda-emulated --precision=bf16 --compile-to=host | FileCheck %s --check-prefix=GEMM
// RUN: flow-compile %s --target=cuda-emulated -o %t.fbin

// CHECK-LABEL: func.func @forward
// CHECK: host.conv %arg0, %arg1 bias(%arg2 : memref<8xf32>) -> %[[Y:.*]] strides = [1, 1] padding = [1, 1, 1, 1]
// CHECK-NOT: blocked
// CHECK: host.conv %[[Y]], %arg3 residual(%[[Y]] : memref<2x8x16x16xf32>) -> %arg5 {{.*}}padding = [1, 1, 1, 1]{{.*}} {relu}
// CHECK-NOT: host.conv
// CHECK: host.gemm
// GEMM-LABEL: func.func @forward
// GEMM-NOT: host.conv
// GEMM: host.gemm
func.func @forward(%x: tensor<2x3x16x16xf32>, %w: tensor<8x3x3x3xf32>, %b: tensor<8xf32>, %w2: tensor<8x8x3x3xf32>, %w3: tensor<4x8x2x2xf32>) -> (tensor<2x8x16x16xf32>, tensor<2x4x16x16xf32>) {
  %y = flow.conv2d %x, %w, %b strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1 : (tensor<2x3x16x16xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>) -> tensor<2x8x16x16xf32>
  %z = flow.conv2d %y, %w2 strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1 : (tensor<2x8x16x16xf32>, tensor<8x8x3x3xf32>) -> tensor<2x8x16x16xf32>
  %s = flow.add %z, %y : (tensor<2x8x16x16xf32>, tensor<2x8x16x16xf32>) -> tensor<2x8x16x16xf32>
  %r = flow.relu %s : tensor<2x8x16x16xf32>
  %u = flow.conv2d %r, %w3 strides = [1, 1] padding = [0, 0, 1, 1] dilations = [1, 1] groups = 1 : (tensor<2x8x16x16xf32>, tensor<4x8x2x2xf32>) -> tensor<2x4x16x16xf32>
  return %r, %u : tensor<2x8x16x16xf32>, tensor<2x4x16x16xf32>
}

// f16 convolutions: cuDNN's too (f16 tensors, f32 compute, tensor cores),
// but for one padded asymmetrically: im2col and an f16 cuBLASLt GEMM,
// summed in f32. With --conv=gemm both are GEMMs.
// CHECK-LABEL: func.func @half
// CHECK: host.conv %arg0, %arg1 -> %{{.*}} strides = [1, 1] padding = [1, 1, 1, 1] {{.*}} : memref<1x4x8x8xf16>, memref<8x4x3x3xf16> -> memref<1x8x8x8xf16>
// CHECK-NOT: host.conv
// CHECK: host.gemm {{.*}} -> memref<{{.*}}xf16>
// GEMM-LABEL: func.func @half
// GEMM-NOT: host.conv
// GEMM: host.gemm
func.func @half(%x: tensor<1x4x8x8xf16>, %w: tensor<8x4x3x3xf16>, %w2: tensor<8x4x2x2xf16>) -> (tensor<1x8x8x8xf16>, tensor<1x8x8x8xf16>) {
  %y = flow.conv2d %x, %w strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1 : (tensor<1x4x8x8xf16>, tensor<8x4x3x3xf16>) -> tensor<1x8x8x8xf16>
  %u = flow.conv2d %x, %w2 strides = [1, 1] padding = [0, 0, 1, 1] dilations = [1, 1] groups = 1 : (tensor<1x4x8x8xf16>, tensor<8x4x2x2xf16>) -> tensor<1x8x8x8xf16>
  return %y, %u : tensor<1x8x8x8xf16>, tensor<1x8x8x8xf16>
}
