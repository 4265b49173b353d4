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
