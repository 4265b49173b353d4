func.func @f(%a: tensor<3xi32>) -> tensor<3xi32> {
  %0 = flow.exp %a : tensor<3xi32>
  return %0 : tensor<3xi32>
}
