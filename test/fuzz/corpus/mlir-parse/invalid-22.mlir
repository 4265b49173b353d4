func.func @f(%a: tensor<3xf64>) -> tensor<3xf64> {
  %0 = flow.neg %a : tensor<3xf64>
  return %0 : tensor<3xf64>
}
