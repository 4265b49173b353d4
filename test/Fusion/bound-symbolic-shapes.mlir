// A symbolic program at its upper bounds: kernels count their rows from the
// call's size symbols, a library matmul carries its rows' extent, the
// signature keeps its symbolic types.
// RUN: flow-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(flow-form-dispatch-regions),flow-outline-kernels,flow-bound-symbolic-shapes)' | FileCheck %s

!x = tensor<?x16xf32, #flow.shape<[batch, 16]>>
!h = tensor<?x8xf32, #flow.shape<[batch, 8]>>
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: (%[[X:.*]]: tensor<64x16xf32> {flow.symbolic_type = tensor<?x16xf32, #flow.shape<[batch, 16]>>}, %[[W:.*]]: tensor<16x8xf32>, %[[B:.*]]: tensor<8xf32>)
// CHECK-SAME: -> (tensor<64x8xf32> {flow.symbolic_type = tensor<?x8xf32, #flow.shape<[batch, 8]>>})
// CHECK: %[[SIZES:.*]] = flow.symbols : tensor<1xi64>
// CHECK: %[[M:.*]] = flow.matmul %[[X]], %[[W]] {flow.rows = "batch"} : (tensor<64x16xf32>, tensor<16x8xf32>) -> tensor<64x8xf32>
// CHECK: call @mlp_k0(%[[M]], %[[B]], %[[SIZES]]) {{.*}}: (tensor<64x8xf32>, tensor<8xf32>, tensor<1xi64>) -> tensor<64x8xf32>
// CHECK: func.func private @mlp_k0(%{{.*}}: tensor<64x8xf32>, %{{.*}}: tensor<8xf32>, %{{.*}}: tensor<1xi64>) -> tensor<64x8xf32>
// CHECK-SAME: flow.dims = [#flow.dim<"batch", 1, 64>], flow.kernel, flow.row_extent = "batch", flow.workgroup_extent = 64
func.func @mlp(%x: !x, %w: tensor<16x8xf32>, %b: tensor<8xf32>) -> !h
    attributes {flow.dims = [#flow.dim<"batch", 1, 64>]} {
  %m = flow.matmul %x, %w : (!x, tensor<16x8xf32>) -> !h
  %a = flow.add %m, %b : (!h, tensor<8xf32>) -> !h
  %r = flow.relu %a : !h
  return %r : !h
}

// -----

// Rows that are an expression of the symbols, reached through a reshape (a
// view on the host); a kernel without symbolic shapes is left alone.
// CHECK-LABEL: func.func @reshaped
// CHECK: flow.reshape %{{.*}} : tensor<8x4xf32> -> tensor<32xf32>
// CHECK: func.func private @reshaped_k0(%{{.*}}: tensor<32xf32>, %{{.*}}: tensor<1xi64>)
// CHECK-SAME: flow.row_extent = "4*n"
// CHECK: func.func private @reshaped_k1(%{{.*}}: tensor<3xf32>) -> tensor<3xf32>
// CHECK-NOT: flow.row_extent
func.func @reshaped(%x: tensor<?x4xf32, #flow.shape<[n, 4]>>, %y: tensor<3xf32>) -> (tensor<?xf32, #flow.shape<[4*n]>>, tensor<3xf32>)
    attributes {flow.dims = [#flow.dim<"n", 2, 8>]} {
  %f = flow.reshape %x : tensor<?x4xf32, #flow.shape<[n, 4]>> -> tensor<?xf32, #flow.shape<[4*n]>>
  %e = flow.exp %f : tensor<?xf32, #flow.shape<[4*n]>>
  %t = flow.tanh %y : tensor<3xf32>
  return %e, %t : tensor<?xf32, #flow.shape<[4*n]>>, tensor<3xf32>
}

// -----

// Fused attention counts its batch per call; a convolution in a kernel
// splits it over workgroups (a library one counts it too, as flow-compile
// runs it).
// CHECK-LABEL: func.func @library
// CHECK: flow.attention {{.*}} {flow.rows = "n"} : {{.*}} -> tensor<4x2x3x8xf32>
// CHECK: func.func private @library_k0(%{{.*}}: tensor<4x1x4x4xf32>, %{{.*}}: tensor<2x1x1x1xf32>, %{{.*}}: tensor<1xi64>)
// CHECK-SAME: flow.row_extent = "n"
// CHECK: flow.conv2d {{.*}} -> tensor<4x2x4x4xf32>
!img = tensor<?x1x4x4xf32, #flow.shape<[n, 1, 4, 4]>>
!act = tensor<?x2x4x4xf32, #flow.shape<[n, 2, 4, 4]>>
!q = tensor<?x2x3x8xf32, #flow.shape<[n, 2, 3, 8]>>
func.func @library(%x: !img, %w: tensor<2x1x1x1xf32>, %q: !q) -> (!act, !q)
    attributes {flow.dims = [#flow.dim<"n", 1, 4>]} {
  %c = flow.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1
      : (!img, tensor<2x1x1x1xf32>) -> !act
  %a = flow.attention %q, %q, %q scale = 2.500000e-01 : (!q, !q, !q) -> !q
  return %c, %a : !act, !q
}
