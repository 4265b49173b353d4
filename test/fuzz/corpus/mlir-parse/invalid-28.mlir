func.func @f(%a: tensor<2x3xf32>, %b: tensor<2xf32>) -> tensor<2x3xi1> {
  %0 = flow.compare lt, %a, %b : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xi1>
  return %0 : tensor<2x3xi1>
}
