func.func @f(%a: tensor<4x8xf32>) -> tensor<3x8xf32> {
  %0 = flow.pad %a low = [0, 0] high = [-1, 0] value = 0.0 : tensor<4x8xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}
