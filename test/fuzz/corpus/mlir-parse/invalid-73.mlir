func.func @f(%a: tensor<2x3xf32>, %b: tensor<6xf32>) -> tensor<2x3xf32> {
  %0 = flow.concat %a, %b axis = 0 : (tensor<2x3xf32>, tensor<6xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
