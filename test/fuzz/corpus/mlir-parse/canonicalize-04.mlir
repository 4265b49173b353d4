func.func @transpose_of_transpose(%x: tensor<2x3x4xf32>) -> tensor<3x2x4xf32> {
  %0 = flow.transpose %x [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %1 = flow.transpose %0 [2, 1, 0] : tensor<4x2x3xf32> -> tensor<3x2x4xf32>
  return %1 : tensor<3x2x4xf32>
}
