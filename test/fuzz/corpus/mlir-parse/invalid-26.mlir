func.func @f(%a: tensor<2x3xf32>, %b: tensor<1x3xf32>) -> tensor<3x3xf32> {
  %0 = "flow.add"(%a, %b) : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}
