flow.mesh @m [2, 2]
func.func @f(%a: tensor<8x3xf32>) -> tensor<2x3xf32> {
  %0 = flow.reduce_scatter sum %a on @m axes = [1] dim = 0 : tensor<8x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
