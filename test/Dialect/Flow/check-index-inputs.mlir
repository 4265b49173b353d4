// RUN: flow-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(flow-check-index-inputs))' | FileCheck %s

// An embedding's ids, read directly: indices in [0, 64).
// CHECK-LABEL: func.func @embedding
// CHECK-SAME: %{{.*}}: tensor<64x8xf32>,
// CHECK-SAME: %{{.*}}: tensor<2x3xi64> {flow.index_check = {bound = 64 : i64, what = "flow.gather at {{.*}}check-index-inputs.mlir:8:8"}}
func.func @embedding(%t: tensor<64x8xf32>, %ids: tensor<2x3xi64>) -> tensor<2x3x8xf32> {
  %e = flow.gather %t[%ids] axis = 0 : (tensor<64x8xf32>, tensor<2x3xi64>) -> tensor<2x3x8xf32>
  return %e : tensor<2x3x8xf32>
}

// -----

// A loss's targets: select(t != -100, t, 0) then a reshape, into a
// gather_elements over 3 classes: -100 is allowed (ignore_index).
// CHECK-LABEL: func.func @cross_entropy
// CHECK-SAME: %{{.*}}: tensor<4xi64> {flow.index_check = {bound = 3 : i64, ignore = -100 : i64, what = "flow.gather_elements at
func.func @cross_entropy(%logits: tensor<4x3xf32>, %t: tensor<4xi64>) -> tensor<4x1xf32> {
  %c = flow.constant dense<-100> : tensor<i64>
  %ne = flow.compare ne, %t, %c : (tensor<4xi64>, tensor<i64>) -> tensor<4xi1>
  %zero = flow.constant dense<0> : tensor<i64>
  %safe = flow.select %ne, %t, %zero : (tensor<4xi1>, tensor<4xi64>, tensor<i64>) -> tensor<4xi64>
  %i = flow.reshape %safe : tensor<4xi64> -> tensor<4x1xi64>
  %g = flow.gather_elements %logits[%i] axis = 1 : (tensor<4x3xf32>, tensor<4x1xi64>) -> tensor<4x1xf32>
  return %g : tensor<4x1xf32>
}

// -----

// Read by two gathers: the smaller bound; widening i32 -> i64 keeps values.
// CHECK-LABEL: func.func @two_tables
// CHECK-SAME: %{{.*}}: tensor<5xi32> {flow.index_check = {bound = 10 : i64
func.func @two_tables(%a: tensor<100x4xf32>, %b: tensor<10x4xf32>, %ids: tensor<5xi32>) -> (tensor<5x4xf32>, tensor<5x4xf32>) {
  %w = flow.cast %ids : tensor<5xi32> to tensor<5xi64>
  %x = flow.gather %a[%w] axis = 0 : (tensor<100x4xf32>, tensor<5xi64>) -> tensor<5x4xf32>
  %y = flow.gather %b[%ids] axis = 0 : (tensor<10x4xf32>, tensor<5xi32>) -> tensor<5x4xf32>
  return %x, %y : tensor<5x4xf32>, tensor<5x4xf32>
}

// -----

// Computed indices and a narrowing cast are not checked (the cast would
// wrap a large id into range before the gather sees it).
// CHECK-LABEL: func.func @computed
// CHECK-NOT: flow.index_check
func.func @computed(%t: tensor<64x8xf32>, %ids: tensor<2xi64>, %big: tensor<2xi64>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %one = flow.constant dense<1> : tensor<i64>
  %s = flow.add %ids, %one : (tensor<2xi64>, tensor<i64>) -> tensor<2xi64>
  %e = flow.gather %t[%s] axis = 0 : (tensor<64x8xf32>, tensor<2xi64>) -> tensor<2x8xf32>
  %n = flow.cast %big : tensor<2xi64> to tensor<2xi32>
  %f = flow.gather %t[%n] axis = 0 : (tensor<64x8xf32>, tensor<2xi32>) -> tensor<2x8xf32>
  return %e, %f : tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

// ONNX's negative indices, counting from the end: [-6, 6).
// CHECK-LABEL: func.func @onnx_gather
// CHECK-SAME: %{{.*}}: tensor<3xi64> {flow.index_check = {bound = 6 : i64, lower = -6 : i64, what = "flow.gather at
func.func @onnx_gather(%t: tensor<6x2xf32>, %i: tensor<3xi64>) -> tensor<3x2xf32> {
  %zero = flow.constant dense<0> : tensor<i64>
  %neg = flow.compare lt, %i, %zero : (tensor<3xi64>, tensor<i64>) -> tensor<3xi1>
  %six = flow.constant dense<6> : tensor<i64>
  %up = flow.add %i, %six : (tensor<3xi64>, tensor<i64>) -> tensor<3xi64>
  %w = flow.select %neg, %up, %i : (tensor<3xi1>, tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  %g = flow.gather %t[%w] axis = 0 : (tensor<6x2xf32>, tensor<3xi64>) -> tensor<3x2xf32>
  return %g : tensor<3x2xf32>
}
