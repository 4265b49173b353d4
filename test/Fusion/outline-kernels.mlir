// One op per region, then outlined: the kernels flow-compile --fusion=off
// makes (test/Fusion has the fusion rules).
// RUN: flow-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(flow-form-dispatch-regions{fusion=0}),flow-outline-kernels)' | FileCheck %s
// RUN: flow-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(flow-form-dispatch-regions{fusion=0 library-matmul=0}),flow-outline-kernels)' | FileCheck %s --check-prefix=NOLIB

// The host keeps f32 matmuls (library GEMM), reshapes and non-splat
// constants; every other compute op becomes a kernel, in program order.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32>, %[[W:.*]]: tensor<16x32xf32>)
// CHECK: %[[B:.*]] = flow.constant dense<{{.*}}> : tensor<32xf32>
// CHECK: %[[M:.*]] = flow.matmul %[[X]], %[[W]]
// CHECK: %[[A:.*]] = call @mlp_k0(%[[M]], %[[B]]) {flow.inplace_operands = array<i64: 0>}
// CHECK: %[[R:.*]] = call @mlp_k1(%[[A]])
// CHECK: %[[V:.*]] = flow.reshape %[[R]]
// CHECK: return %[[V]]
// The splat constant is rebuilt inside the kernel that uses it. Element-wise
// kernels may write their result over an operand of the result's shape
// (flow.inplace_operands on the call); the broadcast bias is not one.
// CHECK: func.func private @mlp_k0(%{{.*}}: tensor<8x32xf32>, %{{.*}}: tensor<32xf32>) -> tensor<8x32xf32>
// CHECK-SAME: attributes {flow.kernel, flow.workgroup_extent = 8 : i64}
// CHECK-NEXT: flow.add
// CHECK: func.func private @mlp_k1(%[[I:.*]]: tensor<8x32xf32>) -> tensor<8x32xf32>
// CHECK-NEXT: %[[H:.*]] = flow.constant dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT: flow.maximum %[[I]], %[[H]]
// NOLIB-LABEL: func.func @mlp
// NOLIB-NOT: flow.matmul
// NOLIB: call @mlp_k0
// NOLIB: func.func private @mlp_k0
// NOLIB-NEXT: flow.matmul
func.func @mlp(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>) -> tensor<256xf32> {
  %b = flow.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<32xf32>
  %half = flow.constant dense<0.5> : tensor<f32>
  %0 = flow.matmul %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %1 = flow.add %0, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %2 = flow.maximum %1, %half : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  %3 = flow.reshape %2 : tensor<8x32xf32> -> tensor<256xf32>
  return %3 : tensor<256xf32>
}

// -----

// Rows that depend on each other make a single-workgroup kernel; f16
// matmuls are generated kernels.
// CHECK-LABEL: func.func private @rows_k0
// CHECK-NOT: flow.inplace_operands
// CHECK-SAME: flow.workgroup_extent = 1 : i64
// CHECK-NEXT: flow.softmax %{{.*}} axis = 0
// CHECK-LABEL: func.func private @rows_k1
// CHECK-SAME: flow.workgroup_extent = 4 : i64
// CHECK-NEXT: flow.reduce_sum %{{.*}} [1]
// CHECK-LABEL: func.func private @rows_k2
// CHECK-SAME: flow.workgroup_extent = 1 : i64
// CHECK-NEXT: flow.reduce_max %{{.*}} [0]
// CHECK-LABEL: func.func private @rows_k3
// CHECK-NEXT: flow.matmul
func.func @rows(%x: tensor<4x8xf32>, %h: tensor<4x4xf16>) -> (tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4x4xf16>) {
  %0 = flow.softmax %x axis = 0 : tensor<4x8xf32>
  %1 = flow.reduce_sum %x [1] : tensor<4x8xf32> -> tensor<4xf32>
  %2 = flow.reduce_max %x [0] : tensor<4x8xf32> -> tensor<8xf32>
  %3 = flow.matmul %h, %h : (tensor<4x4xf16>, tensor<4x4xf16>) -> tensor<4x4xf16>
  return %0, %1, %2, %3 : tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4x4xf16>
}

// -----

// Leading dimensions of 1 (a batch of one) carry no work: the rows are the
// first longer dimension, unless the op combines elements across it.
// CHECK-LABEL: func.func private @batch_of_one_k0
// CHECK-SAME: flow.workgroup_extent = 12 : i64
// CHECK-NEXT: flow.relu
// CHECK-LABEL: func.func private @batch_of_one_k1
// CHECK-SAME: flow.workgroup_extent = 12 : i64
// CHECK-NEXT: flow.softmax %{{.*}} axis = 3
// CHECK-LABEL: func.func private @batch_of_one_k2
// CHECK-SAME: flow.workgroup_extent = 1 : i64
// CHECK-NEXT: flow.softmax %{{.*}} axis = 1
// CHECK-LABEL: func.func private @batch_of_one_k3
// CHECK-SAME: flow.workgroup_extent = 12 : i64
// CHECK-NEXT: flow.reduce_sum %{{.*}} [3]
// CHECK-LABEL: func.func private @batch_of_one_k4
// CHECK-SAME: flow.workgroup_extent = 1 : i64
// CHECK-NEXT: flow.reduce_sum %{{.*}} [1]
// CHECK-LABEL: func.func private @batch_of_one_k5
// CHECK-SAME: flow.workgroup_extent = 1 : i64
// CHECK-NEXT: flow.reduce_sum %{{.*}} [0, 1]
// CHECK-LABEL: func.func private @batch_of_one_k6
// CHECK-SAME: flow.workgroup_extent = 1 : i64
// CHECK-NEXT: flow.relu
func.func @batch_of_one(%x: tensor<1x12x8x8xf32>, %one: tensor<1x1xf32>)
    -> (tensor<1x12x8x8xf32>, tensor<1x12x8x8xf32>, tensor<1x12x8x8xf32>,
        tensor<1x12x8xf32>, tensor<1x8x8xf32>, tensor<8x8xf32>, tensor<1x1xf32>) {
  %0 = flow.relu %x : tensor<1x12x8x8xf32>
  %1 = flow.softmax %x axis = 3 : tensor<1x12x8x8xf32>
  %2 = flow.softmax %x axis = 1 : tensor<1x12x8x8xf32>
  %3 = flow.reduce_sum %x [3] : tensor<1x12x8x8xf32> -> tensor<1x12x8xf32>
  %4 = flow.reduce_sum %x [1] : tensor<1x12x8x8xf32> -> tensor<1x8x8xf32>
  %5 = flow.reduce_sum %x [0, 1] : tensor<1x12x8x8xf32> -> tensor<8x8xf32>
  %6 = flow.relu %one : tensor<1x1xf32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<1x12x8x8xf32>, tensor<1x12x8x8xf32>, tensor<1x12x8x8xf32>,
      tensor<1x12x8xf32>, tensor<1x8x8xf32>, tensor<8x8xf32>, tensor<1x1xf32>
}
