// RUN: not flow-opt %s --flow-conv-to-gemm 2>&1 | FileCheck %s

// The GEMM rewrite of a convolution sizes its column blocks from the
// batch; over a symbolic batch it refuses by name.
// CHECK: error: 'flow.conv2d' op cannot be rewritten as a GEMM over a symbolic batch yet
func.func @conv(%x: tensor<?x3x8x8xf32, #flow.shape<[batch, 3, 8, 8]>>, %w: tensor<4x3x3x3xf32>)
    attributes {flow.dims = [#flow.dim<"batch", 1, 8>]} {
  %0 = flow.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1
      : (tensor<?x3x8x8xf32, #flow.shape<[batch, 3, 8, 8]>>, tensor<4x3x3x3xf32>)
      -> tensor<?x4x6x6xf32, #flow.shape<[batch, 4, 6, 6]>>
  return
}
