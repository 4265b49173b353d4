// RUN: flow-opt %s --flow-map-kernels-to-gpu | FileCheck %s

// A sequential kernel (an embedding's gradient: rows of the gradient added
// to the table rows their ids pick, ids repeating) whose innermost loop
// touches one column per iteration: each of 768 threads takes a column and
// runs the whole nest for it, in the same order as one thread would.
// CHECK-LABEL: gpu.func @embedding_grad
// CHECK-SAME: flow.block = array<i64: 256, 1, 1>
// CHECK-SAME: flow.grid = array<i64: 3, 1, 1>
// CHECK: %[[B:.*]] = gpu.block_id x
// CHECK: %[[T:.*]] = gpu.thread_id x
// CHECK: %[[W:.*]] = arith.muli %[[B]], %c256
// CHECK: %[[ID:.*]] = arith.addi %[[W]], %[[T]]
// CHECK: scf.for
// CHECK: scf.for
// CHECK: %[[START:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK: %[[STRIDE:.*]] = arith.muli %{{.*}}, %c768{{.*}} : index
// CHECK: scf.for %{{.*}} = %[[START]] to %{{.*}} step %[[STRIDE]]
// CHECK: memref.store
func.func private @embedding_grad(%ids: memref<8x128xi64>, %g: memref<8x128x768xf32>, %table: memref<1000x768xf32>) attributes {flow.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c128 = arith.constant 128 : index
  %c768 = arith.constant 768 : index
  scf.for %i = %c0 to %c8 step %c1 {
    scf.for %j = %c0 to %c128 step %c1 {
      %id = memref.load %ids[%i, %j] : memref<8x128xi64>
      %row = arith.index_cast %id : i64 to index
      scf.for %k = %c0 to %c768 step %c1 {
        %v = memref.load %g[%i, %j, %k] : memref<8x128x768xf32>
        %t = memref.load %table[%row, %k] : memref<1000x768xf32>
        %s = arith.addf %t, %v : f32
        memref.store %s, %table[%row, %k] : memref<1000x768xf32>
      }
    }
  }
  return
}

// An iteration reads what the one before wrote: it stays on one thread.
// CHECK-LABEL: gpu.func @shifted
// CHECK-SAME: flow.block = array<i64: 1, 1, 1>
// CHECK-SAME: flow.grid = array<i64: 1, 1, 1>
// CHECK-NOT: gpu.thread_id
func.func private @shifted(%x: memref<1024xf32>) attributes {flow.kernel} {
  %c1 = arith.constant 1 : index
  %c1023 = arith.constant 1023 : index
  scf.for %k = %c1 to %c1023 step %c1 {
    %p = arith.subi %k, %c1 : index
    %a = memref.load %x[%p] : memref<1024xf32>
    %b = memref.load %x[%k] : memref<1024xf32>
    %s = arith.addf %a, %b : f32
    memref.store %s, %x[%k] : memref<1024xf32>
  }
  return
}
