// RUN: flow-opt %s -split-input-file --flow-propagate-sbp=print-rules -o /dev/null 2>&1 | FileCheck %s

// Each op's SBP rules along one mesh axis (docs/distributed.md), all-B
// first.

flow.mesh @m [2]
func.func @rules(%x: tensor<4x8xf32>, %v: tensor<8xf32>, %w: tensor<8x6xf32>,
                 %b3: tensor<2x4x8xf32>, %img: tensor<2x4x6x6xf32>,
                 %f: tensor<8x4x3x3xf32>, %t: tensor<10x8xf32>,
                 %ids: tensor<2x3xi64>) attributes {flow.mesh = @m} {
  // CHECK: remark: rules: ([B] -> [B]) ([S(0)] -> [S(0)]) ([S(1)] -> [S(1)])
  %0 = flow.relu %x : tensor<4x8xf32>
  // Negation is linear: partial sums pass.
  // CHECK: remark: rules: ([B] -> [B]) ([S(0)] -> [S(0)]) ([S(1)] -> [S(1)]) ([P] -> [P])
  %1 = flow.neg %x : tensor<4x8xf32>
  // The broadcast operand is whole when the result splits along its
  // missing dimension.
  // CHECK: remark: rules: ([B, B] -> [B]) ([S(0), B] -> [S(0)]) ([S(1), S(0)] -> [S(1)]) ([P, P] -> [P])
  %2 = flow.add %x, %v : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: remark: rules: ([B, B] -> [B]) ([S(0), B] -> [S(0)]) ([S(1), S(0)] -> [S(1)]) ([P, B] -> [P]) ([B, P] -> [P])
  %3 = flow.mul %x, %v : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: remark: rules: ([B, B] -> [B]) ([S(0), B] -> [S(0)]) ([B, S(1)] -> [S(1)]) ([S(1), S(0)] -> [P]) ([P, B] -> [P]) ([B, P] -> [P])
  %4 = flow.matmul %x, %w : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
  // Batch matmul adds the batch split; transposed operands swap dims.
  // CHECK: remark: rules: ([B, B] -> [B]) ([S(1), B] -> [S(1)]) ([B, S(1)] -> [S(2)]) ([S(2), S(2)] -> [P]) ([P, B] -> [P]) ([B, P] -> [P]) ([S(0), S(0)] -> [S(0)])
  %5 = flow.matmul %b3, %b3 {transpose_rhs} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
  // CHECK: remark: rules: ([B] -> [B]) ([S(0)] -> [S(0)]) ([S(1)] -> [P]) ([P] -> [P])
  %6 = flow.reduce_sum %x [1] : tensor<4x8xf32> -> tensor<4xf32>
  // CHECK: remark: rules: ([B] -> [B]) ([S(0)] -> [P(max)]) ([S(1)] -> [S(1)]) ([P(max)] -> [P(max)])
  %7 = flow.reduce_max %x [0] {keepdims} : tensor<4x8xf32> -> tensor<1x8xf32>
  // CHECK: remark: rules: ([B] -> [B]) ([S(0)] -> [S(0)]) ([S(1)] -> [S(1)])
  %8 = flow.softmax %x axis = 1 : tensor<4x8xf32>
  // CHECK: remark: rules: ([B, B, B] -> [B]) ([S(0), B, B] -> [S(0)]) ([S(1), S(0), S(0)] -> [S(1)])
  %9 = flow.layer_norm %x weight %v bias %v axis = 1 epsilon = 1.0e-05
      : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: remark: rules: ([B, B] -> [B]) ([S(0), B] -> [S(0)]) ([B, S(0)] -> [S(1)]) ([S(1), S(1)] -> [P])
  %10 = flow.conv2d %img, %f strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1
      : (tensor<2x4x6x6xf32>, tensor<8x4x3x3xf32>) -> tensor<2x8x6x6xf32>
  // CHECK: remark: rules: ([B] -> [B]) ([S(1)] -> [S(0)]) ([S(0)] -> [S(1)]) ([P] -> [P])
  %11 = flow.transpose %x [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  // Reshape keeps the split of a dimension it keeps, and of the major
  // dimension of a group it merges (4x8 -> 32), where the pieces are equal.
  // CHECK: remark: rules: ([B] -> [B]) ([P] -> [P]) ([S(0)] -> [S(0)]) ([S(1)] -> [S(1)] even){{$}}
  %12 = flow.reshape %b3 : tensor<2x4x8xf32> -> tensor<2x32xf32>
  // CHECK: remark: rules: ([B, B] -> [B]) ([B, S(0)] -> [S(0)]) ([B, S(1)] -> [S(1)]) ([S(1), B] -> [S(2)]) ([S(0), B] -> [P])
  %13 = flow.gather %t[%ids] axis = 0 : (tensor<10x8xf32>, tensor<2x3xi64>) -> tensor<2x3x8xf32>
  // CHECK: remark: rules: ([B, B] -> [B]) ([S(0), S(0)] -> [S(0)]) ([P, P] -> [P])
  %14 = flow.concat %x, %x axis = 1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x16xf32>
  return
}

// -----

// The other ops: elementwise (casts to f32 pass partial sums),
// normalizations, pooling, data movement and constants.
flow.mesh @m [2]
func.func @more(%x: tensor<4x8xf32>, %i: tensor<4x8xi32>, %c: tensor<4x8xi1>, %v: tensor<8xf32>,
                %img: tensor<2x4x6x6xf32>, %s: tensor<4xf32>) attributes {flow.mesh = @m} {
  // CHECK: remark: rules: ([B] -> [B]) ([S(0)] -> [S(0)]) ([S(1)] -> [S(1)])
  %0 = flow.abs %x : tensor<4x8xf32>
  // CHECK: remark: rules: ([B] -> [B]) ([S(0)] -> [S(0)]) ([S(1)] -> [S(1)])
  %1 = flow.exp %x : tensor<4x8xf32>
  // CHECK: remark: rules: ([B] -> [B]) ([S(0)] -> [S(0)]) ([S(1)] -> [S(1)])
  %2 = flow.log %x : tensor<4x8xf32>
  // CHECK: remark: rules: ([B] -> [B]) ([S(0)] -> [S(0)]) ([S(1)] -> [S(1)])
  %3 = flow.sqrt %x : tensor<4x8xf32>
  // CHECK: remark: rules: ([B] -> [B]) ([S(0)] -> [S(0)]) ([S(1)] -> [S(1)])
  %4 = flow.rsqrt %x : tensor<4x8xf32>
  // CHECK: remark: rules: ([B] -> [B]) ([S(0)] -> [S(0)]) ([S(1)] -> [S(1)])
  %5 = flow.tanh %x : tensor<4x8xf32>
  // CHECK: remark: rules: ([B] -> [B]) ([S(0)] -> [S(0)]) ([S(1)] -> [S(1)])
  %6 = flow.erf %x : tensor<4x8xf32>
  // CHECK: remark: rules: ([B] -> [B]) ([S(0)] -> [S(0)]) ([S(1)] -> [S(1)])
  %sn = flow.sin %x : tensor<4x8xf32>
  // CHECK: remark: rules: ([B] -> [B]) ([S(0)] -> [S(0)]) ([S(1)] -> [S(1)])
  %cs = flow.cos %x : tensor<4x8xf32>
  // CHECK: remark: rules: ([B] -> [B]) ([S(0)] -> [S(0)]) ([S(1)] -> [S(1)])
  %7 = flow.sigmoid %x : tensor<4x8xf32>
  // CHECK: remark: rules: ([B] -> [B]) ([S(0)] -> [S(0)]) ([S(1)] -> [S(1)])
  %8 = flow.silu %x : tensor<4x8xf32>
  // CHECK: remark: rules: ([B] -> [B]) ([S(0)] -> [S(0)]) ([S(1)] -> [S(1)])
  %9 = flow.gelu %x : tensor<4x8xf32>
  // A narrowing cast rounds each piece: no partial sums (and bf16 could not
  // be reduced anyway).
  // CHECK: remark: rules: ([B] -> [B]) ([S(0)] -> [S(0)]) ([S(1)] -> [S(1)]){{$}}
  %10 = flow.cast %x : tensor<4x8xf32> to tensor<4x8xbf16>
  // CHECK: remark: rules: ([B] -> [B]) ([S(0)] -> [S(0)]) ([S(1)] -> [S(1)])
  %11 = flow.cast %x : tensor<4x8xf32> to tensor<4x8xi32>
  // CHECK: remark: rules: ([B, B] -> [B]) ([S(0), S(0)] -> [S(0)]) ([S(1), S(1)] -> [S(1)]) ([P, P] -> [P])
  %12 = flow.sub %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: remark: rules: ([B, B] -> [B]) ([S(0), B] -> [S(0)]) ([S(1), S(0)] -> [S(1)]) ([P, B] -> [P])
  %13 = flow.div %x, %v : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: remark: rules: ([B, B] -> [B]) ([S(0), S(0)] -> [S(0)]) ([S(1), S(1)] -> [S(1)]) ([P(max), P(max)] -> [P(max)])
  %14 = flow.maximum %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: remark: rules: ([B, B] -> [B]) ([S(0), S(0)] -> [S(0)]) ([S(1), S(1)] -> [S(1)])
  %15 = flow.minimum %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: remark: rules: ([B, B] -> [B]) ([S(0), S(0)] -> [S(0)]) ([S(1), S(1)] -> [S(1)])
  %16 = flow.pow %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: remark: rules: ([B, B] -> [B]) ([S(0), B] -> [S(0)]) ([S(1), S(0)] -> [S(1)])
  %17 = flow.compare lt, %x, %v : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  // CHECK: remark: rules: ([B, B, B] -> [B]) ([S(0), S(0), B] -> [S(0)]) ([S(1), S(1), S(0)] -> [S(1)])
  %18 = flow.select %c, %x, %v : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: remark: rules: ([B] -> [B]) ([S(0)] -> [S(0)]) ([S(1)] -> [S(1)])
  %19 = flow.im2col %img kernel = [3, 3] strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1]
      : tensor<2x4x6x6xf32> -> tensor<2x4x3x3x6x6xf32>
  // CHECK: remark: rules: ([B] -> [B]) ([S(0)] -> [P]) ([S(1)] -> [S(0)]) ([P] -> [P])
  %20 = flow.reduce_mean %x [0] : tensor<4x8xf32> -> tensor<8xf32>
  // CHECK: remark: rules: ([B] -> [B]) ([S(1)] -> [S(1)]) ([S(0)] -> [S(0)])
  %21 = flow.log_softmax %x axis = 0 : tensor<4x8xf32>
  // CHECK: remark: rules: ([B, B] -> [B]) ([S(0), B] -> [S(0)]) ([S(1), S(0)] -> [S(1)])
  %22 = flow.rms_norm %x weight %v axis = 1 epsilon = 1.0e-05 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: remark: rules: ([B, B, B, B, B] -> [B]) ([S(0), B, B, B, B] -> [S(0)]) ([S(2), B, B, B, B] -> [S(2)]) ([S(3), B, B, B, B] -> [S(3)]) ([S(1), S(0), S(0), S(0), S(0)] -> [S(1)])
  %23 = flow.batch_norm %img, %s, %s, %s, %s epsilon = 1.0e-05
      : (tensor<2x4x6x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x6x6xf32>
  // CHECK: remark: rules: ([B] -> [B]) ([S(0)] -> [S(0)]) ([S(1)] -> [S(1)]) ([P(max)] -> [P(max)])
  %24 = flow.max_pool2d %img kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1]
      : tensor<2x4x6x6xf32> -> tensor<2x4x3x3xf32>
  // CHECK: remark: rules: ([B] -> [B]) ([S(0)] -> [S(0)]) ([S(1)] -> [S(1)]) ([P] -> [P])
  %25 = flow.avg_pool2d %img kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0]
      : tensor<2x4x6x6xf32> -> tensor<2x4x3x3xf32>
  // CHECK: remark: rules: ([B] -> [B]) ([B] -> [S(0)]) ([S(0)] -> [S(1)])
  %26 = flow.broadcast_to %v : tensor<8xf32> -> tensor<4x8xf32>
  // CHECK: remark: rules: ([B] -> [B]) ([S(0)] -> [S(0)]) ([P] -> [P])
  %27 = flow.slice %x starts = [0, 2] limits = [4, 6] strides = [1, 1] : tensor<4x8xf32> -> tensor<4x4xf32>
  // A reversed axis keeps no split (its pieces would be in reverse order).
  // CHECK: remark: rules: ([B] -> [B]) ([S(0)] -> [S(0)]) ([P] -> [P])
  %rev = flow.reverse %x axes = [1] : tensor<4x8xf32>
  // Running sums keep the splits of the other axes; they are linear.
  // CHECK: remark: rules: ([B] -> [B]) ([S(0)] -> [S(0)]) ([P] -> [P])
  %csum = flow.cumsum %x axis = 1 : tensor<4x8xf32>
  // An index along a split axis needs the other pieces.
  // CHECK: remark: rules: ([B] -> [B]) ([S(1)] -> [S(0)])
  %am = flow.argmax %x axis = 0 : tensor<4x8xf32> -> tensor<8xi64>
  // CHECK: remark: rules: ([B] -> [B]) ([S(1)] -> [S(1)])
  %an = flow.argmin %x axis = 0 {keepdims} : tensor<4x8xf32> -> tensor<1x8xi64>
  // Indices split along the axis read a whole input; in another dimension
  // input and indices split together.
  // CHECK: remark: rules: ([B, B] -> [B]) ([S(0), S(0)] -> [S(0)]) ([B, S(1)] -> [S(1)]) ([S(1), B] -> [P])
  %ge = flow.gather_elements %x[%i] axis = 1 : (tensor<4x8xf32>, tensor<4x8xi32>) -> tensor<4x8xf32>
  // CHECK: remark: rules: ([B] -> [B]) ([S(1)] -> [S(1)]) ([P] -> [P])
  %28 = flow.pad %x low = [1, 0] high = [0, 0] value = 0.0 : tensor<4x8xf32> -> tensor<5x8xf32>
  // CHECK: remark: rules: ([B] -> [B]) ([S(1)] -> [S(1)])
  %29 = flow.pad %x low = [1, 0] high = [0, 0] value = 1.0 : tensor<4x8xf32> -> tensor<5x8xf32>
  // CHECK: remark: rules: ([] -> [B])
  %30 = flow.constant dense<1.0> : tensor<4xf32>
  // CHECK: remark: rules: ([B] -> [B]) ([S(0)] -> [S(0)]) ([S(1)] -> [S(1)])
  %31 = flow.relu %i : tensor<4x8xi32>
  return
}

// -----

// Rules that would be wrong, or that the collectives could not finish.
flow.mesh @m [2]
func.func @refused(%x: tensor<4x8xf32>, %h: tensor<4x8xf16>, %i: tensor<4x8xi32>,
                   %vi: tensor<8xi32>, %img: tensor<2x4x6x6xf32>,
                   %g: tensor<8x2x3x3xf32>, %d: tensor<4x1x3x3xf32>) attributes {flow.mesh = @m} {
  // Integer division rounds each piece: no (P, B) -> P.
  // CHECK: remark: rules: ([B, B] -> [B]) ([S(0), B] -> [S(0)]) ([S(1), S(0)] -> [S(1)]){{$}}
  %0 = flow.div %i, %vi : (tensor<4x8xi32>, tensor<8xi32>) -> tensor<4x8xi32>
  // A cast to f32 keeps partial sums (widening an f16 loses nothing).
  // CHECK: remark: rules: ([B] -> [B]) ([S(0)] -> [S(0)]) ([S(1)] -> [S(1)]) ([P] -> [P])
  %1 = flow.cast %x : tensor<4x8xf32> to tensor<4x8xf32>
  // CHECK: remark: rules: ([B] -> [B]) ([S(0)] -> [S(0)]) ([S(1)] -> [S(1)]) ([P] -> [P]){{$}}
  %2 = flow.cast %h : tensor<4x8xf16> to tensor<4x8xf32>
  // f16 partial sums are reduced by the communicator (widened to f32 per
  // pair): a mean over a split axis leaves one.
  // CHECK: remark: rules: ([B] -> [B]) ([S(0)] -> [P]) ([S(1)] -> [S(0)]) ([P] -> [P]){{$}}
  %3 = flow.reduce_mean %h [0] : tensor<4x8xf16> -> tensor<8xf16>
  // A narrowing cast rounds each piece: no P passes it.
  // CHECK: remark: rules: ([B] -> [B]) ([S(0)] -> [S(0)]) ([S(1)] -> [S(1)]){{$}}
  %6 = flow.cast %x : tensor<4x8xf32> to tensor<4x8xf16>
  // Grouped and depthwise convolutions split whole groups: channels of the
  // input, weight rows and output channels together, where the pieces
  // divide the groups.
  // CHECK: remark: rules: ([B, B] -> [B]) ([S(0), B] -> [S(0)]) ([S(1), S(0)] -> [S(1)] even in 2 blocks){{$}}
  %4 = flow.conv2d %img, %g strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 2
      : (tensor<2x4x6x6xf32>, tensor<8x2x3x3xf32>) -> tensor<2x8x6x6xf32>
  // CHECK: remark: rules: ([B, B] -> [B]) ([S(0), B] -> [S(0)]) ([S(1), S(0)] -> [S(1)] even in 4 blocks){{$}}
  %5 = flow.conv2d %img, %d strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 4
      : (tensor<2x4x6x6xf32>, tensor<4x1x3x3xf32>) -> tensor<2x4x6x6xf32>
  return
}

// -----

flow.mesh @m [2]
func.func @scatter(%x: tensor<4x8x6xf32>, %i: tensor<3x1xi64>, %u: tensor<3x8x6xf32>) attributes {flow.mesh = @m} {
  // The dimensions after the indexed one split with the updates' matching
  // ones; the indices stay whole.
  // CHECK: remark: rules: ([B, B, B] -> [B]) ([S(1), B, S(1)] -> [S(1)]) ([S(2), B, S(2)] -> [S(2)]){{$}}
  %0 = flow.scatter_nd %x[%i], %u : (tensor<4x8x6xf32>, tensor<3x1xi64>, tensor<3x8x6xf32>) -> tensor<4x8x6xf32>
  return
}

// -----

flow.mesh @m [2]
func.func @sort(%x: tensor<4x8x6xf32>) attributes {flow.mesh = @m} {
  // Rows sort alone: the other axes' splits pass to both results.
  // CHECK: remark: rules: ([B] -> [B, B]) ([S(0)] -> [S(0), S(0)]) ([S(2)] -> [S(2), S(2)]){{$}}
  %v, %i = flow.sort %x axis = 1 : tensor<4x8x6xf32> -> (tensor<4x8x6xf32>, tensor<4x8x6xi64>)
  return
}

// -----

flow.mesh @m [2]
func.func @random_uniform(%seed: tensor<i64>, %offset: tensor<i64>) attributes {flow.mesh = @m} {
  // Every device draws the whole tensor (its numbers are those of the
  // global index): broadcast only, whatever the layout.
  // CHECK: remark: rules: ([B, B] -> [B]){{$}}
  %0 = flow.random_uniform %seed, %offset stream = 0 : tensor<4x8xf32>
  return
}
