// RUN: flow-opt %s -split-input-file --flow-convert-to-linalg | FileCheck %s --implicit-check-not=flow.

// Batch dims broadcast through the maps; k is the reduction loop.
// CHECK-DAG: #[[LHS:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[RHS:.*]] = affine_map<(d0, d1, d2, d3) -> (d3, d2)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @matmul_shared_rhs
// CHECK: %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<2x8x32xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[LHS]], #[[RHS]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK-SAME: outs(%[[Z]] : tensor<2x8x32xf32>)
func.func @matmul_shared_rhs(%a: tensor<2x8x16xf32>, %b: tensor<16x32xf32>) -> tensor<2x8x32xf32> {
  %0 = flow.matmul %a, %b : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
  return %0 : tensor<2x8x32xf32>
}

// -----

// CHECK-DAG: #[[TL:.*]] = affine_map<(d0, d1, d2) -> (d2, d0)>
// CHECK-DAG: #[[TR:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-LABEL: func.func @matmul_transposed
// CHECK: linalg.generic {indexing_maps = [#[[TL]], #[[TR]], #{{.*}}]
func.func @matmul_transposed(%a: tensor<16x8xf32>, %b: tensor<32x16xf32>) -> tensor<8x32xf32> {
  %0 = flow.matmul %a, %b {transpose_lhs, transpose_rhs} : (tensor<16x8xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}

// -----

// f16 accumulates in f32.
// CHECK-LABEL: func.func @matmul_f16
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4x4xf32>)
// CHECK: arith.extf
// CHECK: arith.truncf %{{.*}} : f32 to f16
func.func @matmul_f16(%a: tensor<4x8xf16>, %b: tensor<8x4xf16>) -> tensor<4x4xf16> {
  %0 = flow.matmul %a, %b : (tensor<4x8xf16>, tensor<8x4xf16>) -> tensor<4x4xf16>
  return %0 : tensor<4x4xf16>
}

// -----

// Padding is a tensor.pad; groups pick the input channel block with floordiv;
// the bias initializes the accumulator.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, (d1 floordiv 4) * 2 + d4, d2 * 2 + d5, d3 * 2 + d6)>
// CHECK-DAG: #[[BIAS:.*]] = affine_map<(d0, d1, d2, d3) -> (d1)>
// CHECK-LABEL: func.func @conv_grouped
// CHECK: %[[P:.*]] = tensor.pad %{{.*}} low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: %[[INIT:.*]] = linalg.generic {indexing_maps = [#[[BIAS]]
// CHECK: linalg.generic {indexing_maps = [#[[IN]], {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
// CHECK-SAME: ins(%[[P]], %{{.*}} : tensor<1x4x10x10xf32>, tensor<8x2x3x3xf32>) outs(%[[INIT]] : tensor<1x8x4x4xf32>)
func.func @conv_grouped(%x: tensor<1x4x8x8xf32>, %w: tensor<8x2x3x3xf32>, %b: tensor<8xf32>) -> tensor<1x8x4x4xf32> {
  %0 = flow.conv2d %x, %w, %b strides = [2, 2] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 2
      : (tensor<1x4x8x8xf32>, tensor<8x2x3x3xf32>, tensor<8xf32>) -> tensor<1x8x4x4xf32>
  return %0 : tensor<1x8x4x4xf32>
}
