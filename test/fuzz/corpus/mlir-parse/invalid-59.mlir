func.func @f(%a: tensor<4xf32>, %p: tensor<4xf32>) -> tensor<4xf32> {
  %0 = flow.batch_norm %a, %p, %p, %p, %p epsilon = 1.0e-5
      : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
