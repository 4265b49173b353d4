// RUN: flow-opt %s -split-input-file -verify-diagnostics --flow-map-kernels-to-gpu | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// An element-wise kernel: each thread takes four adjacent f32 (one 16-byte
// load per buffer); a bias indexed by the innermost dimension is loaded as
// a vector too. 8 x 1024 / 4 = 2048 units over blocks of 256 threads.
// CHECK: module attributes {gpu.container_module}
// CHECK: gpu.module @flow_kernels
// CHECK-LABEL: gpu.func @add_bias
// CHECK-SAME: (%[[X:.*]]: memref<8x1024xf32>, %[[B:.*]]: memref<1024xf32>, %[[Y:.*]]: memref<8x1024xf32>) kernel
// CHECK-SAME: flow.block = array<i64: 256, 1, 1>
// CHECK-SAME: flow.grid = array<i64: 8, 1, 1>
// CHECK-SAME: flow.shared_bytes = 0
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>
// CHECK: %[[BID:.*]] = gpu.block_id x
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[GID:.*]] = arith.addi
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[GID]], %{{.*}}
// CHECK: scf.if %[[IN]]
// CHECK: %[[XV:.*]] = vector.load %[[X]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<8x1024xf32>, vector<4xf32>
// CHECK: %[[BV:.*]] = vector.load %[[B]][%{{.*}}] {alignment = 16 : i64} : memref<1024xf32>, vector<4xf32>
// CHECK: %[[S:.*]] = arith.addf %[[XV]], %[[BV]] : vector<4xf32>
// CHECK: vector.store %[[S]], %[[Y]][%{{.*}}, %{{.*}}] {alignment = 16 : i64}
// CHECK: gpu.return
func.func @add_bias(%x: memref<8x1024xf32>, %b: memref<1024xf32>, %y: memref<8x1024xf32>) attributes {flow.kernel} {
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : memref<8x1024xf32>, memref<1024xf32>) outs(%y : memref<8x1024xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  }
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d0)>

// A value broadcast along the innermost dimension is one scalar load
// splatted over the lanes; bf16 takes eight lanes (16 bytes).
// CHECK-LABEL: gpu.func @scale_rows
// CHECK: vector.load {{.*}} : memref<4x64xbf16>, vector<8xbf16>
// CHECK: %[[S:.*]] = memref.load %{{.*}}[%{{.*}}] : memref<4xbf16>
// CHECK: vector.broadcast %[[S]] : bf16 to vector<8xbf16>
// CHECK: arith.mulf {{.*}} : vector<8xbf16>
func.func @scale_rows(%x: memref<4x64xbf16>, %s: memref<4xbf16>, %y: memref<4x64xbf16>) attributes {flow.kernel} {
  linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %s : memref<4x64xbf16>, memref<4xbf16>) outs(%y : memref<4x64xbf16>) {
  ^bb0(%a: bf16, %c: bf16, %o: bf16):
    %m = arith.mulf %a, %c : bf16
    linalg.yield %m : bf16
  }
  return
}

// -----

#tr = affine_map<(d0, d1) -> (d1, d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// A transposed read cannot be a vector load: one element per thread.
// CHECK-LABEL: gpu.func @transpose
// CHECK-SAME: flow.grid = array<i64: 2, 1, 1>
// CHECK-NOT: vector.load
// CHECK: memref.load
// CHECK-NOT: vector.store
// CHECK: memref.store
func.func @transpose(%x: memref<16x32xf32>, %y: memref<32x16xf32>) attributes {flow.kernel} {
  linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<16x32xf32>) outs(%y : memref<32x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  return
}

// -----

#in = affine_map<(d0, d1) -> (d1, d0)>
#out = affine_map<(d0, d1) -> (d0)>

// A reduction over a dimension that is not innermost: each thread owns an
// output element and loops over the reduction, starting from the output's
// value.
// CHECK-LABEL: gpu.func @column_sums
// CHECK: scf.if
// CHECK: %[[INIT:.*]] = memref.load %{{.*}} : memref<32xf32>
// CHECK: %[[SUM:.*]] = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[INIT]]) -> (f32)
// CHECK: arith.addf
// CHECK: memref.store %[[SUM]]
func.func @column_sums(%x: memref<64x32xf32>, %y: memref<32xf32>) attributes {flow.kernel} {
  linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<64x32xf32>) outs(%y : memref<32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %o, %a : f32
    linalg.yield %s : f32
  }
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#red = affine_map<(d0, d1) -> (d0)>
#one = affine_map<(d0) -> (d0)>

// A row tile (flow-tile-rows) runs one row per block: its temporaries live
// in shared memory (16-byte aligned), each op is spread over the block's
// threads with a barrier after it, and the row's maximum is one partial
// value per thread (four lanes reduced) combined by gpu.all_reduce, joined
// with the output's initial value and stored by thread 0. Its shared memory
// is the row (2048 bytes) and the buffer gpu.all_reduce adds when lowered
// (a partial per warp, 128 bytes, and 16 of alignment).
// CHECK-LABEL: gpu.func @row_max
// CHECK-SAME: workgroup(%[[T:.*]] : memref<1x512xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CHECK-SAME: flow.block = array<i64: 128, 1, 1>
// CHECK-SAME: flow.grid = array<i64: 6, 1, 1>
// CHECK-SAME: flow.shared_bytes = 2192
// CHECK: %[[BID:.*]] = gpu.block_id x
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: memref.subview %{{.*}}[%[[BID]], 0] [1, 512]
// CHECK: scf.for %{{.*}} = %[[TID]] to %{{.*}} step %{{.*}}
// CHECK: math.exp {{.*}} : vector<4xf32>
// CHECK: vector.store {{.*}}, %[[T]]
// CHECK: gpu.barrier
// CHECK: %[[P:.*]] = scf.for %{{.*}} = %[[TID]] to {{.*}} iter_args({{.*}}) -> (vector<4xf32>)
// CHECK: arith.maximumf {{.*}} : vector<4xf32>
// CHECK: %[[R:.*]] = vector.reduction <maximumf>, %[[P]]
// CHECK: %[[ALL:.*]] = gpu.all_reduce maximumf %[[R]] uniform
// CHECK: %[[INIT:.*]] = memref.load
// CHECK: %[[M:.*]] = arith.maximumf %[[INIT]], %[[ALL]]
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[TID]]
// CHECK: scf.if %[[FIRST]]
// CHECK: memref.store %[[M]]
// CHECK-NOT: scf.forall
func.func @row_max(%x: memref<6x512xf32>, %y: memref<6xf32>) attributes {flow.kernel} {
  scf.forall (%r) in (6) {
    %t = memref.alloc() : memref<1x512xf32>
    %xs = memref.subview %x[%r, 0] [1, 512] [1, 1] : memref<6x512xf32> to memref<1x512xf32, strided<[512, 1], offset: ?>>
    %ys = memref.subview %y[%r] [1] [1] : memref<6xf32> to memref<1xf32, strided<[1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%xs : memref<1x512xf32, strided<[512, 1], offset: ?>>) outs(%t : memref<1x512xf32>) {
    ^bb0(%a: f32, %o: f32):
      %e = math.exp %a : f32
      linalg.yield %e : f32
    }
    linalg.generic {indexing_maps = [#id, #red], iterator_types = ["parallel", "reduction"]}
        ins(%t : memref<1x512xf32>) outs(%ys : memref<1xf32, strided<[1], offset: ?>>) {
    ^bb0(%a: f32, %o: f32):
      %m = arith.maximumf %o, %a : f32
      linalg.yield %m : f32
    }
    memref.dealloc %t : memref<1x512xf32>
  }
  return
}

// -----

#id = affine_map<(d0) -> (d0)>

// A temporary outside a row tile is written by one launch and read by the
// next: the kernel runs as two stages, each a gpu.func taking the bindings
// and then the scratch buffer (256-byte aligned in the kernel's scratch
// memory); the stages in order are the grid-wide barrier. The fill of the
// first stage yields a constant: every lane stores it.
// CHECK-LABEL: gpu.func @whole_tensor_temporary_s0
// CHECK-SAME: (%{{.*}}: memref<64xf32>, %{{.*}}: memref<64xf32>, %[[T:.*]]: memref<64xf32>) kernel
// CHECK-SAME: flow.scratch_bytes = 256 : i64, flow.scratch_offsets = array<i64: 0>
// CHECK-SAME: flow.stage = 0 : i64, flow.stage_of = "whole_tensor_temporary"
// CHECK: %[[C:.*]] = arith.constant 2.000000e+00 : f32
// CHECK: %[[V:.*]] = vector.broadcast %[[C]] : f32 to vector<4xf32>
// CHECK: vector.store %[[V]], %[[T]]
// CHECK-NOT: vector.load
// CHECK: gpu.return
// CHECK-LABEL: gpu.func @whole_tensor_temporary_s1
// CHECK-SAME: (%{{.*}}: memref<64xf32>, %[[Y:.*]]: memref<64xf32>, %[[T1:.*]]: memref<64xf32>) kernel
// CHECK-SAME: flow.stage = 1 : i64, flow.stage_of = "whole_tensor_temporary"
// CHECK: vector.load %[[T1]]
// CHECK: vector.store {{.*}}, %[[Y]]
func.func @whole_tensor_temporary(%x: memref<64xf32>, %y: memref<64xf32>) attributes {flow.kernel} {
  %c = arith.constant 2.0 : f32
  %t = memref.alloc() : memref<64xf32>
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]}
      outs(%t : memref<64xf32>) {
  ^bb0(%o: f32):
    linalg.yield %c : f32
  }
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%t, %x : memref<64xf32>, memref<64xf32>) outs(%y : memref<64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.mulf %a, %b : f32
    linalg.yield %s : f32
  }
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A row whose temporaries exceed a block's 48 KiB of shared memory keeps
// them in global memory: one slice per row of a scratch buffer, the kernel's
// argument after its bindings.
// CHECK-LABEL: gpu.func @row_too_long
// CHECK-SAME: (%{{.*}}: memref<2x16384xf32>, %{{.*}}: memref<2x16384xf32>, %[[S:.*]]: memref<32768xf32>) kernel
// CHECK-SAME: flow.scratch_bytes = 131072 : i64, flow.scratch_offsets = array<i64: 0>
// CHECK-SAME: flow.shared_bytes = 0
// CHECK: %[[SLICE:.*]] = memref.subview %[[S]]
// CHECK: memref.expand_shape %[[SLICE]]
func.func @row_too_long(%x: memref<2x16384xf32>, %y: memref<2x16384xf32>) attributes {flow.kernel} {
  scf.forall (%r) in (2) {
    %t = memref.alloc() : memref<1x16384xf32>
    %xs = memref.subview %x[%r, 0] [1, 16384] [1, 1] : memref<2x16384xf32> to memref<1x16384xf32, strided<[16384, 1], offset: ?>>
    %ys = memref.subview %y[%r, 0] [1, 16384] [1, 1] : memref<2x16384xf32> to memref<1x16384xf32, strided<[16384, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%xs : memref<1x16384xf32, strided<[16384, 1], offset: ?>>) outs(%t : memref<1x16384xf32>) {
    ^bb0(%a: f32, %o: f32):
      linalg.yield %a : f32
    }
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%t : memref<1x16384xf32>) outs(%ys : memref<1x16384xf32, strided<[16384, 1], offset: ?>>) {
    ^bb0(%a: f32, %o: f32):
      %e = math.exp %a : f32
      linalg.yield %e : f32
    }
  }
  return
}
