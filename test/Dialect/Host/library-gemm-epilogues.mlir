// RUN: flow-opt %s -split-input-file --flow-library-gemm-epilogues | FileCheck %s

// relu(x @ w + b): the GEMM library applies the bias and the relu as it
// writes the kernel's output; the kernel goes.
// CHECK-LABEL: func.func @bias_relu
// CHECK: host.gemm %arg0, %arg1 bias(%arg2 : memref<32xf32>) -> %arg3 activation = relu
// CHECK-NOT: host.dispatch
// CHECK-NOT: @bias_relu_k0
func.func @bias_relu(%x: memref<8x16xf32>, %w: memref<16x32xf32>, %b: memref<32xf32>, %out: memref<8x32xf32>) attributes {flow.host_outputs = 1 : i64} {
  %t = host.alloc : memref<8x32xf32>
  host.gemm %x, %w -> %t : memref<8x16xf32>, memref<16x32xf32> -> memref<8x32xf32>
  host.dispatch @bias_relu_k0(%t, %b) outs(%out) : (memref<8x32xf32>, memref<32xf32>) -> (memref<8x32xf32>)
  return
}
func.func private @bias_relu_k0(%t: tensor<8x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> attributes {flow.kernel, flow.workgroup_extent = 8 : i64} {
  %s = flow.add %t, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %r = flow.relu %s : tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

// The bias alone (added from either side), GELU's tanh form alone, and a
// batched GEMM: one bias per column of every matrix. The kernel both GEMMs
// ran goes once neither runs it.
// CHECK-LABEL: func.func @bias_and_gelu
// CHECK: host.gemm %arg0, %arg1 bias(%arg2 : memref<32xf32>) -> %[[T:.*]] :
// CHECK: host.gemm %[[T]], %arg3 -> %[[U:.*]] activation = gelu_tanh
// CHECK: host.gemm %[[U]], %arg1 bias(%arg2 : memref<32xf32>) -> %arg4 :
// CHECK-NOT: host.dispatch
// CHECK-NOT: @bias_k0
// CHECK-NOT: @gelu_k1
func.func @bias_and_gelu(%x: memref<2x4x32xf32>, %w: memref<32x32xf32>, %b: memref<32xf32>, %v: memref<32x32xf32>, %out: memref<2x4x32xf32>) attributes {flow.host_outputs = 1 : i64} {
  %t0 = host.alloc : memref<2x4x32xf32>
  host.gemm %x, %w -> %t0 : memref<2x4x32xf32>, memref<32x32xf32> -> memref<2x4x32xf32>
  %t = host.alloc : memref<2x4x32xf32>
  host.dispatch @bias_k0(%b, %t0) outs(%t) : (memref<32xf32>, memref<2x4x32xf32>) -> (memref<2x4x32xf32>)
  %u0 = host.alloc : memref<2x4x32xf32>
  host.gemm %t, %v -> %u0 : memref<2x4x32xf32>, memref<32x32xf32> -> memref<2x4x32xf32>
  %u = host.alloc : memref<2x4x32xf32>
  host.dispatch @gelu_k1(%u0) outs(%u) : (memref<2x4x32xf32>) -> (memref<2x4x32xf32>)
  %y0 = host.alloc : memref<2x4x32xf32>
  host.gemm %u, %w -> %y0 : memref<2x4x32xf32>, memref<32x32xf32> -> memref<2x4x32xf32>
  host.dispatch @bias_k0(%b, %y0) outs(%out) : (memref<32xf32>, memref<2x4x32xf32>) -> (memref<2x4x32xf32>)
  return
}
func.func private @bias_k0(%b: tensor<32xf32>, %t: tensor<2x4x32xf32>) -> tensor<2x4x32xf32> attributes {flow.kernel, flow.workgroup_extent = 2 : i64} {
  %s = flow.add %b, %t : (tensor<32xf32>, tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  return %s : tensor<2x4x32xf32>
}
func.func private @gelu_k1(%t: tensor<2x4x32xf32>) -> tensor<2x4x32xf32> attributes {flow.kernel, flow.workgroup_extent = 2 : i64} {
  %g = flow.gelu %t approximate = tanh : tensor<2x4x32xf32>
  return %g : tensor<2x4x32xf32>
}

// -----

// Not epilogues: the exact GELU (cuBLASLt's is the tanh form), a bias of
// the wrong extent (a row vector), more than an epilogue (softmax after the
// bias), an activation before the bias, and a result something else reads
// too. Every kernel stays.
// CHECK-LABEL: func.func @not_epilogues
// CHECK-NOT: bias(
// CHECK-NOT: activation
// CHECK-COUNT-5: host.dispatch
func.func private @gelu_erf(%t: tensor<8x32xf32>) -> tensor<8x32xf32> attributes {flow.kernel} {
  %g = flow.gelu %t : tensor<8x32xf32>
  return %g : tensor<8x32xf32>
}
func.func private @row_bias(%t: tensor<8x32xf32>, %c: tensor<8x1xf32>) -> tensor<8x32xf32> attributes {flow.kernel} {
  %s = flow.add %t, %c : (tensor<8x32xf32>, tensor<8x1xf32>) -> tensor<8x32xf32>
  return %s : tensor<8x32xf32>
}
func.func private @bias_softmax(%t: tensor<8x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> attributes {flow.kernel} {
  %s = flow.add %t, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %p = flow.softmax %s axis = 1 : tensor<8x32xf32>
  return %p : tensor<8x32xf32>
}
func.func private @relu_bias(%t: tensor<8x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> attributes {flow.kernel} {
  %r = flow.relu %t : tensor<8x32xf32>
  %s = flow.add %r, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  return %s : tensor<8x32xf32>
}
func.func private @relu(%t: tensor<8x32xf32>) -> tensor<8x32xf32> attributes {flow.kernel} {
  %r = flow.relu %t : tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}
func.func @not_epilogues(%x: memref<8x16xf32>, %w: memref<16x32xf32>, %b: memref<32xf32>, %c: memref<8x1xf32>, %o1: memref<8x32xf32>, %o2: memref<8x32xf32>, %o3: memref<8x32xf32>, %o4: memref<8x32xf32>, %o5: memref<8x32xf32>, %o6: memref<8x32xf32>) attributes {flow.host_outputs = 6 : i64} {
  %t1 = host.alloc : memref<8x32xf32>
  host.gemm %x, %w -> %t1 : memref<8x16xf32>, memref<16x32xf32> -> memref<8x32xf32>
  host.dispatch @gelu_erf(%t1) outs(%o1) : (memref<8x32xf32>) -> (memref<8x32xf32>)
  %t2 = host.alloc : memref<8x32xf32>
  host.gemm %x, %w -> %t2 : memref<8x16xf32>, memref<16x32xf32> -> memref<8x32xf32>
  host.dispatch @row_bias(%t2, %c) outs(%o2) : (memref<8x32xf32>, memref<8x1xf32>) -> (memref<8x32xf32>)
  %t3 = host.alloc : memref<8x32xf32>
  host.gemm %x, %w -> %t3 : memref<8x16xf32>, memref<16x32xf32> -> memref<8x32xf32>
  host.dispatch @bias_softmax(%t3, %b) outs(%o3) : (memref<8x32xf32>, memref<32xf32>) -> (memref<8x32xf32>)
  %t4 = host.alloc : memref<8x32xf32>
  host.gemm %x, %w -> %t4 : memref<8x16xf32>, memref<16x32xf32> -> memref<8x32xf32>
  host.dispatch @relu_bias(%t4, %b) outs(%o4) : (memref<8x32xf32>, memref<32xf32>) -> (memref<8x32xf32>)
  %t5 = host.alloc : memref<8x32xf32>
  host.gemm %x, %w -> %t5 : memref<8x16xf32>, memref<16x32xf32> -> memref<8x32xf32>
  host.dispatch @relu(%t5) outs(%o5) : (memref<8x32xf32>) -> (memref<8x32xf32>)
  host.copy %t5 -> %o6 : memref<8x32xf32> -> memref<8x32xf32>
  return
}

// -----

// An f16 GEMM takes an f16 bias (the result's type); an f32 bias of an f16
// result is not an epilogue the library applies.
// CHECK-LABEL: func.func @f16_bias
// CHECK: host.gemm %arg0, %arg1 bias(%arg2 : memref<32xf16>) -> %arg4 activation = relu
// CHECK: host.gemm %arg0, %arg1 -> %[[T:.*]] :
// CHECK: host.dispatch @f16_f32_bias(%[[T]], %arg3)
func.func private @f16_bias_relu(%t: tensor<8x32xf16>, %b: tensor<32xf16>) -> tensor<8x32xf16> attributes {flow.kernel} {
  %s = flow.add %t, %b : (tensor<8x32xf16>, tensor<32xf16>) -> tensor<8x32xf16>
  %r = flow.relu %s : tensor<8x32xf16>
  return %r : tensor<8x32xf16>
}
func.func private @f16_f32_bias(%t: tensor<8x32xf16>, %b: tensor<32xf32>) -> tensor<8x32xf32> attributes {flow.kernel} {
  %w = flow.cast %t : tensor<8x32xf16> to tensor<8x32xf32>
  %s = flow.add %w, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  return %s : tensor<8x32xf32>
}
func.func @f16_bias(%x: memref<8x16xf16>, %w: memref<16x32xf16>, %b: memref<32xf16>, %b32: memref<32xf32>, %o1: memref<8x32xf16>, %o2: memref<8x32xf32>) attributes {flow.host_outputs = 2 : i64} {
  %t1 = host.alloc : memref<8x32xf16>
  host.gemm %x, %w -> %t1 : memref<8x16xf16>, memref<16x32xf16> -> memref<8x32xf16>
  host.dispatch @f16_bias_relu(%t1, %b) outs(%o1) : (memref<8x32xf16>, memref<32xf16>) -> (memref<8x32xf16>)
  %t2 = host.alloc : memref<8x32xf16>
  host.gemm %x, %w -> %t2 : memref<8x16xf16>, memref<16x32xf16> -> memref<8x32xf16>
  host.dispatch @f16_f32_bias(%t2, %b32) outs(%o2) : (memref<8x32xf16>, memref<32xf32>) -> (memref<8x32xf32>)
  return
}

// -----

// An empty product (k = 0) is only cleared, never handed to the library:
// its bias stays a kernel.
// CHECK-LABEL: func.func @empty_product
// CHECK: host.gemm %arg0, %arg1 -> %[[T:.*]] :
// CHECK: host.dispatch @empty_bias(%[[T]], %arg2)
func.func private @empty_bias(%t: tensor<8x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> attributes {flow.kernel} {
  %s = flow.add %t, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  return %s : tensor<8x32xf32>
}
func.func @empty_product(%x: memref<8x0xf32>, %w: memref<0x32xf32>, %b: memref<32xf32>, %out: memref<8x32xf32>) attributes {flow.host_outputs = 1 : i64} {
  %t = host.alloc : memref<8x32xf32>
  host.gemm %x, %w -> %t : memref<8x0xf32>, memref<0x32xf32> -> memref<8x32xf32>
  host.dispatch @empty_bias(%t, %b) outs(%out) : (memref<8x32xf32>, memref<32xf32>) -> (memref<8x32xf32>)
  return
}
