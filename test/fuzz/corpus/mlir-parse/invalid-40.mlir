func.func @f(%x: tensor<1x4x8x8xf32>, %w: tensor<6x1x3x3xf32>) -> tensor<1x6x6x6xf32> {
  %0 = flow.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 4
      : (tensor<1x4x8x8xf32>, tensor<6x1x3x3xf32>) -> tensor<1x6x6x6xf32>
  return %0 : tensor<1x6x6x6xf32>
}
