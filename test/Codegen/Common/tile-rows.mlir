// RUN: flow-opt %s -split-input-file --flow-kernel-linalg-pipeline | FileCheck %s
// RUN: flow-opt %s -split-input-file --flow-kernel-linalg-pipeline --flow-kernel-bufferize-pipeline | FileCheck %s --check-prefix=BUF

// A softmax with its prologue is tiled by rows (the trailing dimension it
// reduces is whole in each tile), and every producer is fused into the
// tile: nothing but the tile loop is left at the top.
// CHECK-LABEL: func.func private @softmax
// CHECK-NOT: linalg.generic
// CHECK: scf.forall (%{{.*}}, %{{.*}}) in (4, 6) shared_outs
// CHECK-COUNT-4: linalg.generic
// CHECK: scf.forall.in_parallel
// CHECK-NOT: linalg.generic
// CHECK: return
// After bufferization the tile's row buffers are stack scratch at the
// entry, and the workgroups still split the rows.
// BUF-LABEL: func.func private @softmax
// BUF-SAME: flow.max_workgroups = 4
// BUF: memref.alloca() {{.*}}flow.scratch{{.*}} : memref<1x1x32xf32>
// BUF: memref.alloca() {{.*}}flow.scratch{{.*}} : memref<1x1xf32>
// BUF: scf.parallel
// BUF-NOT: memref.alloc(
func.func private @softmax(%x: tensor<4x6x32xf32>) -> tensor<4x6x32xf32> attributes {flow.kernel, flow.workgroup_extent = 4 : i64} {
  %c = flow.constant dense<0.5> : tensor<f32>
  %s = flow.mul %x, %c : (tensor<4x6x32xf32>, tensor<f32>) -> tensor<4x6x32xf32>
  %y = flow.softmax %s axis = 2 : tensor<4x6x32xf32>
  return %y : tensor<4x6x32xf32>
}

// -----

// A leading dimension of one (batch-1 attention): tiling folds it away,
// so the tile loop's result is reshaped back to the kernel's. The result
// is still written in place (no buffer of its own, no copy), and the
// workgroups still split the rows.
// CHECK-LABEL: func.func private @softmax_batch_one
// CHECK: scf.forall (%{{.*}}, %{{.*}}) in (12, 16) shared_outs
// CHECK: tensor.expand_shape
// BUF-LABEL: func.func private @softmax_batch_one
// BUF-SAME: flow.max_workgroups = 12
// BUF-NOT: memref.alloc(
// BUF-NOT: memref.copy
// BUF: return
func.func private @softmax_batch_one(%x: tensor<1x12x16x16xf32>) -> tensor<1x12x16x16xf32> attributes {flow.kernel, flow.workgroup_extent = 12 : i64} {
  %y = flow.softmax %x axis = 3 : tensor<1x12x16x16xf32>
  return %y : tensor<1x12x16x16xf32>
}

// -----

// A layer norm over the two trailing dimensions: tiles of one row of 4x8.
// CHECK-LABEL: func.func private @layer_norm
// CHECK: scf.forall (%{{.*}}) in (3) shared_outs
// BUF-LABEL: func.func private @layer_norm
// BUF-SAME: flow.max_workgroups = 3
func.func private @layer_norm(%x: tensor<3x4x8xf32>) -> tensor<3x4x8xf32> attributes {flow.kernel, flow.workgroup_extent = 3 : i64} {
  %y = flow.layer_norm %x axis = 1 epsilon = 1.0e-05 : (tensor<3x4x8xf32>) -> tensor<3x4x8xf32>
  return %y : tensor<3x4x8xf32>
}

// -----

// A softmax with the row maximum that zeroes rows masked throughout (as
// attention computes it): both reductions run in the row's tile.
// CHECK-LABEL: func.func private @safe_softmax
// CHECK-NOT: linalg.generic
// CHECK: scf.forall (%{{.*}}) in (4) shared_outs
// CHECK: scf.forall.in_parallel
// CHECK-NOT: linalg.generic
// CHECK: return
func.func private @safe_softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {flow.kernel, flow.workgroup_extent = 4 : i64} {
  %p = flow.softmax %x axis = 1 : tensor<4x8xf32>
  %m = flow.reduce_max %x [1] {keepdims} : tensor<4x8xf32> -> tensor<4x1xf32>
  %ninf = flow.constant dense<0xFF800000> : tensor<f32>
  %e = flow.compare eq, %m, %ninf : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xi1>
  %z = flow.constant dense<0.0> : tensor<f32>
  %r = flow.select %e, %z, %p : (tensor<4x1xi1>, tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// Left alone: an element-wise kernel (one loop nest already), a kernel
// whose result is the reduction itself, and one with two results where the
// first is not computed on the way to the last.
// CHECK-LABEL: func.func private @elementwise
// CHECK-NOT: scf.forall
// CHECK-LABEL: func.func private @row_sum
// CHECK-NOT: scf.forall
// CHECK-LABEL: func.func private @two_apart
// CHECK-NOT: scf.forall
func.func private @elementwise(%x: tensor<4x32xf32>) -> tensor<4x32xf32> attributes {flow.kernel, flow.workgroup_extent = 4 : i64} {
  %e = flow.exp %x : tensor<4x32xf32>
  %r = flow.relu %e : tensor<4x32xf32>
  return %r : tensor<4x32xf32>
}
func.func private @row_sum(%x: tensor<4x32xf32>) -> tensor<4xf32> attributes {flow.kernel, flow.workgroup_extent = 4 : i64} {
  %s = flow.reduce_sum %x [1] : tensor<4x32xf32> -> tensor<4xf32>
  return %s : tensor<4xf32>
}
func.func private @two_apart(%x: tensor<4x32xf32>) -> (tensor<4x32xf32>, tensor<4x32xf32>) attributes {flow.kernel, flow.workgroup_extent = 4 : i64} {
  %e = flow.exp %x : tensor<4x32xf32>
  %y = flow.softmax %x axis = 1 : tensor<4x32xf32>
  return %e, %y : tensor<4x32xf32>, tensor<4x32xf32>
}

// -----

// Two results, the first computed on the way to the last (a layer norm
// and its bf16 copy for the next GEMM, at batch 1): one tile loop yields
// both, and both are written in place by every workgroup.
// CHECK-LABEL: func.func private @norm_and_cast
// CHECK: scf.forall (%{{.*}}) in (16) shared_outs(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}})
// CHECK: tensor.parallel_insert_slice
// CHECK: tensor.parallel_insert_slice
// BUF-LABEL: func.func private @norm_and_cast
// BUF-SAME: flow.max_workgroups = 16
// BUF-NOT: memref.alloc(
// BUF-NOT: memref.copy
// BUF: return
func.func private @norm_and_cast(%x: tensor<1x16x32xf32>, %w: tensor<32xf32>, %b: tensor<32xf32>) -> (tensor<1x16x32xf32>, tensor<1x16x32xbf16>) attributes {flow.kernel, flow.workgroup_extent = 16 : i64} {
  %y = flow.layer_norm %x weight %w bias %b axis = 2 epsilon = 1.0e-05 : (tensor<1x16x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<1x16x32xf32>
  %c = flow.cast %y : tensor<1x16x32xf32> to tensor<1x16x32xbf16>
  return %y, %c : tensor<1x16x32xf32>, tensor<1x16x32xbf16>
}

// -----

// A reshape inside the kernel: element-wise fusion moves it onto the
// argument (a view), and the producer joins the tile.
// CHECK-LABEL: func.func private @reshape_first
// CHECK: tensor.expand_shape %arg0
// CHECK: scf.forall (%{{.*}}, %{{.*}}) in (4, 8) shared_outs
func.func private @reshape_first(%x: tensor<32x8xf32>) -> tensor<4x8x8xf32> attributes {flow.kernel, flow.workgroup_extent = 4 : i64} {
  %e = flow.exp %x : tensor<32x8xf32>
  %r = flow.reshape %e : tensor<32x8xf32> -> tensor<4x8x8xf32>
  %y = flow.layer_norm %r axis = 2 epsilon = 1.0e-05 : (tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
  return %y : tensor<4x8x8xf32>
}

// -----

// A producer that cannot join the tile (a concatenation's inserts): the
// kernel stays as it was, rather than a tile loop reading the rows of a
// loop outside it, which would keep its workgroups from splitting.
// CHECK-LABEL: func.func private @concat
// CHECK-NOT: scf.forall
// CHECK: return
func.func private @concat(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> tensor<4x8xf32> attributes {flow.kernel, flow.workgroup_extent = 4 : i64} {
  %c = flow.concat %a, %b axis = 1 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x8xf32>
  %y = flow.softmax %c axis = 1 : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// A max pooling pads its input: tiled by the leading dimensions the pad
// leaves alone (batch and channel), the padded copy is one channel's plane
// on the stack, not a heap copy of the whole input, and the workgroups
// still split the channels (each writes its own one-channel view of the
// result).
// CHECK-LABEL: func.func private @max_pool
// CHECK: scf.forall (%{{.*}}, %{{.*}}) in (2, 8) shared_outs
// CHECK: tensor.pad {{.*}} low[0, 0, 1, 1]
// CHECK: scf.forall.in_parallel
// BUF-LABEL: func.func private @max_pool
// BUF-SAME: flow.max_workgroups = 2
// BUF: memref.alloca() {{.*}}flow.scratch{{.*}} : memref<1x1x{{[0-9]+}}x{{[0-9]+}}xf32>
// BUF-NOT: memref.alloc(
func.func private @max_pool(%x: tensor<2x8x12x12xf32>) -> tensor<2x8x6x6xf32> attributes {flow.kernel, flow.workgroup_extent = 2 : i64} {
  %y = flow.max_pool2d %x kernel = [3, 3] strides = [2, 2] padding = [1, 1, 1, 1] dilations = [1, 1] : tensor<2x8x12x12xf32> -> tensor<2x8x6x6xf32>
  return %y : tensor<2x8x6x6xf32>
}

// -----

// A pad that widens the leading dimension leaves no rows: untouched.
// CHECK-LABEL: func.func private @pad_rows
// CHECK-NOT: scf.forall
// CHECK: return
func.func private @pad_rows(%x: tensor<4x8xf32>) -> tensor<6x8xf32> attributes {flow.kernel, flow.workgroup_extent = 6 : i64} {
  %y = flow.pad %x low = [1, 0] high = [1, 0] value = 0.0 : tensor<4x8xf32> -> tensor<6x8xf32>
  return %y : tensor<6x8xf32>
}
