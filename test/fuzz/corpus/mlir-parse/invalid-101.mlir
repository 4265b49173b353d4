func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = flow.gelu %a approximate = erf : tensor<4xf32>
  return %0 : tensor<4xf32>
}
