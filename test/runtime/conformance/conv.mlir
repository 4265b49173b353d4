// Device conformance: a convolution with ReLU, then 2x2 max pooling
// (library convolution and pool commands, or kernels where a device has
// no such library).
func.func @main(%x: tensor<2x3x10x10xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<2x8x5x5xf32> {
  %c = flow.conv2d %x, %w strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1 : (tensor<2x3x10x10xf32>, tensor<8x3x3x3xf32>) -> tensor<2x8x10x10xf32>
  %r = flow.relu %c : tensor<2x8x10x10xf32>
  %p = flow.max_pool2d %r kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1] : tensor<2x8x10x10xf32> -> tensor<2x8x5x5xf32>
  return %p : tensor<2x8x5x5xf32>
}
