// RUN: flow-opt %s -split-input-file --flow-convert-to-linalg | FileCheck %s --implicit-check-not=flow.

// A loop over the index tuples carrying the result; a tuple out of bounds
// is skipped; a loop over its slice reads, combines and inserts.
// CHECK-LABEL: func.func @scatter_add
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[I:.*]]: tensor<2x1xi64>, %[[U:.*]]: tensor<2x8xf32>)
// CHECK: %[[R:.*]] = scf.for %[[M:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[X]]) -> (tensor<4x8xf32>)
// CHECK:   %[[C:.*]] = tensor.extract %[[I]][%[[M]], %{{.*}}] : tensor<2x1xi64>
// CHECK:   arith.cmpi sge, %[[C]]
// CHECK:   arith.cmpi slt, %[[C]]
// CHECK:   scf.if %{{.*}} -> (tensor<4x8xf32>)
// CHECK:     scf.for %[[S:.*]] = {{.*}} iter_args(%[[IN:.*]] = %[[ACC]])
// CHECK:       %[[UPD:.*]] = tensor.extract %[[U]][%[[M]], %[[S]]]
// CHECK:       %[[OLD:.*]] = tensor.extract %[[IN]][%{{.*}}, %[[S]]]
// CHECK:       %[[NEW:.*]] = arith.addf %[[OLD]], %[[UPD]]
// CHECK:       tensor.insert %[[NEW]] into %[[IN]][%{{.*}}, %[[S]]]
// CHECK:   } else {
// CHECK:     scf.yield %[[ACC]]
// CHECK: return %[[R]]
func.func @scatter_add(%x: tensor<4x8xf32>, %i: tensor<2x1xi64>, %u: tensor<2x8xf32>) -> tensor<4x8xf32> {
  %0 = flow.scatter_nd %x[%i], %u reduction = add : (tensor<4x8xf32>, tensor<2x1xi64>, tensor<2x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Full tuples (element scatter) replace; unsigned maxima use maxui.
// CHECK-LABEL: func.func @scatter_elements
// CHECK: scf.for
// CHECK-NOT: scf.for
// CHECK: tensor.insert
// CHECK-LABEL: func.func @scatter_max_unsigned
// CHECK: arith.maxui
func.func @scatter_elements(%x: tensor<4x8xf32>, %i: tensor<5x2xi32>, %u: tensor<5xf32>) -> tensor<4x8xf32> {
  %0 = flow.scatter_nd %x[%i], %u : (tensor<4x8xf32>, tensor<5x2xi32>, tensor<5xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
func.func @scatter_max_unsigned(%x: tensor<4xui8>, %i: tensor<2x1xi64>, %u: tensor<2xui8>) -> tensor<4xui8> {
  %0 = flow.scatter_nd %x[%i], %u reduction = max : (tensor<4xui8>, tensor<2x1xi64>, tensor<2xui8>) -> tensor<4xui8>
  return %0 : tensor<4xui8>
}
