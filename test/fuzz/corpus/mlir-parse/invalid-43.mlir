func.func @f(%x: tensor<1x2x5x5xf32>, %w: tensor<3x2x0x3xf32>) -> tensor<1x3x6x3xf32> {
  %0 = flow.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1
      : (tensor<1x2x5x5xf32>, tensor<3x2x0x3xf32>) -> tensor<1x3x6x3xf32>
  return %0 : tensor<1x3x6x3xf32>
}
