// RUN: flow-opt %s -split-input-file -verify-diagnostics --flow-build-host-schedule | FileCheck %s
// RUN: flow-opt %s -split-input-file -verify-diagnostics --flow-build-host-schedule=bf16-convs=1 | FileCheck %s --check-prefix=BF16

// Inputs, then one buffer per output; each command writes a new buffer, or
// the output it is returned as (through a view when returned reshaped);
// constants, parameters and reshapes become buffers and views.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%[[X:.*]]: memref<256xf32>, %[[OUT:.*]]: memref<16x16xf32>)
// CHECK-SAME: flow.host_outputs = 1
// CHECK: %[[C:.*]] = host.constant dense<{{.*}}> : tensor<2xf32> : memref<2xf32>
// CHECK: %[[W:.*]] = host.parameter "w" : memref<4x4xf32>
// CHECK: %[[A:.*]] = host.alloc : memref<256xf32>
// CHECK: host.dispatch @ew(%[[X]], %[[C]]) outs(%[[A]]) {in_place_operands = array<i64: 0>} : (memref<256xf32>, memref<2xf32>) -> (memref<256xf32>)
// CHECK: %[[V:.*]] = host.view %[[A]] : memref<256xf32> -> memref<16x16xf32>
// CHECK: %[[P:.*]] = host.alloc : memref<4x4xf32>
// CHECK: host.gemm %[[W]], %[[W]] -> %[[P]] {transpose_rhs}
// CHECK: %[[O:.*]] = host.view %[[OUT]] : memref<16x16xf32> -> memref<256xf32>
// CHECK: host.dispatch @mix(%[[V]], %[[P]]) outs(%[[O]])
// CHECK-NEXT: return
func.func private @ew(tensor<256xf32>, tensor<2xf32>) -> tensor<256xf32>
func.func private @mix(tensor<16x16xf32>, tensor<4x4xf32>) -> tensor<256xf32>
func.func @chain(%x: tensor<256xf32>) -> tensor<16x16xf32> {
  %c = flow.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %w = flow.parameter "w" : tensor<4x4xf32>
  %a = call @ew(%x, %c) {flow.inplace_operands = array<i64: 0>} : (tensor<256xf32>, tensor<2xf32>) -> tensor<256xf32>
  %v = flow.reshape %a : tensor<256xf32> -> tensor<16x16xf32>
  %p = flow.matmul %w, %w {transpose_rhs} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %b = call @mix(%v, %p) : (tensor<16x16xf32>, tensor<4x4xf32>) -> tensor<256xf32>
  %r = flow.reshape %b : tensor<256xf32> -> tensor<16x16xf32>
  return %r : tensor<16x16xf32>
}

// -----

// A value returned twice is written into the first output and copied into
// the second; a returned input is copied.
// CHECK-LABEL: func.func @twice
// CHECK-SAME: (%[[X:.*]]: memref<4xf32>, %[[O0:.*]]: memref<4xf32>, %[[O1:.*]]: memref<4xf32>, %[[O2:.*]]: memref<4xf32>)
// CHECK-SAME: flow.host_outputs = 3
// CHECK: host.dispatch @k(%[[X]]) outs(%[[O0]])
// CHECK: host.copy %[[O0]] -> %[[O1]]
// CHECK: host.copy %[[X]] -> %[[O2]]
func.func private @k(tensor<4xf32>) -> tensor<4xf32>
func.func @twice(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a = call @k(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %a, %a, %x : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// The host runs commands only.
func.func @loose(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{the host cannot run 'flow.relu': it belongs in a kernel}}
  %r = flow.relu %x : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A collective needs a mesh function's device program.
flow.mesh @mesh [2]
func.func @lonely(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'flow.all_reduce' has no single-device lowering}}
  %r = flow.all_reduce sum %x on @mesh axes = [0] : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A library convolution becomes host.conv; with bf16-convs it is
// marked to run in bf16 (its buffers stay f32 here).
// CHECK-LABEL: func.func @conv
// CHECK: host.conv %arg0, %arg1 bias(%arg2 : memref<16xf32>) -> %arg3 strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1 : memref<1x8x6x6xf32>
// BF16-LABEL: func.func @conv
// BF16: host.conv %arg0, %arg1 bias(%arg2 : memref<16xf32>) -> %arg3 strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1 {bf16} : memref<1x8x6x6xf32>, memref<16x8x3x3xf32> -> memref<1x16x6x6xf32>
func.func @conv(%x: tensor<1x8x6x6xf32>, %w: tensor<16x8x3x3xf32>, %b: tensor<16xf32>) -> tensor<1x16x6x6xf32> {
  %y = flow.conv2d %x, %w, %b strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1 : (tensor<1x8x6x6xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<1x16x6x6xf32>
  return %y : tensor<1x16x6x6xf32>
}

// -----

// A device program's offsets are a buffer the runtime fills in, read by
// the kernel that slices at them.
// CHECK-LABEL: func.func @offsets
// CHECK: %[[O:.*]] = host.piece_offsets <[S(0)]> of [8, 6] : memref<2xi64>
// CHECK: host.dispatch @take(%{{.*}}, %[[O]])
flow.mesh @m [2]
func.func private @take(tensor<8x6xf32>, tensor<2xi64>) -> tensor<4x6xf32>
func.func @offsets(%x: tensor<8x6xf32>) -> tensor<4x6xf32>
    attributes {flow.mesh = @m, flow.ranks = array<i64: 0, 1>} {
  %o = flow.piece_offsets <[S(0)]> of [8, 6] : tensor<2xi64>
  %s = call @take(%x, %o) : (tensor<8x6xf32>, tensor<2xi64>) -> tensor<4x6xf32>
  return %s : tensor<4x6xf32>
}

// -----

// Attention is one library command, its mask an operand like any other.
// CHECK-LABEL: func.func @attention
// CHECK-SAME: (%[[Q:.*]]: memref<2x4x8x16xf32>, %[[M:.*]]: memref<2x1x1x8xi1>, %[[OUT:.*]]: memref<2x4x8x16xf32>)
// CHECK: host.attention %[[Q]], %[[Q]], %[[Q]] mask(%[[M]] : memref<2x1x1x8xi1>) -> %[[OUT]] scale = 2.500000e-01 {causal}
// CHECK-NEXT: return
func.func @attention(%q: tensor<2x4x8x16xf32>, %m: tensor<2x1x1x8xi1>) -> tensor<2x4x8x16xf32> {
  %o = flow.attention %q, %q, %q mask %m scale = 2.500000e-01 {causal}
      : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>,
         tensor<2x1x1x8xi1>) -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}
