func.func @f(%a: tensor<2x3xf32>) -> tensor<7xf32> {
  %0 = flow.reshape %a : tensor<2x3xf32> -> tensor<7xf32>
  return %0 : tensor<7xf32>
}
