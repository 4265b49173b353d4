func.func @transpose_inverse(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = flow.transpose %x [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %1 = flow.transpose %0 [1, 2, 0] : tensor<4x2x3xf32> -> tensor<2x3x4xf32>
  return %1 : tensor<2x3x4xf32>
}
