func.func @f(%a: tensor<1x4x8x8xf32>) -> tensor<1x4x5x5xf32> {
  %0 = flow.avg_pool2d %a kernel = [2, 2] strides = [2, 2] padding = [2, 0, 0, 0]
      : tensor<1x4x8x8xf32> -> tensor<1x4x5x5xf32>
  return %0 : tensor<1x4x5x5xf32>
}
