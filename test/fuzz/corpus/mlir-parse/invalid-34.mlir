func.func @f(%a: tensor<3x2x8xf32>, %b: tensor<2x8x4xf32>) -> tensor<3x2x4xf32> {
  %0 = flow.matmul %a, %b : (tensor<3x2x8xf32>, tensor<2x8x4xf32>) -> tensor<3x2x4xf32>
  return %0 : tensor<3x2x4xf32>
}
