// RUN: flow-opt %s | flow-opt | FileCheck %s
// RUN: flow-opt %s --mlir-print-op-generic | flow-opt | FileCheck %s
// RUN: flow-opt %s --emit-bytecode | flow-opt | FileCheck %s

// Every op of the flow dialect and every SBP form, printed and parsed back.

// CHECK: flow.mesh @mesh1d [4]
// CHECK: flow.mesh @mesh2d [2, 4]
flow.mesh @mesh1d [4]
flow.mesh @mesh2d [2, 4]

// CHECK-LABEL: func.func @sbp_forms
// CHECK-SAME: {flow.sbp = #flow.sbp<[S(0), B]>}
// CHECK-SAME: {flow.sbp = #flow.sbp<[P, P(max)]>}
// CHECK-SAME: {flow.sbp = #flow.sbp<[B, S(1)]>}
// CHECK-SAME: attributes {flow.mesh = @mesh2d}
func.func @sbp_forms(%a: tensor<8x16xf32> {flow.sbp = #flow.sbp<[S(0), B]>},
                     %b: tensor<8x16xf32> {flow.sbp = #flow.sbp<[P(sum), P(max)]>})
    -> (tensor<8x16xf32> {flow.sbp = #flow.sbp<[B, S(1)]>})
    attributes {flow.mesh = @mesh2d} {
  // CHECK: flow.annotate %{{.*}} as #flow.sbp<[S(1)]> on @mesh1d : tensor<8x16xf32>
  %0 = flow.annotate %a as #flow.sbp<[S(1)]> on @mesh1d : tensor<8x16xf32>
  // CHECK: flow.annotate %{{.*}} as #flow.sbp<[S(0), S(0)]> on @mesh2d
  %1 = flow.annotate %0 as #flow.sbp<[S(0), S(0)]> on @mesh2d : tensor<8x16xf32>
  // CHECK: flow.annotate %{{.*}} as #flow.sbp<[P, B]> on @mesh2d
  %2 = flow.annotate %1 as #flow.sbp<[P, B]> on @mesh2d : tensor<8x16xf32>
  return %2 : tensor<8x16xf32>
}

// CHECK-LABEL: func.func @constant
func.func @constant() -> (tensor<2x2xf32>, tensor<4xi64>, tensor<i1>, tensor<3xbf16>) {
  // CHECK: flow.constant dense<{{\[}}[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
  %0 = flow.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  // CHECK: flow.constant dense<7> : tensor<4xi64>
  %1 = flow.constant dense<7> : tensor<4xi64>
  // CHECK: flow.constant dense<true> : tensor<i1>
  %2 = flow.constant dense<true> : tensor<i1>
  // CHECK: flow.constant dense<5.000000e-01> : tensor<3xbf16>
  %3 = flow.constant dense<0.5> : tensor<3xbf16>
  return %0, %1, %2, %3 : tensor<2x2xf32>, tensor<4xi64>, tensor<i1>, tensor<3xbf16>
}

// CHECK-LABEL: func.func @unary
func.func @unary(%x: tensor<4x8xf32>, %h: tensor<4xf16>, %i: tensor<4xi32>) -> tensor<4x8xf32> {
  // CHECK: flow.neg %{{.*}} : tensor<4x8xf32>
  %0 = flow.neg %x : tensor<4x8xf32>
  // CHECK: flow.abs %{{.*}} : tensor<4xi32>
  %1 = flow.abs %i : tensor<4xi32>
  // CHECK: flow.exp
  %2 = flow.exp %0 : tensor<4x8xf32>
  // CHECK: flow.log
  %3 = flow.log %2 : tensor<4x8xf32>
  // CHECK: flow.sqrt
  %4 = flow.sqrt %3 : tensor<4x8xf32>
  // CHECK: flow.rsqrt
  %5 = flow.rsqrt %4 : tensor<4x8xf32>
  // CHECK: flow.tanh
  // CHECK: flow.erf
  %6 = flow.tanh %5 : tensor<4x8xf32>
  %e = flow.erf %6 : tensor<4x8xf32>
  // CHECK: flow.sin %{{.*}} : tensor<4x8xf32>
  // CHECK: flow.cos %{{.*}} : tensor<4x8xf32>
  %sn = flow.sin %6 : tensor<4x8xf32>
  %cs = flow.cos %sn : tensor<4x8xf32>
  // CHECK: flow.floor
  // CHECK: flow.ceil
  // CHECK: flow.round
  %fl = flow.floor %cs : tensor<4x8xf32>
  %ce = flow.ceil %fl : tensor<4x8xf32>
  %ro = flow.round %ce : tensor<4x8xf32>
  // CHECK: flow.sigmoid %{{.*}} : tensor<4xf16>
  %7 = flow.sigmoid %h : tensor<4xf16>
  // CHECK: flow.relu %{{.*}} : tensor<4xi32>
  %8 = flow.relu %1 : tensor<4xi32>
  // CHECK: flow.gelu %{{.*}} : tensor<4x8xf32>
  %9 = flow.gelu %6 : tensor<4x8xf32>
  // CHECK: flow.gelu %{{.*}} approximate = tanh : tensor<4x8xf32>
  %10 = flow.gelu %9 approximate = tanh : tensor<4x8xf32>
  // CHECK: flow.silu
  %11 = flow.silu %10 : tensor<4x8xf32>
  // CHECK: flow.cast %{{.*}} : tensor<4x8xf32> to tensor<4x8xbf16>
  %12 = flow.cast %11 : tensor<4x8xf32> to tensor<4x8xbf16>
  // CHECK: flow.cast %{{.*}} : tensor<4xi32> to tensor<4xi1>
  %13 = flow.cast %8 : tensor<4xi32> to tensor<4xi1>
  return %11 : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @binary
func.func @binary(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %s: tensor<f32>,
                  %i: tensor<2x1xi64>, %j: tensor<3xi64>) -> tensor<4x8xf32> {
  // CHECK: flow.add %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %0 = flow.add %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: flow.sub %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %1 = flow.sub %0, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  // CHECK: flow.mul %{{.*}}, %{{.*}} : (tensor<2x1xi64>, tensor<3xi64>) -> tensor<2x3xi64>
  %2 = flow.mul %i, %j : (tensor<2x1xi64>, tensor<3xi64>) -> tensor<2x3xi64>
  // CHECK: flow.div
  %3 = flow.div %1, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: flow.maximum
  %4 = flow.maximum %3, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: flow.minimum
  %5 = flow.minimum %4, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  // CHECK: flow.pow
  %6 = flow.pow %5, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  // CHECK: flow.compare ge, %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  %7 = flow.compare ge, %6, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  // CHECK: flow.compare eq, %{{.*}}, %{{.*}} : (tensor<2x1xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  %8 = flow.compare eq, %i, %j : (tensor<2x1xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  // CHECK: flow.select %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %9 = flow.select %7, %6, %s : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %9 : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @contractions
func.func @contractions(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>,
                        %q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>,
                        %img: tensor<1x4x32x32xf32>, %f: tensor<8x2x3x3xf32>,
                        %bias: tensor<8xf32>) -> tensor<8x32xf32> {
  // CHECK: flow.matmul %{{.*}}, %{{.*}} : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %0 = flow.matmul %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  // CHECK: flow.matmul %{{.*}}, %{{.*}} {transpose_rhs} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x8xf32>
  %1 = flow.matmul %q, %k {transpose_rhs} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x8xf32>
  // CHECK: flow.matmul %{{.*}}, %{{.*}} {transpose_lhs} : (tensor<8x16xf32>, tensor<8x32xf32>) -> tensor<16x32xf32>
  %2 = flow.matmul %x, %0 {transpose_lhs} : (tensor<8x16xf32>, tensor<8x32xf32>) -> tensor<16x32xf32>
  // Batch dims broadcast: a 2-D rhs is shared by every batch.
  // CHECK: flow.matmul %{{.*}}, %{{.*}} : (tensor<2x4x8x16xf32>, tensor<16x32xf32>) -> tensor<2x4x8x32xf32>
  %3 = flow.matmul %q, %w : (tensor<2x4x8x16xf32>, tensor<16x32xf32>) -> tensor<2x4x8x32xf32>
  // CHECK: flow.conv2d %{{.*}}, %{{.*}}, %{{.*}} strides = [2, 2] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 2
  // CHECK-SAME: -> tensor<1x8x16x16xf32>
  %4 = flow.conv2d %img, %f, %bias strides = [2, 2] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 2
      : (tensor<1x4x32x32xf32>, tensor<8x2x3x3xf32>, tensor<8xf32>) -> tensor<1x8x16x16xf32>
  // CHECK: flow.im2col %{{.*}} kernel = [3, 3] strides = [2, 2] padding = [1, 1, 1, 1] dilations = [1, 1] : tensor<1x4x32x32xf32> -> tensor<1x4x3x3x16x16xf32>
  %cols = flow.im2col %img kernel = [3, 3] strides = [2, 2] padding = [1, 1, 1, 1] dilations = [1, 1]
      : tensor<1x4x32x32xf32> -> tensor<1x4x3x3x16x16xf32>
  // CHECK: flow.conv2d %{{.*}}, %{{.*}} strides = [1, 1] padding = [0, 0, 0, 0] dilations = [2, 2] groups = 2
  // CHECK-SAME: -> tensor<1x8x28x28xf32>
  %5 = flow.conv2d %img, %f strides = [1, 1] padding = [0, 0, 0, 0] dilations = [2, 2] groups = 2
      : (tensor<1x4x32x32xf32>, tensor<8x2x3x3xf32>) -> tensor<1x8x28x28xf32>
  return %0 : tensor<8x32xf32>
}

// CHECK-LABEL: func.func @reductions
func.func @reductions(%x: tensor<2x16x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>,
                      %gb: tensor<16x64xf32>, %i: tensor<4x8xi32>) -> tensor<2xf32> {
  // CHECK: flow.reduce_sum %{{.*}} [1, 2] : tensor<2x16x64xf32> -> tensor<2xf32>
  %0 = flow.reduce_sum %x [1, 2] : tensor<2x16x64xf32> -> tensor<2xf32>
  // CHECK: flow.reduce_mean %{{.*}} [2] {keepdims} : tensor<2x16x64xf32> -> tensor<2x16x1xf32>
  %1 = flow.reduce_mean %x [2] {keepdims} : tensor<2x16x64xf32> -> tensor<2x16x1xf32>
  // CHECK: flow.reduce_max %{{.*}} [0] : tensor<4x8xi32> -> tensor<8xi32>
  %2 = flow.reduce_max %i [0] : tensor<4x8xi32> -> tensor<8xi32>
  // CHECK: flow.softmax %{{.*}} axis = 2 : tensor<2x16x64xf32>
  %3 = flow.softmax %x axis = 2 : tensor<2x16x64xf32>
  // CHECK: flow.log_softmax %{{.*}} axis = 0 : tensor<2x16x64xf32>
  %4 = flow.log_softmax %x axis = 0 : tensor<2x16x64xf32>
  // CHECK: flow.layer_norm %{{.*}} weight %{{.*}} bias %{{.*}} axis = 2 epsilon = 1.000000e-05
  %5 = flow.layer_norm %x weight %g bias %b axis = 2 epsilon = 1.0e-05
      : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  // CHECK: flow.layer_norm %{{.*}} weight %{{.*}} axis = 1 epsilon = 1.000000e-05
  %6 = flow.layer_norm %x weight %gb axis = 1 epsilon = 1.0e-05
      : (tensor<2x16x64xf32>, tensor<16x64xf32>) -> tensor<2x16x64xf32>
  // CHECK: flow.layer_norm %{{.*}} bias %{{.*}} axis = 2
  %7 = flow.layer_norm %x bias %b axis = 2 epsilon = 1.0e-05
      : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  // CHECK: flow.layer_norm %{{.*}} axis = 2 epsilon = 0.000000e+00 : (tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
  %8 = flow.layer_norm %x axis = 2 epsilon = 0.0 : (tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
  // CHECK: flow.rms_norm %{{.*}} weight %{{.*}} axis = 2 epsilon = 9.9999999999999995E-7
  %9 = flow.rms_norm %x weight %g axis = 2 epsilon = 1.0e-06
      : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  // CHECK: flow.rms_norm %{{.*}} axis = 2 epsilon = 1.000000e-05 : (tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
  %10 = flow.rms_norm %x axis = 2 epsilon = 1.0e-05 : (tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
  return %0 : tensor<2xf32>
}

// CHECK-LABEL: func.func @cnn_ops
func.func @cnn_ops(%x: tensor<1x16x32x32xf32>, %s: tensor<16xf32>, %b: tensor<16xf32>,
                   %m: tensor<16xf32>, %v: tensor<16xf32>) -> tensor<1x16x16x16xf32> {
  // CHECK: flow.batch_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} epsilon = 1.000000e-05
  %0 = flow.batch_norm %x, %s, %b, %m, %v epsilon = 1.0e-05
      : (tensor<1x16x32x32xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
      -> tensor<1x16x32x32xf32>
  // CHECK: flow.max_pool2d %{{.*}} kernel = [3, 3] strides = [2, 2] padding = [1, 1, 1, 1] dilations = [1, 1] : tensor<1x16x32x32xf32> -> tensor<1x16x16x16xf32>
  %1 = flow.max_pool2d %0 kernel = [3, 3] strides = [2, 2] padding = [1, 1, 1, 1] dilations = [1, 1]
      : tensor<1x16x32x32xf32> -> tensor<1x16x16x16xf32>
  // ceil_mode keeps the partial last window: (32 - 3) / 2 rounded up, plus 1.
  // CHECK: flow.max_pool2d {{.*}} {ceil_mode} : tensor<1x16x32x32xf32> -> tensor<1x16x16x16xf32>
  %2 = flow.max_pool2d %0 kernel = [3, 3] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1] {ceil_mode}
      : tensor<1x16x32x32xf32> -> tensor<1x16x16x16xf32>
  // CHECK: flow.avg_pool2d %{{.*}} kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] : tensor<1x16x32x32xf32> -> tensor<1x16x16x16xf32>
  %3 = flow.avg_pool2d %0 kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0]
      : tensor<1x16x32x32xf32> -> tensor<1x16x16x16xf32>
  // CHECK: flow.avg_pool2d {{.*}} {ceil_mode, count_include_pad}
  %4 = flow.avg_pool2d %0 kernel = [3, 3] strides = [2, 2] padding = [1, 1, 1, 1] {ceil_mode, count_include_pad}
      : tensor<1x16x32x32xf32> -> tensor<1x16x17x17xf32>
  return %1 : tensor<1x16x16x16xf32>
}

// CHECK-LABEL: func.func @data_movement
func.func @data_movement(%x: tensor<2x3x4xf32>, %y: tensor<2x5x4xf32>, %t: tensor<1000x64xf32>,
                         %ids: tensor<2x16xi64>, %r: tensor<1x4xf32>, %ids32: tensor<3xi32>,
                         %ids5: tensor<2x5x4xi32>)
    -> tensor<6x4xf32> {
  // CHECK: flow.reshape %{{.*}} : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %0 = flow.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  // CHECK: flow.transpose %{{.*}} [0, 2, 1] : tensor<2x3x4xf32> -> tensor<2x4x3xf32>
  %1 = flow.transpose %x [0, 2, 1] : tensor<2x3x4xf32> -> tensor<2x4x3xf32>
  // CHECK: flow.broadcast_to %{{.*}} : tensor<1x4xf32> -> tensor<2x3x4xf32>
  %2 = flow.broadcast_to %r : tensor<1x4xf32> -> tensor<2x3x4xf32>
  // CHECK: flow.concat %{{.*}}, %{{.*}}, %{{.*}} axis = 1 : (tensor<2x3x4xf32>, tensor<2x5x4xf32>, tensor<2x3x4xf32>) -> tensor<2x11x4xf32>
  %3 = flow.concat %x, %y, %2 axis = 1
      : (tensor<2x3x4xf32>, tensor<2x5x4xf32>, tensor<2x3x4xf32>) -> tensor<2x11x4xf32>
  // CHECK: flow.slice %{{.*}} starts = [0, 1, 0] limits = [2, 5, 4] strides = [1, 2, 3] : tensor<2x5x4xf32> -> tensor<2x2x2xf32>
  %4 = flow.slice %y starts = [0, 1, 0] limits = [2, 5, 4] strides = [1, 2, 3]
      : tensor<2x5x4xf32> -> tensor<2x2x2xf32>
  // CHECK: flow.reverse %{{.*}} axes = [0, 2] : tensor<2x3x4xf32>
  %rev = flow.reverse %x axes = [0, 2] : tensor<2x3x4xf32>
  // CHECK: flow.cumsum %{{.*}} axis = 1 : tensor<2x3x4xf32>
  // CHECK: flow.cumsum %{{.*}} axis = 2 {exclusive, reverse} : tensor<2x3x4xf32>
  %cs = flow.cumsum %x axis = 1 : tensor<2x3x4xf32>
  %cx = flow.cumsum %x axis = 2 {exclusive, reverse} : tensor<2x3x4xf32>
  // CHECK: flow.gather_elements %{{.*}}[%{{.*}}] axis = 1 : (tensor<2x3x4xf32>, tensor<2x5x4xi32>) -> tensor<2x5x4xf32>
  %ge = flow.gather_elements %x[%ids5] axis = 1 : (tensor<2x3x4xf32>, tensor<2x5x4xi32>) -> tensor<2x5x4xf32>
  // CHECK: flow.argmax %{{.*}} axis = 1 : tensor<2x3x4xf32> -> tensor<2x4xi64>
  // CHECK: flow.argmin %{{.*}} axis = 2 {keepdims, select_last_index} : tensor<2x3x4xf32> -> tensor<2x3x1xi64>
  %am = flow.argmax %x axis = 1 : tensor<2x3x4xf32> -> tensor<2x4xi64>
  %an = flow.argmin %x axis = 2 {keepdims, select_last_index} : tensor<2x3x4xf32> -> tensor<2x3x1xi64>
  // CHECK: flow.gather %{{.*}}[%{{.*}}] axis = 0 : (tensor<1000x64xf32>, tensor<2x16xi64>) -> tensor<2x16x64xf32>
  %5 = flow.gather %t[%ids] axis = 0 : (tensor<1000x64xf32>, tensor<2x16xi64>) -> tensor<2x16x64xf32>
  // CHECK: flow.gather %{{.*}}[%{{.*}}] axis = 1 : (tensor<2x3x4xf32>, tensor<3xi32>) -> tensor<2x3x4xf32>
  %6 = flow.gather %x[%ids32] axis = 1 : (tensor<2x3x4xf32>, tensor<3xi32>) -> tensor<2x3x4xf32>
  // CHECK: flow.pad %{{.*}} low = [0, 1, 0] high = [0, 2, 1] value = 0.000000e+00 : tensor<2x3x4xf32> -> tensor<2x6x5xf32>
  %7 = flow.pad %x low = [0, 1, 0] high = [0, 2, 1] value = 0.0 : tensor<2x3x4xf32> -> tensor<2x6x5xf32>
  // CHECK: flow.pad %{{.*}} value = -1.000000e+00
  %8 = flow.pad %x low = [0, 0, 0] high = [1, 0, 0] value = -1.0 : tensor<2x3x4xf32> -> tensor<3x3x4xf32>
  return %0 : tensor<6x4xf32>
}

// CHECK-LABEL: func.func @collectives
func.func @collectives(%x: tensor<2x16xf32>, %y: tensor<8x16xf32>, %i: tensor<4xi32>) -> tensor<8x16xf32> {
  // CHECK: flow.all_reduce sum %{{.*}} on @mesh2d axes = [1] : tensor<8x16xf32>
  %0 = flow.all_reduce sum %y on @mesh2d axes = [1] : tensor<8x16xf32>
  // CHECK: flow.all_reduce max %{{.*}} on @mesh2d axes = [0, 1] : tensor<4xi32>
  %1 = flow.all_reduce max %i on @mesh2d axes = [0, 1] : tensor<4xi32>
  // CHECK: flow.all_gather %{{.*}} on @mesh1d axes = [0] dim = 0 : tensor<2x16xf32> -> tensor<8x16xf32>
  %2 = flow.all_gather %x on @mesh1d axes = [0] dim = 0 : tensor<2x16xf32> -> tensor<8x16xf32>
  // Uneven pieces: 7 rows over 4 devices are 2, 2, 2 and 1 rows.
  // CHECK: flow.all_gather %{{.*}} on @mesh1d axes = [0] dim = 0 : tensor<2x16xf32> -> tensor<7x16xf32>
  %u = flow.all_gather %x on @mesh1d axes = [0] dim = 0 : tensor<2x16xf32> -> tensor<7x16xf32>
  // CHECK: flow.all_gather %{{.*}} on @mesh2d axes = [0, 1] dim = 1 : tensor<2x16xf32> -> tensor<2x128xf32>
  %3 = flow.all_gather %x on @mesh2d axes = [0, 1] dim = 1 : tensor<2x16xf32> -> tensor<2x128xf32>
  // CHECK: flow.reduce_scatter sum %{{.*}} on @mesh1d axes = [0] dim = 0 : tensor<8x16xf32> -> tensor<2x16xf32>
  %4 = flow.reduce_scatter sum %y on @mesh1d axes = [0] dim = 0 : tensor<8x16xf32> -> tensor<2x16xf32>
  // CHECK: flow.reduce_scatter max %{{.*}} on @mesh2d axes = [0] dim = 1 : tensor<8x16xf32> -> tensor<8x8xf32>
  %5 = flow.reduce_scatter max %y on @mesh2d axes = [0] dim = 1 : tensor<8x16xf32> -> tensor<8x8xf32>
  // CHECK: flow.all_to_all %{{.*}} on @mesh1d axes = [0] split_dim = 1 concat_dim = 0 : tensor<2x16xf32> -> tensor<8x4xf32>
  %6 = flow.all_to_all %x on @mesh1d axes = [0] split_dim = 1 concat_dim = 0 : tensor<2x16xf32> -> tensor<8x4xf32>
  // CHECK: flow.all_to_all %{{.*}} split_dim = 0 concat_dim = 0 : tensor<8x16xf32> -> tensor<8x16xf32>
  %7 = flow.all_to_all %y on @mesh1d axes = [0] split_dim = 0 concat_dim = 0 : tensor<8x16xf32> -> tensor<8x16xf32>
  // CHECK: flow.broadcast %{{.*}} on @mesh2d axes = [1] root = 3 : tensor<8x16xf32>
  %8 = flow.broadcast %y on @mesh2d axes = [1] root = 3 : tensor<8x16xf32>
  return %8 : tensor<8x16xf32>
}

// CHECK-LABEL: func.func @scatter
func.func @scatter(%x: tensor<4x8xf32>, %i: tensor<2x1xi64>, %u: tensor<2x8xf32>,
                   %j: tensor<3x2xi32>, %v: tensor<3xf32>, %b: tensor<4x8xui8>,
                   %bu: tensor<2x8xui8>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xui8>) {
  // CHECK: flow.scatter_nd %{{.*}}[%{{.*}}], %{{.*}} : (tensor<4x8xf32>, tensor<2x1xi64>, tensor<2x8xf32>) -> tensor<4x8xf32>
  %0 = flow.scatter_nd %x[%i], %u : (tensor<4x8xf32>, tensor<2x1xi64>, tensor<2x8xf32>) -> tensor<4x8xf32>
  // CHECK: flow.scatter_nd %{{.*}}[%{{.*}}], %{{.*}} reduction = add : (tensor<4x8xf32>, tensor<3x2xi32>, tensor<3xf32>) -> tensor<4x8xf32>
  %1 = flow.scatter_nd %0[%j], %v reduction = add : (tensor<4x8xf32>, tensor<3x2xi32>, tensor<3xf32>) -> tensor<4x8xf32>
  // CHECK: flow.scatter_nd %{{.*}}[%{{.*}}], %{{.*}} reduction = max : (tensor<4x8xui8>, tensor<2x1xi64>, tensor<2x8xui8>) -> tensor<4x8xui8>
  %2 = flow.scatter_nd %b[%i], %bu reduction = max : (tensor<4x8xui8>, tensor<2x1xi64>, tensor<2x8xui8>) -> tensor<4x8xui8>
  return %0, %1, %2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xui8>
}

// CHECK-LABEL: func.func @sort
func.func @sort(%x: tensor<4x100xf32>) -> (tensor<4x100xf32>, tensor<4x100xi64>) {
  // CHECK: flow.sort %{{.*}} axis = 1 {descending} : tensor<4x100xf32> -> (tensor<4x100xf32>, tensor<4x100xi64>)
  %v, %i = flow.sort %x axis = 1 {descending} : tensor<4x100xf32> -> (tensor<4x100xf32>, tensor<4x100xi64>)
  return %v, %i : tensor<4x100xf32>, tensor<4x100xi64>
}

// CHECK-LABEL: func.func @random_uniform
func.func @random_uniform(%seed: tensor<i64>, %offset: tensor<i64>) -> (tensor<4x8xf32>, tensor<f32>) {
  // CHECK: flow.random_uniform %{{.*}}, %{{.*}} stream = 3 : tensor<4x8xf32>
  %0 = flow.random_uniform %seed, %offset stream = 3 : tensor<4x8xf32>
  // CHECK: flow.random_uniform %{{.*}}, %{{.*}} stream = 0 : tensor<f32>
  %1 = flow.random_uniform %seed, %offset stream = 0 : tensor<f32>
  return %0, %1 : tensor<4x8xf32>, tensor<f32>
}

// A device's place in an SPMD program: its piece's offsets (filled in by
// the runtime) and a slice at them.
// CHECK-LABEL: func.func @device_place
func.func @device_place(%x: tensor<8x6xf32>) -> (tensor<4x6xf32>, tensor<2xi64>)
    attributes {flow.mesh = @mesh2d} {
  // CHECK: %[[O:.*]] = flow.piece_offsets <[S(0), B]> of [8, 6] : tensor<2xi64>
  %o = flow.piece_offsets <[S(0), B]> of [8, 6] : tensor<2xi64>
  // CHECK: flow.piece_offsets <[S(0), S(1)]> within <[S(0), B]> of [8, 6] : tensor<2xi64>
  %w = flow.piece_offsets <[S(0), S(1)]> within <[S(0), B]> of [8, 6] : tensor<2xi64>
  // CHECK: flow.dynamic_slice %{{.*}}[%[[O]]] : (tensor<8x6xf32>, tensor<2xi64>) -> tensor<4x6xf32>
  %s = flow.dynamic_slice %x[%o] : (tensor<8x6xf32>, tensor<2xi64>) -> tensor<4x6xf32>
  return %s, %w : tensor<4x6xf32>, tensor<2xi64>
}
