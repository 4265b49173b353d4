func.func @f(%a: tensor<4x8x8xf32>) -> tensor<4x4x4xf32> {
  %0 = flow.max_pool2d %a kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1]
      : tensor<4x8x8xf32> -> tensor<4x4x4xf32>
  return %0 : tensor<4x4x4xf32>
}
