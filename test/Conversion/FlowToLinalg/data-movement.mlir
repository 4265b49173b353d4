// RUN: flow-opt %s -split-input-file --flow-convert-to-linalg | FileCheck %s --implicit-check-not=flow.

// A reshape collapses to 1-D and expands again: no data moves.
// CHECK-LABEL: func.func @reshape
// CHECK: %[[C:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0, 1, 2]] : tensor<2x3x4xf32> into tensor<24xf32>
// CHECK: tensor.expand_shape %[[C]] {{\[}}[0, 1]] output_shape [4, 6] : tensor<24xf32> into tensor<4x6xf32>
func.func @reshape(%x: tensor<2x3x4xf32>) -> tensor<4x6xf32> {
  %0 = flow.reshape %x : tensor<2x3x4xf32> -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_scalar
// CHECK: tensor.expand_shape %{{.*}} [] output_shape [1, 1] : tensor<f32> into tensor<1x1xf32>
func.func @reshape_scalar(%x: tensor<f32>) -> tensor<1x1xf32> {
  %0 = flow.reshape %x : tensor<f32> -> tensor<1x1xf32>
  return %0 : tensor<1x1xf32>
}

// -----

// CHECK-LABEL: func.func @transpose
// CHECK: linalg.transpose ins(%{{.*}} : tensor<2x3x4xf32>) outs(%{{.*}} : tensor<4x2x3xf32>) permutation = [2, 0, 1]
func.func @transpose(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %0 = flow.transpose %x [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2) -> (0, d2)>
// CHECK-LABEL: func.func @broadcast_to
// CHECK: linalg.generic {indexing_maps = [#[[B]], #{{.*}}]
func.func @broadcast_to(%x: tensor<1x4xf32>) -> tensor<2x3x4xf32> {
  %0 = flow.broadcast_to %x : tensor<1x4xf32> -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// CHECK-LABEL: func.func @concat
// CHECK: %[[E:.*]] = tensor.empty() : tensor<2x8xf32>
// CHECK: %[[A:.*]] = tensor.insert_slice %{{.*}} into %[[E]][0, 0] [2, 3] [1, 1]
// CHECK: tensor.insert_slice %{{.*}} into %[[A]][0, 3] [2, 5] [1, 1]
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) -> tensor<2x8xf32> {
  %0 = flow.concat %a, %b axis = 1 : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// CHECK-LABEL: func.func @slice
// CHECK: tensor.extract_slice %{{.*}}[0, 1] [4, 3] [1, 2] : tensor<4x8xf32> to tensor<4x3xf32>
func.func @slice(%x: tensor<4x8xf32>) -> tensor<4x3xf32> {
  %0 = flow.slice %x starts = [0, 1] limits = [4, 7] strides = [1, 2] : tensor<4x8xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// Gather clamps indices into range, then extracts.
// CHECK-LABEL: func.func @gather
// CHECK: linalg.generic
// CHECK: arith.index_cast
// CHECK: arith.maxsi
// CHECK: arith.minsi
// CHECK: tensor.extract %{{.*}}[%{{.*}}, %{{.*}}] : tensor<10x4xf32>
func.func @gather(%t: tensor<10x4xf32>, %i: tensor<2x3xi64>) -> tensor<2x3x4xf32> {
  %0 = flow.gather %t[%i] axis = 0 : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// CHECK-LABEL: func.func @pad
// CHECK: %[[V:.*]] = arith.constant -1.000000e+00 : f32
// CHECK: tensor.pad %{{.*}} low[0, 1] high[2, 0]
// CHECK: tensor.yield %[[V]]
func.func @pad(%x: tensor<4x8xf32>) -> tensor<6x9xf32> {
  %0 = flow.pad %x low = [0, 1] high = [2, 0] value = -1.0 : tensor<4x8xf32> -> tensor<6x9xf32>
  return %0 : tensor<6x9xf32>
}

// -----

// Constants become arith constants; annotations vanish with their mesh.
// CHECK-LABEL: func.func @constant_annotate
// CHECK: arith.constant dense<1.000000e+00> : tensor<4xf32>
func.func @constant_annotate(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = flow.constant dense<1.0> : tensor<4xf32>
  %0 = flow.annotate %x as #flow.sbp<[S(0)]> on @m : tensor<4xf32>
  %1 = flow.add %0, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
flow.mesh @m [2]
