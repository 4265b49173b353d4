// RUN: flow-opt %s -split-input-file --flow-choose-conv-layouts | FileCheck %s

// Buffers only convolutions touch, with channels a multiple of 16, are
// blocked; the caller's buffers, a buffer a kernel reads, and one of 24
// channels stay plain.
// CHECK-LABEL: func.func @chain
// CHECK: host.conv %arg0, %{{.*}} -> %[[A:.*]] strides {{.*}} {blocked_output, relu}
// CHECK: host.conv %[[A]], %{{.*}} residual(%[[A]] : {{.*}}) -> %[[B:.*]] strides {{.*}} {blocked_input, blocked_output, blocked_residual}
// CHECK: host.conv %[[B]], %{{.*}} -> %[[C:.*]] strides {{.*}} {blocked_input} :
// CHECK: host.dispatch @k(%[[C]])
// CHECK: host.conv %{{.*}}, %{{.*}} -> %[[D:.*]] strides {{.*}} groups = 1 :
// CHECK: host.conv %[[D]], %{{.*}} -> %arg{{[0-9]+}} strides {{.*}} groups = 1 :
func.func private @k(tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32> attributes {flow.kernel, flow.workgroup_extent = 16 : i64}
func.func @chain(%x: memref<1x8x4x4xf32>, %w1: memref<16x8x1x1xf32>, %w2: memref<16x16x1x1xf32>, %w3: memref<24x16x1x1xf32>, %w4: memref<16x24x1x1xf32>, %out: memref<1x16x4x4xf32>, %out2: memref<1x16x4x4xf32>) attributes {flow.host_outputs = 2 : i64} {
  %a = host.alloc : memref<1x16x4x4xf32>
  host.conv %x, %w1 -> %a strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 {relu} : memref<1x8x4x4xf32>, memref<16x8x1x1xf32> -> memref<1x16x4x4xf32>
  %b = host.alloc : memref<1x16x4x4xf32>
  host.conv %a, %w2 residual(%a : memref<1x16x4x4xf32>) -> %b strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : memref<1x16x4x4xf32>, memref<16x16x1x1xf32> -> memref<1x16x4x4xf32>
  %c = host.alloc : memref<1x16x4x4xf32>
  host.conv %b, %w2 -> %c strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : memref<1x16x4x4xf32>, memref<16x16x1x1xf32> -> memref<1x16x4x4xf32>
  host.dispatch @k(%c) outs(%out) : (memref<1x16x4x4xf32>) -> (memref<1x16x4x4xf32>)
  %d = host.alloc : memref<1x24x4x4xf32>
  host.conv %out, %w3 -> %d strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : memref<1x16x4x4xf32>, memref<24x16x1x1xf32> -> memref<1x24x4x4xf32>
  host.conv %d, %w4 -> %out2 strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : memref<1x24x4x4xf32>, memref<16x24x1x1xf32> -> memref<1x16x4x4xf32>
  return
}

// -----

// bf16 convolutions: the blocked buffers that only they touch hold bf16
// (%a, %b); one a f32 convolution also reads stays f32 (%c); plain buffers
// (the caller's, 24 channels) stay f32.
// CHECK-LABEL: func.func @bf16_chain
// CHECK: %[[A:.*]] = host.alloc : memref<1x16x4x4xbf16>
// CHECK: host.conv %arg0, %{{.*}} -> %[[A]] strides {{.*}} {bf16, blocked_output, relu} : memref<1x8x4x4xf32>, memref<16x8x1x1xf32> -> memref<1x16x4x4xbf16>
// CHECK: %[[B:.*]] = host.alloc : memref<1x16x4x4xbf16>
// CHECK: host.conv %[[A]], %{{.*}} residual(%[[A]] : memref<1x16x4x4xbf16>) -> %[[B]] strides {{.*}} {bf16, blocked_input, blocked_output, blocked_residual} : memref<1x16x4x4xbf16>, memref<16x16x1x1xf32> -> memref<1x16x4x4xbf16>
// CHECK: %[[C:.*]] = host.alloc : memref<1x16x4x4xf32>
// CHECK: host.conv %[[B]], %{{.*}} -> %[[C]] strides {{.*}} {bf16, blocked_input, blocked_output} : memref<1x16x4x4xbf16>, memref<16x16x1x1xf32> -> memref<1x16x4x4xf32>
// CHECK: host.conv %[[C]], %{{.*}} -> %arg{{[0-9]+}} strides {{.*}} {blocked_input} : memref<1x16x4x4xf32>
func.func @bf16_chain(%x: memref<1x8x4x4xf32>, %w1: memref<16x8x1x1xf32>, %w2: memref<16x16x1x1xf32>, %out: memref<1x16x4x4xf32>) attributes {flow.host_outputs = 1 : i64} {
  %a = host.alloc : memref<1x16x4x4xf32>
  host.conv %x, %w1 -> %a strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 {bf16, relu} : memref<1x8x4x4xf32>, memref<16x8x1x1xf32> -> memref<1x16x4x4xf32>
  %b = host.alloc : memref<1x16x4x4xf32>
  host.conv %a, %w2 residual(%a : memref<1x16x4x4xf32>) -> %b strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 {bf16} : memref<1x16x4x4xf32>, memref<16x16x1x1xf32> -> memref<1x16x4x4xf32>
  %c = host.alloc : memref<1x16x4x4xf32>
  host.conv %b, %w2 -> %c strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 {bf16} : memref<1x16x4x4xf32>, memref<16x16x1x1xf32> -> memref<1x16x4x4xf32>
  host.conv %c, %w2 -> %out strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : memref<1x16x4x4xf32>, memref<16x16x1x1xf32> -> memref<1x16x4x4xf32>
  return
}

// -----

// A pool between convolutions keeps their layout: its buffers are blocked,
// and with bf16 convolutions held in bf16. A pool's output a kernel reads
// stays plain f32 (an average pool's here).
// CHECK-LABEL: func.func @pools
// CHECK: %[[A:.*]] = host.alloc : memref<1x16x8x8xbf16>
// CHECK: host.conv %arg0, %{{.*}} -> %[[A]] strides {{.*}} {bf16, blocked_output}
// CHECK: %[[B:.*]] = host.alloc : memref<1x16x4x4xbf16>
// CHECK: host.max_pool %[[A]] -> %[[B]] {{.*}} {blocked_input, blocked_output} : memref<1x16x8x8xbf16> -> memref<1x16x4x4xbf16>
// CHECK: host.conv %[[B]], %{{.*}} -> %[[C:.*]] strides {{.*}} {bf16, blocked_input, blocked_output}
// CHECK: %[[D:.*]] = host.alloc : memref<1x16x2x2xf32>
// CHECK: host.avg_pool %[[C]] -> %[[D]] {{.*}} {blocked_input} : memref<1x16x4x4xbf16> -> memref<1x16x2x2xf32>
// CHECK: host.dispatch @k(%[[D]])
func.func private @k(tensor<1x16x2x2xf32>) -> tensor<1x16x2x2xf32> attributes {flow.kernel, flow.workgroup_extent = 16 : i64}
func.func @pools(%x: memref<1x8x8x8xf32>, %w1: memref<16x8x1x1xf32>, %w2: memref<16x16x1x1xf32>, %out: memref<1x16x2x2xf32>) attributes {flow.host_outputs = 1 : i64} {
  %a = host.alloc : memref<1x16x8x8xf32>
  host.conv %x, %w1 -> %a strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 {bf16} : memref<1x8x8x8xf32>, memref<16x8x1x1xf32> -> memref<1x16x8x8xf32>
  %b = host.alloc : memref<1x16x4x4xf32>
  host.max_pool %a -> %b kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1] : memref<1x16x8x8xf32> -> memref<1x16x4x4xf32>
  %c = host.alloc : memref<1x16x4x4xf32>
  host.conv %b, %w2 -> %c strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 {bf16} : memref<1x16x4x4xf32>, memref<16x16x1x1xf32> -> memref<1x16x4x4xf32>
  %d = host.alloc : memref<1x16x2x2xf32>
  host.avg_pool %c -> %d kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] : memref<1x16x4x4xf32> -> memref<1x16x2x2xf32>
  host.dispatch @k(%d) outs(%out) : (memref<1x16x2x2xf32>) -> (memref<1x16x2x2xf32>)
  return
}
