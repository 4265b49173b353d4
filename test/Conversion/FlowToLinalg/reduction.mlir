// RUN: flow-opt %s -split-input-file --flow-convert-to-linalg | FileCheck %s --implicit-check-not=flow.

// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2) -> (d0)>
// CHECK-LABEL: func.func @reduce_sum
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<2xf32>)
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[OUT]]], iterator_types = ["parallel", "reduction", "reduction"]}
func.func @reduce_sum(%x: tensor<2x3x4xf32>) -> tensor<2xf32> {
  %0 = flow.reduce_sum %x [1, 2] : tensor<2x3x4xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// keepdims keeps the reduced axis at index 0 of a size-1 dim.
// CHECK-DAG: #[[KEEP:.*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-LABEL: func.func @reduce_mean_keepdims
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[KEEP]]]
// CHECK: arith.constant 8.000000e+00 : f32
// CHECK: arith.divf
func.func @reduce_mean_keepdims(%x: tensor<4x8xf32>) -> tensor<4x1xf32> {
  %0 = flow.reduce_mean %x [1] {keepdims} : tensor<4x8xf32> -> tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}

// -----

// max starts from -inf (integers: the smallest value).
// CHECK-LABEL: func.func @reduce_max
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: arith.maximumf
// CHECK: arith.constant -2147483648 : i32
// CHECK: arith.maxsi
func.func @reduce_max(%x: tensor<4x8xf32>, %i: tensor<4x8xi32>) -> (tensor<8xf32>, tensor<8xi32>) {
  %0 = flow.reduce_max %x [0] : tensor<4x8xf32> -> tensor<8xf32>
  %1 = flow.reduce_max %i [0] : tensor<4x8xi32> -> tensor<8xi32>
  return %0, %1 : tensor<8xf32>, tensor<8xi32>
}

// -----

// softmax: max, sum of exp(x - max), then exp(x - max) / sum.
// CHECK-LABEL: func.func @softmax
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: arith.addf
// CHECK: math.exp
// CHECK: arith.divf
// CHECK-NOT: linalg.generic
func.func @softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = flow.softmax %x axis = 1 : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @log_softmax
// CHECK: math.log
// CHECK: arith.subf
func.func @log_softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = flow.log_softmax %x axis = 1 : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// layer_norm: sum, sum of squared deviations, then normalize and scale.
// CHECK-LABEL: func.func @layer_norm
// CHECK-COUNT-2: iterator_types = ["parallel", "reduction"]
// CHECK: math.rsqrt
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @layer_norm(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = flow.layer_norm %x weight %g bias %b axis = 1 epsilon = 1.0e-05
      : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @rms_norm
// CHECK-COUNT-1: iterator_types = ["parallel", "reduction"]
// CHECK: math.rsqrt
func.func @rms_norm(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = flow.rms_norm %x weight %g axis = 1 epsilon = 1.0e-06
      : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2, d3) -> (d1)>
// CHECK-LABEL: func.func @batch_norm
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[C]], #[[C]], #[[C]], #[[C]], #{{.*}}]
// CHECK: math.rsqrt
func.func @batch_norm(%x: tensor<2x4x3x3xf32>, %p: tensor<4xf32>) -> tensor<2x4x3x3xf32> {
  %0 = flow.batch_norm %x, %p, %p, %p, %p epsilon = 1.0e-05
      : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x3x3xf32>
  return %0 : tensor<2x4x3x3xf32>
}

// -----

// Max pooling pads with -inf; ceil_mode pads one more row and column so the
// partial last window stays in bounds.
// CHECK-LABEL: func.func @max_pool_ceil
// CHECK: tensor.pad %{{.*}} low[0, 0, 0, 0] high[0, 0, 1, 1]
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: arith.maximumf
func.func @max_pool_ceil(%x: tensor<1x2x6x6xf32>) -> tensor<1x2x3x3xf32> {
  %0 = flow.max_pool2d %x kernel = [3, 3] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1] {ceil_mode}
      : tensor<1x2x6x6xf32> -> tensor<1x2x3x3xf32>
  return %0 : tensor<1x2x3x3xf32>
}

// -----

// Average pooling divides by a window size computed per output position.
// CHECK-LABEL: func.func @avg_pool
// CHECK: tensor.pad %{{.*}} low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: arith.addf
// CHECK: linalg.index 2
// CHECK: linalg.index 3
// CHECK: arith.sitofp
// CHECK: arith.divf
func.func @avg_pool(%x: tensor<1x2x6x6xf32>) -> tensor<1x2x3x3xf32> {
  %0 = flow.avg_pool2d %x kernel = [3, 3] strides = [2, 2] padding = [1, 1, 1, 1]
      : tensor<1x2x6x6xf32> -> tensor<1x2x3x3xf32>
  return %0 : tensor<1x2x3x3xf32>
}
