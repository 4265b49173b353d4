// RUN: flow-opt %s --pass-pipeline='builtin.module(func.func(flow-form-dispatch-regions{narrow-library-matmul=1}))' | FileCheck %s
// RUN: flow-opt %s --pass-pipeline='builtin.module(func.func(flow-form-dispatch-regions))' | FileCheck %s --check-prefix=WIDE

// With a narrow GEMM library (the CUDA targets' cuBLASLt) f16 and bf16
// products stay on the host as library GEMMs, into their own type or f32;
// the relu after each starts a kernel of its own. Integer products stay
// kernels. Without one (the CPU's), only bf16 into f32 does.
// CHECK-LABEL: func.func @narrow
// CHECK: flow.matmul %arg0, %arg1 :
// CHECK-NEXT: flow.dispatch_region
// CHECK-NEXT: flow.relu {{.*}}runs on the host as a library GEMM
// CHECK: flow.matmul %arg0, %arg1 {accumulate_f32}
// CHECK-NEXT: flow.dispatch_region
// CHECK: flow.matmul %arg2, %arg3 :
// CHECK-NEXT: flow.dispatch_region
// CHECK: flow.matmul %arg2, %arg3 {accumulate_f32}
// CHECK-NEXT: flow.dispatch_region
// CHECK-NEXT: flow.matmul %arg4, %arg5
// WIDE-LABEL: func.func @narrow
// WIDE: flow.dispatch_region
// WIDE-NEXT: flow.matmul %arg0, %arg1 :
// WIDE: flow.dispatch_region
// WIDE-NEXT: flow.matmul %arg0, %arg1 {accumulate_f32}
// WIDE: flow.dispatch_region
// WIDE-NEXT: flow.matmul %arg2, %arg3 :
// WIDE: %[[BF:.*]] = flow.matmul %arg2, %arg3 {accumulate_f32}
func.func @narrow(%a: tensor<4x8xf16>, %b: tensor<8x4xf16>, %c: tensor<4x8xbf16>, %d: tensor<8x4xbf16>, %i: tensor<4x8xi32>, %j: tensor<8x4xi32>) -> (tensor<4x4xf16>, tensor<4x4xf32>, tensor<4x4xbf16>, tensor<4x4xf32>, tensor<4x4xi32>) {
  %h = flow.matmul %a, %b : (tensor<4x8xf16>, tensor<8x4xf16>) -> tensor<4x4xf16>
  %h1 = flow.relu %h : tensor<4x4xf16>
  %f = flow.matmul %a, %b {accumulate_f32} : (tensor<4x8xf16>, tensor<8x4xf16>) -> tensor<4x4xf32>
  %f1 = flow.relu %f : tensor<4x4xf32>
  %g = flow.matmul %c, %d : (tensor<4x8xbf16>, tensor<8x4xbf16>) -> tensor<4x4xbf16>
  %g1 = flow.relu %g : tensor<4x4xbf16>
  %k = flow.matmul %c, %d {accumulate_f32} : (tensor<4x8xbf16>, tensor<8x4xbf16>) -> tensor<4x4xf32>
  %n = flow.matmul %i, %j : (tensor<4x8xi32>, tensor<8x4xi32>) -> tensor<4x4xi32>
  return %h1, %f1, %g1, %k, %n : tensor<4x4xf16>, tensor<4x4xf32>, tensor<4x4xbf16>, tensor<4x4xf32>, tensor<4x4xi32>
}
