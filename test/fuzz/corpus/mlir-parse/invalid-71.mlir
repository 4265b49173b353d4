func.func @f(%a: tensor<2x3xf32>) -> tensor<3xf32> {
  %0 = flow.broadcast_to %a : tensor<2x3xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
