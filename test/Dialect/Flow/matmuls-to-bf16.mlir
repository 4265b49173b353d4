// RUN: flow-opt %s --pass-pipeline='builtin.module(func.func(flow-matmuls-to-bf16))' | FileCheck %s

// Weights are read as bf16 (the runtime converts the f32 archive tensor at
// load), constants converted at compile time, views of them viewed again,
// other operands cast; the f32 operands nothing else reads are dropped.
// CHECK-LABEL: func.func @mixed
// CHECK: %[[X:.*]] = flow.cast %{{.*}} : tensor<8x16xf32> to tensor<8x16xbf16>
// CHECK: %[[W:.*]] = flow.parameter "w" : tensor<16x32xbf16>
// CHECK: flow.matmul %[[X]], %[[W]] {accumulate_f32} : (tensor<8x16xbf16>, tensor<16x32xbf16>) -> tensor<8x32xf32>
// CHECK: %[[C:.*]] = flow.constant dense<{{\[\[}}1.000000e+00, 1.000000e+00], [2.000000e+00, 3.140630e+00]]> : tensor<2x2xbf16>
// CHECK: %[[V:.*]] = flow.reshape %[[C]] : tensor<2x2xbf16> -> tensor<1x2x2xbf16>
// CHECK: flow.matmul %{{.*}}, %[[V]] {accumulate_f32, transpose_rhs}
// CHECK-NOT: tensor<16x32xf32>
// CHECK: return
func.func @mixed(%x: tensor<8x16xf32>, %z: tensor<4x2x2xf32>) -> (tensor<8x32xf32>, tensor<4x2x2xf32>) {
  %w = flow.parameter "w" : tensor<16x32xf32>
  %y = flow.matmul %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %c = flow.constant dense<[[1.0, 1.0], [2.0, 3.1415926]]> : tensor<2x2xf32>
  %v = flow.reshape %c : tensor<2x2xf32> -> tensor<1x2x2xf32>
  %p = flow.matmul %z, %v {transpose_rhs} : (tensor<4x2x2xf32>, tensor<1x2x2xf32>) -> tensor<4x2x2xf32>
  return %y, %p : tensor<8x32xf32>, tensor<4x2x2xf32>
}


// Products that are not f32 are left alone.
// CHECK-LABEL: func.func @integers
// CHECK: flow.matmul %{{.*}}, %{{.*}} : (tensor<2x2xi32>, tensor<2x2xi32>) -> tensor<2x2xi32>
func.func @integers(%a: tensor<2x2xi32>) -> tensor<2x2xi32> {
  %p = flow.matmul %a, %a : (tensor<2x2xi32>, tensor<2x2xi32>) -> tensor<2x2xi32>
  return %p : tensor<2x2xi32>
}
