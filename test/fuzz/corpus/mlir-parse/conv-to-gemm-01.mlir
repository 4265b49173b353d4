func.func @pointwise_grouped(%x: tensor<1x8x4x4xf32>, %w: tensor<6x4x1x1xf32>) -> tensor<1x6x4x4xf32> {
  %0 = flow.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 2
      : (tensor<1x8x4x4xf32>, tensor<6x4x1x1xf32>) -> tensor<1x6x4x4xf32>
  return %0 : tensor<1x6x4x4xf32>
}
