func.func @conv3x3(%x: tensor<2x8x16x16xf32>, %w: tensor<16x8x3x3xf32>, %b: tensor<16xf32>) -> tensor<2x16x16x16xf32> {
  %0 = flow.conv2d %x, %w, %b strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1
      : (tensor<2x8x16x16xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<2x16x16x16xf32>
  return %0 : tensor<2x16x16x16xf32>
}
