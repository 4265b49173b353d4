func.func @f(%a: tensor<1x4x2x8xf32>) -> tensor<1x4x1x3xf32> {
  %0 = flow.avg_pool2d %a kernel = [3, 3] strides = [2, 2] padding = [0, 0, 0, 0]
      : tensor<1x4x2x8xf32> -> tensor<1x4x1x3xf32>
  return %0 : tensor<1x4x1x3xf32>
}
