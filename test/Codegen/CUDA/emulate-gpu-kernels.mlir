// RUN: flow-opt %s --flow-map-kernels-to-gpu --flow-emulate-gpu-kernels | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#red = affine_map<(d0, d1) -> (d0)>

// The row kernel of a maximum, emulated: a CPU kernel (bindings, then the
// workgroup id and count) running blocks [w * 6 / n, (w + 1) * 6 / n); in
// each, the threads run the op before the all-reduce one after another,
// keeping their values, which are then combined in thread order.
// CHECK-NOT: gpu.module
// CHECK-LABEL: func.func private @row_max
// CHECK-SAME: (%[[X:.*]]: memref<6x512xf32>, %[[Y:.*]]: memref<6xf32>, %[[W:.*]]: index, %[[N:.*]]: index)
// CHECK-SAME: flow.max_workgroups = 6
// CHECK: %[[VALUES:.*]] = memref.alloca() : memref<128xf32>
// CHECK: %[[LO:.*]] = arith.divui
// CHECK: %[[HI:.*]] = arith.divui
// CHECK: scf.for %[[B:.*]] = %[[LO]] to %[[HI]]
// CHECK: memref.subview %[[X]][%[[B]], 0]
// CHECK: scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step
// CHECK: scf.for {{.*}} = %[[T]] to {{.*}} iter_args
// CHECK: vector.reduction <maximumf>
// CHECK: memref.store {{.*}}, %[[VALUES]][%[[T]]]
// CHECK: %[[FIRST:.*]] = memref.load %[[VALUES]]
// CHECK: %[[ALL:.*]] = scf.for {{.*}} iter_args(%[[ACC:.*]] = %[[FIRST]])
// CHECK: arith.maximumf
// CHECK: arith.maximumf {{.*}}, %[[ALL]]
// CHECK: scf.for %[[T2:.*]] =
// CHECK: arith.cmpi eq, %[[T2]]
// CHECK-NOT: gpu.
func.func @row_max(%x: memref<6x512xf32>, %y: memref<6xf32>) attributes {flow.kernel} {
  scf.forall (%r) in (6) {
    %xs = memref.subview %x[%r, 0] [1, 512] [1, 1] : memref<6x512xf32> to memref<1x512xf32, strided<[512, 1], offset: ?>>
    %ys = memref.subview %y[%r] [1] [1] : memref<6xf32> to memref<1xf32, strided<[1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #red], iterator_types = ["parallel", "reduction"]}
        ins(%xs : memref<1x512xf32, strided<[512, 1], offset: ?>>) outs(%ys : memref<1xf32, strided<[1], offset: ?>>) {
    ^bb0(%a: f32, %o: f32):
      %m = arith.maximumf %o, %a : f32
      linalg.yield %m : f32
    }
  }
  return
}
