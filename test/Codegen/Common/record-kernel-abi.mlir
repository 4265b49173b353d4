// RUN: flow-opt %s -split-input-file --flow-record-kernel-abi | FileCheck %s

// Operands then results, in bytes; i1 takes one byte per element.
// CHECK-LABEL: func.func @k
// CHECK-SAME: flow.binding_sizes = array<i64: 32, 6, 8>
// CHECK-SAME: flow.num_outputs = 1 : i64
func.func @k(%a: tensor<2x4xf32>, %b: tensor<2x3xi1>) -> tensor<4xf16> attributes {flow.kernel} {
  %0 = tensor.empty() : tensor<4xf16>
  return %0 : tensor<4xf16>
}

// A function that is not a kernel is left alone.
// CHECK-LABEL: func.func @host
// CHECK-NOT: flow.binding_sizes
func.func @host(%a: tensor<2xf32>) -> tensor<2xf32> {
  return %a : tensor<2xf32>
}

// -----

// Two results: both written.
// CHECK-LABEL: func.func @two
// CHECK-SAME: flow.binding_sizes = array<i64: 8, 16, 4>
// CHECK-SAME: flow.num_outputs = 2 : i64
func.func @two(%a: tensor<1xi64>) -> (tensor<2xi64>, tensor<1xi32>) attributes {flow.kernel} {
  %0 = tensor.empty() : tensor<2xi64>
  %1 = tensor.empty() : tensor<1xi32>
  return %0, %1 : tensor<2xi64>, tensor<1xi32>
}
