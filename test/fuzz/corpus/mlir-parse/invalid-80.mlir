func.func @f(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = flow.slice %a starts = [0, 0] limits = [4, 8] strides = [0, 1] : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
