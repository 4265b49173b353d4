func.func @f(%a: tensor<2x4x3x3xf32>, %p: tensor<4xf32>, %q: tensor<3xf32>) -> tensor<2x4x3x3xf32> {
  %0 = flow.batch_norm %a, %p, %p, %p, %q epsilon = 1.0e-5
      : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<3xf32>) -> tensor<2x4x3x3xf32>
  return %0 : tensor<2x4x3x3xf32>
}
