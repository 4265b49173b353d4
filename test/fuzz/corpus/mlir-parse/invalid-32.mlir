func.func @f(%a: tensor<8xf32>, %b: tensor<8x4xf32>) -> tensor<4xf32> {
  %0 = flow.matmul %a, %b : (tensor<8xf32>, tensor<8x4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
