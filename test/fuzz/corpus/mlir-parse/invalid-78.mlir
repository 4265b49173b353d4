func.func @f(%a: tensor<4x8xf32>) -> tensor<4x1xf32> {
  %0 = flow.slice %a starts = [0, 3] limits = [4, 2] strides = [1, 1] : tensor<4x8xf32> -> tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}
