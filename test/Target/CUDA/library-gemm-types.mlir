// The CUDA targets hand f16 and bf16 products to cuBLASLt (summed in f32),
// with a bias of the result's type as the GEMM's epilogue; the CPU target
// keeps f16 products in kernels. --allow-tf32 marks the f32 GEMMs (only);
// the CPU target refuses it.
// RUN: flow-compile %s --target=cuda-emulated --compile-to=host | FileCheck %s
// RUN: flow-compile %s --target=cuda-emulated --allow-tf32 --compile-to=host | FileCheck %s --check-prefix=TF32
// RUN: flow-compile %s --target=cpu --compile-to=host | FileCheck %s --check-prefix=CPU
// RUN: not flow-compile %s --target=cpu --allow-tf32 -o %t.fbin 2>&1 | FileCheck %s --check-prefix=CPU-TF32
// RUN: flow-compile %s --target=cuda-emulated --allow-tf32 -o %t.fbin

// CHECK-LABEL: func.func @forward
// CHECK: host.gemm %arg0, %{{.*}} bias(%{{.*}} : memref<64xf16>) -> %{{.*}} activation = relu :
// CHECK-SAME: memref<8x32xf16>, memref<32x64xf16> -> memref<8x64xf16>
// CHECK-NOT: allow_tf32
// CHECK: host.gemm %arg5, %{{.*}} -> %{{.*}} : memref<8x64xbf16>, memref<64x16xbf16> -> memref<8x16xbf16>
// CHECK: host.gemm %arg3, %{{.*}} -> %{{.*}} : memref<8x16xf32>
// TF32-LABEL: func.func @forward
// TF32: host.gemm %arg0, {{.*}} activation = relu :
// TF32-NOT: allow_tf32
// TF32: host.gemm %arg5, {{.*}} : memref<8x64xbf16>
// TF32: host.gemm %arg3, %{{.*}} -> %{{.*}} {allow_tf32} : memref<8x16xf32>
// CPU-LABEL: func.func @forward
// CPU-NOT: host.gemm %arg0
// CPU: host.dispatch @forward_k0(%arg0, %arg1, %arg2)
// CPU-NOT: host.gemm %arg5
// CPU: host.gemm %arg3
// CPU-TF32: error: --allow-tf32 is for the CUDA targets (a CPU has no TF32 arithmetic)
func.func @forward(%x: tensor<8x32xf16>, %w: tensor<32x64xf16>, %b: tensor<64xf16>, %y: tensor<8x16xf32>, %v: tensor<16x16xf32>, %c: tensor<8x64xbf16>) -> (tensor<8x64xf16>, tensor<8x16xbf16>, tensor<8x16xf32>) {
  %h = flow.matmul %x, %w : (tensor<8x32xf16>, tensor<32x64xf16>) -> tensor<8x64xf16>
  %hb = flow.add %h, %b : (tensor<8x64xf16>, tensor<64xf16>) -> tensor<8x64xf16>
  %hr = flow.relu %hb : tensor<8x64xf16>
  %u = flow.constant dense<0.5> : tensor<64x16xbf16>
  %o = flow.matmul %c, %u : (tensor<8x64xbf16>, tensor<64x16xbf16>) -> tensor<8x16xbf16>
  %p = flow.matmul %y, %v : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  return %hr, %o, %p : tensor<8x64xf16>, tensor<8x16xbf16>, tensor<8x16xf32>
}
