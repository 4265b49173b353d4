func.func @f(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = flow.concat %a axis = 2 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
