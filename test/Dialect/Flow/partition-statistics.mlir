// RUN: flow-opt %s -split-input-file --flow-partition | FileCheck %s

// The partition hooks of ops that reduce over a split dimension, index a
// split one or group their channels (signatures written by hand, as flow-propagate-sbp writes
// them). Uneven pieces: 7 over 3 devices is 3, 2, 2.

// Softmax over its split axis: the row maximum and the sum of exponentials
// of each piece, reduced across the mesh axis.
// CHECK-LABEL: func.func @softmax_r0(%arg0: tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK-SAME: flow.ranks = array<i64: 0>
// CHECK: %[[M:.*]] = flow.reduce_max %arg0 [1] {keepdims} : tensor<4x3xf32> -> tensor<4x1xf32>
// CHECK: %[[GM:.*]] = flow.all_reduce max %[[M]] on @m axes = [0] : tensor<4x1xf32>
// CHECK: %[[D:.*]] = flow.sub %arg0, %[[GM]]
// CHECK: %[[E:.*]] = flow.exp %[[D]]
// CHECK: %[[S:.*]] = flow.reduce_sum %[[E]] [1] {keepdims}
// CHECK: %[[GS:.*]] = flow.all_reduce sum %[[S]] on @m axes = [0] : tensor<4x1xf32>
// CHECK: flow.div %[[E]], %[[GS]]
// CHECK-LABEL: func.func @softmax_r1(%arg0: tensor<4x2xf32>)
// CHECK-SAME: flow.ranks = array<i64: 1, 2>
flow.mesh @m [3]
func.func @softmax(%x: tensor<4x7xf32> {flow.sbp = #flow.sbp<[S(1)]>})
    -> (tensor<4x7xf32> {flow.sbp = #flow.sbp<[S(1)]>}) attributes {flow.mesh = @m} {
  %0 = flow.softmax %x axis = 1 {flow.operand_sbp = [#flow.sbp<[S(1)]>], flow.sbp = [#flow.sbp<[S(1)]>]} : tensor<4x7xf32>
  return %0 : tensor<4x7xf32>
}

// -----

// Log-softmax: the shifted value less the log of the global sum.
// CHECK-LABEL: func.func @log_softmax
// CHECK: flow.all_reduce max
// CHECK: %[[D:.*]] = flow.sub %arg0
// CHECK: %[[GS:.*]] = flow.all_reduce sum
// CHECK: %[[L:.*]] = flow.log %[[GS]] : tensor<4x1xf32>
// CHECK: flow.sub %[[D]], %[[L]]
flow.mesh @m [2]
func.func @log_softmax(%x: tensor<4x8xf32> {flow.sbp = #flow.sbp<[S(1)]>})
    -> (tensor<4x8xf32> {flow.sbp = #flow.sbp<[S(1)]>}) attributes {flow.mesh = @m} {
  %0 = flow.log_softmax %x axis = 1 {flow.operand_sbp = [#flow.sbp<[S(1)]>], flow.sbp = [#flow.sbp<[S(1)]>]} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Layer norm over a split dimension: the mean and then the variance about
// it, each a sum over the global count (1/8); the weight and bias pieces
// are this device's.
// CHECK-LABEL: func.func @layer_norm(%arg0: tensor<4x4xf32>, %arg1: tensor<4xf32>, %arg2: tensor<4xf32>)
// CHECK: %[[N:.*]] = flow.constant dense<1.250000e-01> : tensor<f32>
// CHECK: %[[S:.*]] = flow.reduce_sum %arg0 [1] {keepdims}
// CHECK: %[[GS:.*]] = flow.all_reduce sum %[[S]] on @m axes = [0] : tensor<4x1xf32>
// CHECK: %[[MEAN:.*]] = flow.mul %[[GS]], %[[N]]
// CHECK: %[[C:.*]] = flow.sub %arg0, %[[MEAN]]
// CHECK: %[[SQ:.*]] = flow.mul %[[C]], %[[C]]
// CHECK: %[[V:.*]] = flow.reduce_sum %[[SQ]] [1] {keepdims}
// CHECK: flow.all_reduce sum %[[V]] on @m axes = [0]
// CHECK: flow.rsqrt
// CHECK: flow.mul %{{.*}}, %arg1
// CHECK: flow.add %{{.*}}, %arg2
flow.mesh @m [2]
func.func @layer_norm(%x: tensor<4x8xf32> {flow.sbp = #flow.sbp<[S(1)]>},
                      %w: tensor<8xf32> {flow.sbp = #flow.sbp<[S(0)]>},
                      %b: tensor<8xf32> {flow.sbp = #flow.sbp<[S(0)]>})
    -> (tensor<4x8xf32> {flow.sbp = #flow.sbp<[S(1)]>}) attributes {flow.mesh = @m} {
  %0 = flow.layer_norm %x weight %w bias %b axis = 1 epsilon = 1.0e-05
      {flow.operand_sbp = [#flow.sbp<[S(1)]>, #flow.sbp<[S(0)]>, #flow.sbp<[S(0)]>], flow.sbp = [#flow.sbp<[S(1)]>]}
      : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// RMS norm over a dimension split on both axes of a 2x2 mesh: one sum of
// squares, reduced across both.
// CHECK-LABEL: func.func @rms_norm(%arg0: tensor<4x2xf32>, %arg1: tensor<2xf32>)
// CHECK: %[[SQ:.*]] = flow.mul %arg0, %arg0
// CHECK: %[[S:.*]] = flow.reduce_sum %[[SQ]] [1] {keepdims}
// CHECK: flow.all_reduce sum %[[S]] on @m axes = [0, 1] : tensor<4x1xf32>
// CHECK: flow.rsqrt
// CHECK: flow.mul %{{.*}}, %arg1
flow.mesh @m [2, 2]
func.func @rms_norm(%x: tensor<4x8xf32> {flow.sbp = #flow.sbp<[S(1), S(1)]>},
                    %w: tensor<8xf32> {flow.sbp = #flow.sbp<[S(0), S(0)]>})
    -> (tensor<4x8xf32> {flow.sbp = #flow.sbp<[S(1), S(1)]>}) attributes {flow.mesh = @m} {
  %0 = flow.rms_norm %x weight %w axis = 1 epsilon = 1.0e-05
      {flow.operand_sbp = [#flow.sbp<[S(1), S(1)]>, #flow.sbp<[S(0), S(0)]>], flow.sbp = [#flow.sbp<[S(1), S(1)]>]}
      : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// A vocabulary-parallel embedding: rows [4, 7) on the second device. The
// global index is clamped as a gather clamps, made local (less the row the
// device's piece starts at, which the runtime fills in), and rows this
// device does not hold are zeros: a partial sum, reduced for the result.
// CHECK-LABEL: func.func @embedding_r1(%arg0: tensor<3x5xf32>, %arg1: tensor<2x3xi64>)
// CHECK: %[[ROW:.*]] = flow.piece_offsets <[S(0)]> of [7] : tensor<1xi64>
// CHECK: %[[OFF:.*]] = flow.reshape %[[ROW]] : tensor<1xi64> -> tensor<i64>
// CHECK-DAG: %[[ZERO:.*]] = flow.constant dense<0> : tensor<i64>
// CHECK-DAG: %[[LAST:.*]] = flow.constant dense<6> : tensor<i64>
// CHECK: %[[LO:.*]] = flow.maximum %arg1, %[[ZERO]]
// CHECK: %[[CL:.*]] = flow.minimum %[[LO]], %[[LAST]]
// CHECK: %[[LOCAL:.*]] = flow.sub %[[CL]], %[[OFF]]
// CHECK: %[[LOCAL_LAST:.*]] = flow.constant dense<2> : tensor<i64>
// CHECK: %[[IN:.*]] = flow.minimum %{{.*}}, %[[LOCAL_LAST]]
// CHECK: %[[HELD:.*]] = flow.compare eq, %[[IN]], %[[LOCAL]]
// CHECK: %[[ROWS:.*]] = flow.gather %arg0[%[[IN]]] axis = 0 : (tensor<3x5xf32>, tensor<2x3xi64>) -> tensor<2x3x5xf32>
// CHECK: %[[MASK:.*]] = flow.reshape %[[HELD]] : tensor<2x3xi1> -> tensor<2x3x1xi1>
// CHECK: %[[P:.*]] = flow.select %[[MASK]], %[[ROWS]]
// CHECK: flow.all_reduce sum %[[P]] on @m axes = [0] : tensor<2x3x5xf32>
flow.mesh @m [2]
func.func @embedding(%t: tensor<7x5xf32> {flow.sbp = #flow.sbp<[S(0)]>}, %ids: tensor<2x3xi64>)
    -> tensor<2x3x5xf32> attributes {flow.mesh = @m} {
  %0 = flow.gather %t[%ids] axis = 0
      {flow.operand_sbp = [#flow.sbp<[S(0)]>, #flow.sbp<[B]>], flow.sbp = [#flow.sbp<[P]>]}
      : (tensor<7x5xf32>, tensor<2x3xi64>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// -----

// The target's logit of a vocabulary-parallel cross-entropy: the element
// this device holds, zeros elsewhere.
// CHECK-LABEL: func.func @target_logit_r0(%arg0: tensor<4x4xf32>, %arg1: tensor<4x1xi32>)
// CHECK: %[[G:.*]] = flow.gather_elements %arg0[%{{.*}}] axis = 1 : (tensor<4x4xf32>, tensor<4x1xi32>) -> tensor<4x1xf32>
// CHECK: flow.select %{{.*}}, %[[G]], %{{.*}} : (tensor<4x1xi1>, tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
// CHECK: flow.all_reduce sum
flow.mesh @m [2]
func.func @target_logit(%l: tensor<4x7xf32> {flow.sbp = #flow.sbp<[S(1)]>}, %t: tensor<4x1xi32>)
    -> tensor<4x1xf32> attributes {flow.mesh = @m} {
  %0 = flow.gather_elements %l[%t] axis = 1
      {flow.operand_sbp = [#flow.sbp<[S(1)]>, #flow.sbp<[B]>], flow.sbp = [#flow.sbp<[P]>]}
      : (tensor<4x7xf32>, tensor<4x1xi32>) -> tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}

// -----

// A grouped convolution over split channels: each device convolves its
// whole groups (4 groups of 2 channels on 2 devices: 2 groups each, the
// op's `groups` in local terms).
// CHECK-LABEL: func.func @grouped_conv(%arg0: tensor<2x4x6x6xf32>, %arg1: tensor<6x2x3x3xf32>, %arg2: tensor<6xf32>) -> tensor<2x6x6x6xf32>
// CHECK-SAME: flow.ranks = array<i64: 0, 1>
// CHECK: flow.conv2d %arg0, %arg1, %arg2 {{.*}} groups = 2 : (tensor<2x4x6x6xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<2x6x6x6xf32>
flow.mesh @m [2]
func.func @grouped_conv(%x: tensor<2x8x6x6xf32> {flow.sbp = #flow.sbp<[S(1)]>},
                        %w: tensor<12x2x3x3xf32> {flow.sbp = #flow.sbp<[S(0)]>},
                        %b: tensor<12xf32> {flow.sbp = #flow.sbp<[S(0)]>})
    -> (tensor<2x12x6x6xf32> {flow.sbp = #flow.sbp<[S(1)]>}) attributes {flow.mesh = @m} {
  %0 = flow.conv2d %x, %w, %b strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 4
      {flow.operand_sbp = [#flow.sbp<[S(1)]>, #flow.sbp<[S(0)]>, #flow.sbp<[S(0)]>], flow.sbp = [#flow.sbp<[S(1)]>]}
      : (tensor<2x8x6x6xf32>, tensor<12x2x3x3xf32>, tensor<12xf32>) -> tensor<2x12x6x6xf32>
  return %0 : tensor<2x12x6x6xf32>
}

// -----

// Depthwise on a 2x2 mesh, channels split over both axes: 8 groups in 4
// pieces of 2.
// CHECK-LABEL: func.func @depthwise(%arg0: tensor<1x2x5x5xf32>, %arg1: tensor<2x1x3x3xf32>) -> tensor<1x2x5x5xf32>
// CHECK-SAME: flow.ranks = array<i64: 0, 1, 2, 3>
// CHECK: flow.conv2d %arg0, %arg1 {{.*}} groups = 2 :
flow.mesh @m2 [2, 2]
func.func @depthwise(%x: tensor<1x8x5x5xf32> {flow.sbp = #flow.sbp<[S(1), S(1)]>},
                     %w: tensor<8x1x3x3xf32> {flow.sbp = #flow.sbp<[S(0), S(0)]>})
    -> (tensor<1x8x5x5xf32> {flow.sbp = #flow.sbp<[S(1), S(1)]>}) attributes {flow.mesh = @m2} {
  %0 = flow.conv2d %x, %w strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 8
      {flow.operand_sbp = [#flow.sbp<[S(1), S(1)]>, #flow.sbp<[S(0), S(0)]>], flow.sbp = [#flow.sbp<[S(1), S(1)]>]}
      : (tensor<1x8x5x5xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x5x5xf32>
  return %0 : tensor<1x8x5x5xf32>
}
