// RUN: flow-opt %s -split-input-file --flow-fuse-conv-epilogues | FileCheck %s

// relu(conv + residual): the kernel becomes the convolution's epilogue and
// its function goes; the convolution moves past the residual's producer
// and writes the kernel's output.
// CHECK-LABEL: func.func @residual_relu
// CHECK-NOT: host.dispatch @add_relu
// CHECK: host.conv %arg0, %arg2 -> %[[R:.*]] strides
// CHECK: host.conv %arg0, %arg1 bias(%arg3 : memref<16xf32>) residual(%[[R]] : memref<1x16x4x4xf32>) -> %arg4 {{.*}} {relu}
// CHECK-NOT: func.func private @add_relu
func.func private @add_relu(%a: tensor<1x16x4x4xf32>, %b: tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32> attributes {flow.kernel, flow.workgroup_extent = 16 : i64} {
  %s = flow.add %b, %a : (tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  %r = flow.relu %s : tensor<1x16x4x4xf32>
  return %r : tensor<1x16x4x4xf32>
}
func.func @residual_relu(%x: memref<1x8x4x4xf32>, %w: memref<16x8x1x1xf32>, %w2: memref<16x8x1x1xf32>, %b: memref<16xf32>, %out: memref<1x16x4x4xf32>) attributes {flow.host_outputs = 1 : i64} {
  %t = host.alloc : memref<1x16x4x4xf32>
  host.conv %x, %w bias(%b : memref<16xf32>) -> %t strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : memref<1x8x4x4xf32>, memref<16x8x1x1xf32> -> memref<1x16x4x4xf32>
  %r = host.alloc : memref<1x16x4x4xf32>
  host.conv %x, %w2 -> %r strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : memref<1x8x4x4xf32>, memref<16x8x1x1xf32> -> memref<1x16x4x4xf32>
  host.dispatch @add_relu(%t, %r) outs(%out) : (memref<1x16x4x4xf32>, memref<1x16x4x4xf32>) -> (memref<1x16x4x4xf32>)
  return
}

// -----

// A relu alone, and an add alone, are epilogues too.
// CHECK-LABEL: func.func @relu_then_add
// CHECK: host.conv %arg0, %arg1 -> %[[T:.*]] strides {{.*}} {relu}
// CHECK: host.conv %[[T]], %arg2 residual(%[[T]] : {{.*}}) -> %arg3 strides
// CHECK-NOT: relu
// CHECK: return
func.func private @relu(%a: tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32> attributes {flow.kernel, flow.workgroup_extent = 16 : i64} {
  %r = flow.relu %a : tensor<1x16x4x4xf32>
  return %r : tensor<1x16x4x4xf32>
}
func.func private @add(%a: tensor<1x16x4x4xf32>, %b: tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32> attributes {flow.kernel, flow.workgroup_extent = 16 : i64} {
  %s = flow.add %a, %b : (tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  return %s : tensor<1x16x4x4xf32>
}
func.func @relu_then_add(%x: memref<1x8x4x4xf32>, %w: memref<16x8x1x1xf32>, %w2: memref<16x16x1x1xf32>, %out: memref<1x16x4x4xf32>) attributes {flow.host_outputs = 1 : i64} {
  %t = host.alloc : memref<1x16x4x4xf32>
  host.conv %x, %w -> %t strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : memref<1x8x4x4xf32>, memref<16x8x1x1xf32> -> memref<1x16x4x4xf32>
  %a = host.alloc : memref<1x16x4x4xf32>
  host.dispatch @relu(%t) outs(%a) : (memref<1x16x4x4xf32>) -> (memref<1x16x4x4xf32>)
  %u = host.alloc : memref<1x16x4x4xf32>
  host.conv %a, %w2 -> %u strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : memref<1x16x4x4xf32>, memref<16x16x1x1xf32> -> memref<1x16x4x4xf32>
  host.dispatch @add(%u, %a) outs(%out) : (memref<1x16x4x4xf32>, memref<1x16x4x4xf32>) -> (memref<1x16x4x4xf32>)
  return
}

// -----

// Left alone: a kernel that does more than add and relu (here a scale),
// a result another command also reads, an add of a broadcast operand, and
// a relu before the add (the library adds first).
// CHECK-LABEL: func.func @refused
// CHECK-COUNT-4: host.dispatch
// CHECK-NOT: residual(
// CHECK-NOT: {relu}
// CHECK: return
func.func private @scale(%a: tensor<1x16x4x4xf32>, %b: tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32> attributes {flow.kernel, flow.workgroup_extent = 16 : i64} {
  %s = flow.mul %a, %b : (tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  return %s : tensor<1x16x4x4xf32>
}
func.func private @relu2(%a: tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32> attributes {flow.kernel, flow.workgroup_extent = 16 : i64} {
  %r = flow.relu %a : tensor<1x16x4x4xf32>
  return %r : tensor<1x16x4x4xf32>
}
func.func private @bias(%a: tensor<1x16x4x4xf32>, %b: tensor<16x1x1xf32>) -> tensor<1x16x4x4xf32> attributes {flow.kernel, flow.workgroup_extent = 16 : i64} {
  %s = flow.add %a, %b : (tensor<1x16x4x4xf32>, tensor<16x1x1xf32>) -> tensor<1x16x4x4xf32>
  return %s : tensor<1x16x4x4xf32>
}
func.func private @relu_add(%a: tensor<1x16x4x4xf32>, %b: tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32> attributes {flow.kernel, flow.workgroup_extent = 16 : i64} {
  %r = flow.relu %a : tensor<1x16x4x4xf32>
  %s = flow.add %r, %b : (tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  return %s : tensor<1x16x4x4xf32>
}
func.func @refused(%x: memref<1x8x4x4xf32>, %w: memref<16x8x1x1xf32>, %b: memref<16x1x1xf32>, %o1: memref<1x16x4x4xf32>, %o2: memref<1x16x4x4xf32>, %o3: memref<1x16x4x4xf32>, %o4: memref<1x16x4x4xf32>) attributes {flow.host_outputs = 4 : i64} {
  %t = host.alloc : memref<1x16x4x4xf32>
  host.conv %x, %w -> %t strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : memref<1x8x4x4xf32>, memref<16x8x1x1xf32> -> memref<1x16x4x4xf32>
  host.dispatch @scale(%t, %t) outs(%o1) : (memref<1x16x4x4xf32>, memref<1x16x4x4xf32>) -> (memref<1x16x4x4xf32>)
  %u = host.alloc : memref<1x16x4x4xf32>
  host.conv %x, %w -> %u strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : memref<1x8x4x4xf32>, memref<16x8x1x1xf32> -> memref<1x16x4x4xf32>
  host.dispatch @relu2(%u) outs(%o2) : (memref<1x16x4x4xf32>) -> (memref<1x16x4x4xf32>)
  host.copy %u -> %o3 : memref<1x16x4x4xf32> -> memref<1x16x4x4xf32>
  %v = host.alloc : memref<1x16x4x4xf32>
  host.conv %x, %w -> %v strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : memref<1x8x4x4xf32>, memref<16x8x1x1xf32> -> memref<1x16x4x4xf32>
  host.dispatch @bias(%v, %b) outs(%o4) : (memref<1x16x4x4xf32>, memref<16x1x1xf32>) -> (memref<1x16x4x4xf32>)
  %y = host.alloc : memref<1x16x4x4xf32>
  host.conv %x, %w -> %y strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : memref<1x8x4x4xf32>, memref<16x8x1x1xf32> -> memref<1x16x4x4xf32>
  host.dispatch @relu_add(%y, %o2) outs(%o1) : (memref<1x16x4x4xf32>, memref<1x16x4x4xf32>) -> (memref<1x16x4x4xf32>)
  return
}
