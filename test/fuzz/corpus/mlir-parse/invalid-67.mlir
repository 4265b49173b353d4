func.func @f(%a: tensor<2x3xf32>) -> tensor<6xi32> {
  %0 = flow.reshape %a : tensor<2x3xf32> -> tensor<6xi32>
  return %0 : tensor<6xi32>
}
