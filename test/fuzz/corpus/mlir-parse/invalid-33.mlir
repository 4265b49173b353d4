func.func @f(%a: tensor<2x8xf32>, %b: tensor<4x8xf32>) -> tensor<2x8xf32> {
  %0 = flow.matmul %a, %b : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}
