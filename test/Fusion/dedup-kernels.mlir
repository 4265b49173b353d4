// RUN: flow-opt %s --flow-dedup-kernels | FileCheck %s

// @f_k1 is @f_k0 under another name (the fusion note aside): its call goes
// to @f_k0, which records that it stands for @f_k1; @f_k2 differs (an
// other op) and stays.
// CHECK-LABEL: func.func @f
// CHECK: %[[A:.*]] = call @f_k0(%{{.*}})
// CHECK: %[[B:.*]] = call @f_k0(%[[A]])
// CHECK: call @f_k2(%[[B]])
// CHECK: func.func private @f_k0{{.*}} attributes {flow.kernel, flow.merged_kernels = ["f_k1"], flow.workgroup_extent = 8 : i64}
// CHECK-NOT: @f_k1
// CHECK: func.func private @f_k2
func.func @f(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %0 = call @f_k0(%x) : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %1 = call @f_k1(%0) : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %2 = call @f_k2(%1) : (tensor<8x4xf32>) -> tensor<8x4xf32>
  return %2 : tensor<8x4xf32>
}
func.func private @f_k0(%a: tensor<8x4xf32>) -> tensor<8x4xf32> attributes {flow.kernel, flow.workgroup_extent = 8 : i64} {
  %0 = flow.relu %a : tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
func.func private @f_k1(%a: tensor<8x4xf32>) -> tensor<8x4xf32> attributes {flow.kernel, flow.workgroup_extent = 8 : i64} {
  %0 = flow.relu %a {flow.fusion_refused = "it starts a kernel"} : tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
func.func private @f_k2(%a: tensor<8x4xf32>) -> tensor<8x4xf32> attributes {flow.kernel, flow.workgroup_extent = 8 : i64} {
  %0 = flow.neg %a : tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
