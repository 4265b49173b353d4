// REQUIRES: cuda-toolkit, ptxas
// Row reductions over f16 and bf16 (softmax's max and sum, a norm's mean):
// warp shuffles move 32-bit values, so each thread's partial is widened to
// f32 for the block's combine and rounded back once. Before, NVVM refused
// the f16 shuffle and models in f16 did not compile for CUDA.

// RUN: flow-compile %s --target=cuda --gpu-arch=sm_80 --compile-to=ptx -o %t80.ptx
// RUN: %ptxas -arch=sm_80 %t80.ptx -o %t80.cubin
// RUN: flow-compile %s --target=cuda --gpu-arch=sm_90 --compile-to=ptx -o %t90.ptx
// RUN: %ptxas -arch=sm_90 %t90.ptx -o %t90.cubin
// RUN: FileCheck %s --input-file=%t90.ptx
// RUN: flow-compile %s --target=cuda --compile-to=gpu | FileCheck %s --check-prefix=GPU

// CHECK: .entry
// CHECK: shfl.sync.bfly.b32

// The f16 row maximum is combined in f32 (exact: every f16 is an f32); the
// sums of softmax and of the bf16 norm already accumulate in f32.
// GPU-LABEL: gpu.func @softmax_f16_k0
// GPU: %[[WIDE:.*]] = arith.extf %{{.*}} : f16 to f32
// GPU-NEXT: %[[MAX:.*]] = gpu.all_reduce maximumf %[[WIDE]] uniform
// GPU: arith.truncf %[[MAX]] : f32 to f16
// GPU: gpu.all_reduce add %{{.*}} uniform
// GPU-LABEL: gpu.func @norm_bf16_k0
// GPU-NOT: gpu.all_reduce {{.*}} : (bf16)
// GPU: gpu.all_reduce add

func.func @softmax_f16(%x: tensor<8x1024xf16>) -> tensor<8x1024xf16> {
  %y = flow.softmax %x axis = 1 : tensor<8x1024xf16>
  return %y : tensor<8x1024xf16>
}

func.func @norm_bf16(%x: tensor<4x768xbf16>, %w: tensor<768xbf16>,
                     %b: tensor<768xbf16>) -> tensor<4x768xbf16> {
  %y = flow.layer_norm %x weight %w bias %b axis = 1 epsilon = 1.0e-5 : (tensor<4x768xbf16>, tensor<768xbf16>, tensor<768xbf16>) -> tensor<4x768xbf16>
  return %y : tensor<4x768xbf16>
}
