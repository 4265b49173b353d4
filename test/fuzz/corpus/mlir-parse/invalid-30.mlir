func.func @f(%c: tensor<2x3xi1>, %a: tensor<2x3xf32>, %b: tensor<2x3xi32>) -> tensor<2x3xf32> {
  %0 = flow.select %c, %a, %b : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xi32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
