// RUN: flow-opt %s --flow-convert-to-linalg | FileCheck %s --implicit-check-not=flow.

// Ranks by counting (a reduction over a second index along the axis), the
// index at each rank by a second count, then a gather of the values.
// CHECK-DAG: #[[OWN:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[OTHER:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func.func @sort
// CHECK: %[[RANK:.*]] = linalg.generic {indexing_maps = [#[[OWN]], #[[OTHER]], #[[OWN]]], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK:   arith.cmpf olt
// CHECK:   arith.cmpf uno
// CHECK:   arith.cmpi ult
// CHECK:   arith.extui
// CHECK: %[[IDX:.*]] = linalg.generic {indexing_maps = [#[[OTHER]], #[[OWN]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[RANK]]
// CHECK: %[[VAL:.*]] = linalg.generic {{.*}} ins(%[[IDX]]
// CHECK:   tensor.extract
// CHECK: return %[[VAL]], %[[IDX]]
func.func @sort(%x: tensor<4x9xf32>) -> (tensor<4x9xf32>, tensor<4x9xi64>) {
  %v, %i = flow.sort %x axis = 1 : tensor<4x9xf32> -> (tensor<4x9xf32>, tensor<4x9xi64>)
  return %v, %i : tensor<4x9xf32>, tensor<4x9xi64>
}
