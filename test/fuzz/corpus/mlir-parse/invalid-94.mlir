flow.mesh @m [4]
func.func @f(%a: tensor<3x3xf32>) -> tensor<1x3xf32> {
  %0 = flow.reduce_scatter sum %a on @m axes = [0] dim = 0 : tensor<3x3xf32> -> tensor<1x3xf32>
  return %0 : tensor<1x3xf32>
}
