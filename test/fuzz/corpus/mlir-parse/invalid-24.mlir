func.func @f(%a: tensor<3xf32>) -> tensor<4xf16> {
  %0 = flow.cast %a : tensor<3xf32> to tensor<4xf16>
  return %0 : tensor<4xf16>
}
