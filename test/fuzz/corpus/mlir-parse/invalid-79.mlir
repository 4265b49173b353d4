func.func @f(%a: tensor<4x8xf32>) -> tensor<4x9xf32> {
  %0 = flow.slice %a starts = [0, 0] limits = [4, 9] strides = [1, 1] : tensor<4x8xf32> -> tensor<4x9xf32>
  return %0 : tensor<4x9xf32>
}
