// RUN: flow-opt %s -split-input-file --flow-distribute-workgroups | FileCheck %s

// Rows [wg * 8 / nwg, (wg + 1) * 8 / nwg) of every top-level loop.
// CHECK-LABEL: func.func @rows
// CHECK-SAME: (%[[IN:.*]]: memref<8x16xf32>, %[[OUT:.*]]: memref<8x16xf32>, %[[WG:.*]]: index, %[[NWG:.*]]: index)
// CHECK-SAME: flow.max_workgroups = 8 : i64
// CHECK-DAG: %[[C8:.*]] = arith.constant 8 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK: %[[M:.*]] = arith.muli %[[WG]], %[[C8]]
// CHECK: %[[LO:.*]] = arith.divui %[[M]], %[[NWG]]
// CHECK: %[[N:.*]] = arith.addi %[[WG]], %[[C1]]
// CHECK: %[[M2:.*]] = arith.muli %[[N]], %[[C8]]
// CHECK: %[[HI:.*]] = arith.divui %[[M2]], %[[NWG]]
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%[[LO]], %{{.*}}) to (%[[HI]], %{{.*}})
func.func @rows(%in: memref<8x16xf32>, %out: memref<8x16xf32>) attributes {flow.kernel, flow.workgroup_extent = 8 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c16) step (%c1, %c1) {
    %v = memref.load %in[%i, %j] : memref<8x16xf32>
    memref.store %v, %out[%i, %j] : memref<8x16xf32>
    scf.reduce
  }
  return
}

// -----

// A top-level write to an argument outside the loops keeps the kernel whole.
// CHECK-LABEL: func.func @copy_outside
// CHECK-SAME: %{{.*}}: index, %{{.*}}: index)
// CHECK-SAME: flow.max_workgroups = 1 : i64
// CHECK-NOT: arith.divui
func.func @copy_outside(%in: memref<8xf32>, %out: memref<8xf32>) attributes {flow.kernel, flow.workgroup_extent = 8 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  memref.copy %in, %out : memref<8xf32> to memref<8xf32>
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    %v = memref.load %in[%i] : memref<8xf32>
    memref.store %v, %out[%i] : memref<8xf32>
    scf.reduce
  }
  return
}

// -----

// A loop whose first dimension is not the kernel's rows keeps it whole.
// CHECK-LABEL: func.func @other_extent
// CHECK-SAME: flow.max_workgroups = 1 : i64
// CHECK-NOT: arith.divui
func.func @other_extent(%in: memref<8x8xf32>, %out: memref<4xf32>) attributes {flow.kernel, flow.workgroup_extent = 8 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    %v = memref.load %in[%i, %i] : memref<8x8xf32>
    memref.store %v, %out[%i] : memref<4xf32>
    scf.reduce
  }
  return
}

// -----

// Functions that are not kernels are left alone.
// CHECK-LABEL: func.func @host
// CHECK-SAME: (%{{.*}}: memref<4xf32>) {
func.func @host(%in: memref<4xf32>) {
  return
}

// -----

// Loops over leading dimensions of one iteration are split on their first
// longer dimension.
// CHECK-LABEL: func.func @unit_leading
// CHECK-SAME: flow.max_workgroups = 8 : i64
// CHECK: %[[LO:.*]] = arith.divui
// CHECK: %[[HI:.*]] = arith.divui
// CHECK: scf.parallel (%{{.*}}, %{{.*}}, %{{.*}}) = (%{{.*}}, %[[LO]], %{{.*}}) to (%{{.*}}, %[[HI]], %{{.*}})
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%[[LO]], %{{.*}}) to (%[[HI]], %{{.*}})
func.func @unit_leading(%in: memref<1x8x16xf32>, %out: memref<1x8x16xf32>) attributes {flow.kernel, flow.workgroup_extent = 8 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  scf.parallel (%b, %i, %j) = (%c0, %c0, %c0) to (%c1, %c8, %c16) step (%c1, %c1, %c1) {
    %v = memref.load %in[%b, %i, %j] : memref<1x8x16xf32>
    memref.store %v, %out[%b, %i, %j] : memref<1x8x16xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c16) step (%c1, %c1) {
    %v = memref.load %in[%c0, %i, %j] : memref<1x8x16xf32>
    memref.store %v, %out[%c0, %i, %j] : memref<1x8x16xf32>
    scf.reduce
  }
  return
}

// -----

// More rows than workgroups the runtime would ever use: the count is capped
// at 65536 (it used to be the row count, which a 32-bit field truncated),
// and the rows are still split by the real extent.
// CHECK-LABEL: func.func @huge
// CHECK-SAME: flow.max_workgroups = 65536 : i64
// CHECK: arith.constant 8589934592 : index
func.func @huge(%in: memref<8589934592xi8>, %out: memref<8589934592xi8>) attributes {flow.kernel, flow.workgroup_extent = 8589934592 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 8589934592 : index
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %v = memref.load %in[%i] : memref<8589934592xi8>
    memref.store %v, %out[%i] : memref<8589934592xi8>
    scf.reduce
  }
  return
}

// -----

// A fused kernel passes values between its loops through buffers: split
// when each workgroup reads back only the rows it wrote (here through a
// padding subview that keeps the rows), whole when a loop reads another
// row (a transpose of an intermediate).
// CHECK-LABEL: func.func @own_rows
// CHECK-SAME: flow.max_workgroups = 4 : i64
// CHECK-LABEL: func.func @other_rows
// CHECK-SAME: flow.max_workgroups = 1 : i64
// CHECK-NOT: arith.divui
func.func @own_rows(%in: memref<4x4xf32>, %out: memref<4x6xf32>) attributes {flow.kernel, flow.workgroup_extent = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c6 = arith.constant 6 : index
  %tmp = memref.alloc() : memref<4x6xf32>
  %view = memref.subview %tmp[0, 1] [4, 4] [1, 1] : memref<4x6xf32> to memref<4x4xf32, strided<[6, 1], offset: 1>>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c4) step (%c1, %c1) {
    %v = memref.load %in[%i, %j] : memref<4x4xf32>
    memref.store %v, %view[%i, %j] : memref<4x4xf32, strided<[6, 1], offset: 1>>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c6) step (%c1, %c1) {
    %v = memref.load %tmp[%i, %j] : memref<4x6xf32>
    memref.store %v, %out[%i, %j] : memref<4x6xf32>
    scf.reduce
  }
  memref.dealloc %tmp : memref<4x6xf32>
  return
}
func.func @other_rows(%in: memref<4x4xf32>, %out: memref<4x4xf32>) attributes {flow.kernel, flow.workgroup_extent = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %tmp = memref.alloc() : memref<4x4xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c4) step (%c1, %c1) {
    %v = memref.load %in[%i, %j] : memref<4x4xf32>
    memref.store %v, %tmp[%i, %j] : memref<4x4xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c4) step (%c1, %c1) {
    %v = memref.load %tmp[%j, %i] : memref<4x4xf32>
    memref.store %v, %out[%i, %j] : memref<4x4xf32>
    scf.reduce
  }
  memref.dealloc %tmp : memref<4x4xf32>
  return
}

// -----

// A row tile whose unit dimensions were folded: the result is read back
// (by a later loop of the tile) through a collapse of its unit dimension,
// on the row the workgroup wrote, so the rows split.
// CHECK-LABEL: func.func @folded_rows_read_back
// CHECK-SAME: flow.max_workgroups = 4 : i64
func.func @folded_rows_read_back(%in: memref<1x4x8xf32>, %out: memref<1x4x8xf32>, %cast: memref<1x4x8xbf16>) attributes {flow.kernel, flow.workgroup_extent = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %src = memref.collapse_shape %in [[0, 1], [2]] : memref<1x4x8xf32> into memref<4x8xf32>
  %dst = memref.collapse_shape %out [[0, 1], [2]] : memref<1x4x8xf32> into memref<4x8xf32>
  %low = memref.collapse_shape %cast [[0, 1], [2]] : memref<1x4x8xbf16> into memref<4x8xbf16>
  scf.parallel (%r) = (%c0) to (%c4) step (%c1) {
    %row = memref.subview %dst[%r, 0] [1, 8] [1, 1] : memref<4x8xf32> to memref<1x8xf32, strided<[8, 1], offset: ?>>
    scf.parallel (%j) = (%c0) to (%c8) step (%c1) {
      %v = memref.load %src[%r, %j] : memref<4x8xf32>
      memref.store %v, %row[%c0, %j] : memref<1x8xf32, strided<[8, 1], offset: ?>>
      scf.reduce
    }
    scf.parallel (%j) = (%c0) to (%c8) step (%c1) {
      %v = memref.load %row[%c0, %j] : memref<1x8xf32, strided<[8, 1], offset: ?>>
      %t = arith.truncf %v : f32 to bf16
      memref.store %t, %low[%r, %j] : memref<4x8xbf16>
      scf.reduce
    }
    scf.reduce
  }
  return
}

// -----

// A reshape that merges the rows with another dimension: a workgroup's
// rows of the collapsed view are not its rows of the buffer, so the
// kernel runs whole.
// CHECK-LABEL: func.func @merged_rows_read_back
// CHECK-SAME: flow.max_workgroups = 1 : i64
func.func @merged_rows_read_back(%in: memref<4x2xf32>, %out: memref<4x2xf32>, %sum: memref<4x2xf32>) attributes {flow.kernel, flow.workgroup_extent = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %flat = memref.collapse_shape %out [[0, 1]] : memref<4x2xf32> into memref<8xf32>
  scf.parallel (%r, %j) = (%c0, %c0) to (%c4, %c2) step (%c1, %c1) {
    %v = memref.load %in[%r, %j] : memref<4x2xf32>
    memref.store %v, %out[%r, %j] : memref<4x2xf32>
    scf.reduce
  }
  scf.parallel (%r, %j) = (%c0, %c0) to (%c4, %c2) step (%c1, %c1) {
    %v = memref.load %flat[%r] : memref<8xf32>
    memref.store %v, %sum[%r, %j] : memref<4x2xf32>
    scf.reduce
  }
  return
}

// -----

// A flag the kernel widens from its byte into a buffer of its own before
// the loops (a boolean operand): every workgroup's call fills its own copy
// whole before any row reads it, so the rows still split.
// CHECK-LABEL: func.func @own_flag
// CHECK-SAME: flow.max_workgroups = 8 : i64
// CHECK: arith.divui
func.func @own_flag(%flag: memref<i8>, %in: memref<8x16xf32>, %out: memref<8x16xf32>) attributes {flow.kernel, flow.workgroup_extent = 8 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %alloc = memref.alloc() : memref<i1>
  %b = memref.load %flag[] : memref<i8>
  %t = arith.trunci %b : i8 to i1
  memref.store %t, %alloc[] : memref<i1>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c16) step (%c1, %c1) {
    %keep = memref.load %alloc[] : memref<i1>
    %v = memref.load %in[%i, %j] : memref<8x16xf32>
    %s = arith.select %keep, %v, %zero : f32
    memref.store %s, %out[%i, %j] : memref<8x16xf32>
    scf.reduce
  }
  memref.dealloc %alloc : memref<i1>
  return
}

// -----

// A buffer of its own written inside the split loop and read whole later
// would see only its workgroup's rows: the kernel stays whole.
// CHECK-LABEL: func.func @own_buffer_in_rows
// CHECK-SAME: flow.max_workgroups = 1 : i64
func.func @own_buffer_in_rows(%in: memref<8xf32>, %out: memref<8xf32>) attributes {flow.kernel, flow.workgroup_extent = 8 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c7 = arith.constant 7 : index
  %c8 = arith.constant 8 : index
  %alloc = memref.alloc() : memref<8xf32>
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    %v = memref.load %in[%i] : memref<8xf32>
    memref.store %v, %alloc[%i] : memref<8xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    %last = memref.load %alloc[%c7] : memref<8xf32>
    memref.store %last, %out[%i] : memref<8xf32>
    scf.reduce
  }
  memref.dealloc %alloc : memref<8xf32>
  return
}
