func.func @conv_f16(%x: tensor<1x2x4x4xf16>, %w: tensor<2x2x3x3xf16>) -> tensor<1x2x2x2xf16> {
  %0 = flow.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1
      : (tensor<1x2x4x4xf16>, tensor<2x2x3x3xf16>) -> tensor<1x2x2x2xf16>
  return %0 : tensor<1x2x2x2xf16>
}
