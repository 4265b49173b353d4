// RUN: flow-opt %s --flow-convert-to-linalg | FileCheck %s --implicit-check-not=flow.

// Ranks by counting (a reduction over a second index along the axis),
// then a loop storing each element and its index at its rank.
// CHECK-DAG: #[[OWN:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[OTHER:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func.func @sort
// CHECK: %[[RANK:.*]] = linalg.generic {indexing_maps = [#[[OWN]], #[[OTHER]], #[[OWN]]], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK:   arith.cmpf olt
// CHECK:   arith.cmpf uno
// CHECK:   arith.cmpi ult
// CHECK:   arith.extui
// CHECK: %[[R:.*]]:2 = scf.for %[[I:.*]] = {{.*}} iter_args(%[[V0:.*]] = %{{.*}}, %[[X0:.*]] = %{{.*}})
// CHECK:   scf.for %[[K:.*]] = {{.*}} iter_args(%[[V:.*]] = %[[V0]], %[[X:.*]] = %[[X0]])
// CHECK:     %[[AT:.*]] = tensor.extract %[[RANK]][%[[I]], %[[K]]]
// CHECK:     %[[TO:.*]] = arith.index_cast %[[AT]] : i64 to index
// CHECK:     tensor.insert %{{.*}} into %[[V]][%[[I]], %[[TO]]]
// CHECK:     tensor.insert %{{.*}} into %[[X]][%[[I]], %[[TO]]]
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @sort(%x: tensor<4x9xf32>) -> (tensor<4x9xf32>, tensor<4x9xi64>) {
  %v, %i = flow.sort %x axis = 1 : tensor<4x9xf32> -> (tensor<4x9xf32>, tensor<4x9xi64>)
  return %v, %i : tensor<4x9xf32>, tensor<4x9xi64>
}

// Rows of 128 or more: indices start as 0, 1, ... along the axis, then a
// loop over the rows runs pairs of merge passes (a into b, b back into a),
// each pass a loop over blocks and, in a block, a merge loop taking the
// right run's element only when it sorts strictly before the left's.
// CHECK-LABEL: func.func @merge_sort
// CHECK: %[[IOTA:.*]] = linalg.generic
// CHECK:   linalg.index 0
// CHECK: %[[R:.*]]:4 = scf.for %[[ROW:.*]] = {{.*}} iter_args(%[[A:.*]] = %arg0, %[[AI:.*]] = %[[IOTA]], %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}})
// CHECK:   scf.for %[[Q:.*]] = {{.*}} iter_args(
// CHECK:     arith.shli
// CHECK:     scf.for %[[LO:.*]] = {{.*}} step
// CHECK:       scf.for %[[K:.*]] = {{.*}} iter_args(%[[I:.*]] = %[[LO]], %[[J:.*]] = %{{.*}}, %[[DV:.*]] = %{{.*}}, %[[DI:.*]] = %{{.*}})
// CHECK:         arith.minsi %[[I]]
// CHECK:         arith.minsi %[[J]]
// CHECK:         arith.cmpf olt
// CHECK:         tensor.insert %{{.*}} into %[[DV]][%[[K]], %[[ROW]]]
// CHECK:         tensor.insert %{{.*}} into %[[DI]][%[[K]], %[[ROW]]]
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @merge_sort(%x: tensor<200x3xf32>) -> (tensor<200x3xf32>, tensor<200x3xi64>) {
  %v, %i = flow.sort %x axis = 0 : tensor<200x3xf32> -> (tensor<200x3xf32>, tensor<200x3xi64>)
  return %v, %i : tensor<200x3xf32>, tensor<200x3xi64>
}
