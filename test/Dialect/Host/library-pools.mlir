// RUN: flow-opt %s -split-input-file --flow-library-pools | FileCheck %s

// A pooling kernel between convolutions runs on the runtime; its function
// goes.
// CHECK-LABEL: func.func @between_convolutions
// CHECK: host.conv %arg0, %arg1 -> %[[T:.*]] strides
// CHECK: host.max_pool %[[T]] -> %[[P:.*]] kernel = [3, 3] strides = [2, 2] padding = [1, 1, 1, 1] dilations = [1, 1] : memref<1x16x8x8xf32> -> memref<1x16x4x4xf32>
// CHECK: host.conv %[[P]], %arg2 -> %arg3 strides
// CHECK-NOT: host.dispatch
// CHECK-NOT: func.func private @pool
func.func private @pool(%a: tensor<1x16x8x8xf32>) -> tensor<1x16x4x4xf32> attributes {flow.kernel, flow.workgroup_extent = 16 : i64} {
  %p = flow.max_pool2d %a kernel = [3, 3] strides = [2, 2] padding = [1, 1, 1, 1] dilations = [1, 1] : tensor<1x16x8x8xf32> -> tensor<1x16x4x4xf32>
  return %p : tensor<1x16x4x4xf32>
}
func.func @between_convolutions(%x: memref<1x8x8x8xf32>, %w: memref<16x8x1x1xf32>, %w2: memref<16x16x1x1xf32>, %out: memref<1x16x4x4xf32>) attributes {flow.host_outputs = 1 : i64} {
  %t = host.alloc : memref<1x16x8x8xf32>
  host.conv %x, %w -> %t strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : memref<1x8x8x8xf32>, memref<16x8x1x1xf32> -> memref<1x16x8x8xf32>
  %p = host.alloc : memref<1x16x4x4xf32>
  host.dispatch @pool(%t) outs(%p) : (memref<1x16x8x8xf32>) -> (memref<1x16x4x4xf32>)
  host.conv %p, %w2 -> %out strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : memref<1x16x4x4xf32>, memref<16x16x1x1xf32> -> memref<1x16x4x4xf32>
  return
}

// -----

// A pool after a pool after a convolution, and a pool of the caller's
// input feeding a convolution (ceil mode: the output shape says so), run
// on the runtime too.
// CHECK-LABEL: func.func @chains
// CHECK: host.max_pool %arg0 -> %[[A:.*]] kernel = [2, 2] strides = [2, 2]
// CHECK: host.conv %[[A]], %arg1 -> %[[B:.*]] strides
// CHECK: host.max_pool %[[B]] -> %[[C:.*]] kernel = [2, 2]
// CHECK: host.max_pool %[[C]] -> %arg2 kernel = [2, 2]
// CHECK-NOT: func.func private
func.func private @ceil(%a: tensor<1x16x9x9xf32>) -> tensor<1x16x5x5xf32> attributes {flow.kernel, flow.workgroup_extent = 16 : i64} {
  %p = flow.max_pool2d %a kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1] {ceil_mode} : tensor<1x16x9x9xf32> -> tensor<1x16x5x5xf32>
  return %p : tensor<1x16x5x5xf32>
}
func.func private @half(%a: tensor<1x16x5x5xf32>) -> tensor<1x16x2x2xf32> attributes {flow.kernel, flow.workgroup_extent = 16 : i64} {
  %p = flow.max_pool2d %a kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1] : tensor<1x16x5x5xf32> -> tensor<1x16x2x2xf32>
  return %p : tensor<1x16x2x2xf32>
}
func.func private @again(%a: tensor<1x16x2x2xf32>) -> tensor<1x16x1x1xf32> attributes {flow.kernel, flow.workgroup_extent = 16 : i64} {
  %p = flow.max_pool2d %a kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1] : tensor<1x16x2x2xf32> -> tensor<1x16x1x1xf32>
  return %p : tensor<1x16x1x1xf32>
}
func.func @chains(%x: memref<1x16x9x9xf32>, %w: memref<16x16x1x1xf32>, %out: memref<1x16x1x1xf32>) attributes {flow.host_outputs = 1 : i64} {
  %a = host.alloc : memref<1x16x5x5xf32>
  host.dispatch @ceil(%x) outs(%a) : (memref<1x16x9x9xf32>) -> (memref<1x16x5x5xf32>)
  %b = host.alloc : memref<1x16x5x5xf32>
  host.conv %a, %w -> %b strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : memref<1x16x5x5xf32>, memref<16x16x1x1xf32> -> memref<1x16x5x5xf32>
  %c = host.alloc : memref<1x16x2x2xf32>
  host.dispatch @half(%b) outs(%c) : (memref<1x16x5x5xf32>) -> (memref<1x16x2x2xf32>)
  host.dispatch @again(%c) outs(%out) : (memref<1x16x2x2xf32>) -> (memref<1x16x1x1xf32>)
  return
}

// -----

// Pools that stay kernels: one whose buffers no convolution touches, one
// fused with another op, one on integers; a kernel another dispatch still
// runs stays.
// CHECK: func.func private @pool(
// CHECK-LABEL: func.func @stay
// CHECK: host.dispatch @pool(%arg0)
// CHECK: host.dispatch @pool_relu(
// CHECK: host.dispatch @pool_int(
// CHECK: host.max_pool %{{.*}} -> %arg6
func.func private @pool(%a: tensor<1x16x8x8xf32>) -> tensor<1x16x4x4xf32> attributes {flow.kernel, flow.workgroup_extent = 16 : i64} {
  %p = flow.max_pool2d %a kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1] : tensor<1x16x8x8xf32> -> tensor<1x16x4x4xf32>
  return %p : tensor<1x16x4x4xf32>
}
func.func private @pool_relu(%a: tensor<1x16x8x8xf32>) -> tensor<1x16x4x4xf32> attributes {flow.kernel, flow.workgroup_extent = 16 : i64} {
  %p = flow.max_pool2d %a kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1] : tensor<1x16x8x8xf32> -> tensor<1x16x4x4xf32>
  %r = flow.relu %p : tensor<1x16x4x4xf32>
  return %r : tensor<1x16x4x4xf32>
}
func.func private @pool_int(%a: tensor<1x16x8x8xi32>) -> tensor<1x16x4x4xi32> attributes {flow.kernel, flow.workgroup_extent = 16 : i64} {
  %p = flow.max_pool2d %a kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1] : tensor<1x16x8x8xi32> -> tensor<1x16x4x4xi32>
  return %p : tensor<1x16x4x4xi32>
}
func.func @stay(%x: memref<1x16x8x8xf32>, %i: memref<1x16x8x8xi32>, %w: memref<16x16x1x1xf32>, %o1: memref<1x16x4x4xf32>, %o2: memref<1x16x4x4xf32>, %o3: memref<1x16x4x4xi32>, %o4: memref<1x16x4x4xf32>) attributes {flow.host_outputs = 4 : i64} {
  host.dispatch @pool(%x) outs(%o1) : (memref<1x16x8x8xf32>) -> (memref<1x16x4x4xf32>)
  %t = host.alloc : memref<1x16x8x8xf32>
  host.conv %x, %w -> %t strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : memref<1x16x8x8xf32>, memref<16x16x1x1xf32> -> memref<1x16x8x8xf32>
  host.dispatch @pool_relu(%t) outs(%o2) : (memref<1x16x8x8xf32>) -> (memref<1x16x4x4xf32>)
  host.dispatch @pool_int(%i) outs(%o3) : (memref<1x16x8x8xi32>) -> (memref<1x16x4x4xi32>)
  host.dispatch @pool(%t) outs(%o4) : (memref<1x16x8x8xf32>) -> (memref<1x16x4x4xf32>)
  return
}

// -----

// An average pool between convolutions runs on the runtime too, with its
// divisor's rule.
// CHECK-LABEL: func.func @average
// CHECK: host.avg_pool %{{.*}} -> %[[P:.*]] kernel = [3, 3] strides = [2, 2] padding = [1, 1, 1, 1] {count_include_pad} : memref<1x16x8x8xf32> -> memref<1x16x4x4xf32>
// CHECK: host.conv %[[P]]
// CHECK-NOT: func.func private @avg
func.func private @avg(%a: tensor<1x16x8x8xf32>) -> tensor<1x16x4x4xf32> attributes {flow.kernel, flow.workgroup_extent = 16 : i64} {
  %p = flow.avg_pool2d %a kernel = [3, 3] strides = [2, 2] padding = [1, 1, 1, 1] {count_include_pad} : tensor<1x16x8x8xf32> -> tensor<1x16x4x4xf32>
  return %p : tensor<1x16x4x4xf32>
}
func.func @average(%x: memref<1x8x8x8xf32>, %w: memref<16x8x1x1xf32>, %w2: memref<16x16x1x1xf32>, %out: memref<1x16x4x4xf32>) attributes {flow.host_outputs = 1 : i64} {
  %t = host.alloc : memref<1x16x8x8xf32>
  host.conv %x, %w -> %t strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : memref<1x8x8x8xf32>, memref<16x8x1x1xf32> -> memref<1x16x8x8xf32>
  %p = host.alloc : memref<1x16x4x4xf32>
  host.dispatch @avg(%t) outs(%p) : (memref<1x16x8x8xf32>) -> (memref<1x16x4x4xf32>)
  host.conv %p, %w2 -> %out strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : memref<1x16x4x4xf32>, memref<16x16x1x1xf32> -> memref<1x16x4x4xf32>
  return
}
