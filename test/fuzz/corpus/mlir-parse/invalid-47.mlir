func.func @f(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x3x3x8x8xf32> {
  %0 = flow.im2col %x kernel = [3, 3] strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1]
      : tensor<1x4x8x8xf32> -> tensor<1x4x3x3x8x8xf32>
  return %0 : tensor<1x4x3x3x8x8xf32>
}
