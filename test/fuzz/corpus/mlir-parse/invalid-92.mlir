flow.mesh @m [4]
func.func @f(%a: tensor<2x3xf32>) -> tensor<8x3xf32> {
  %0 = flow.all_gather %a on @m axes = [0] dim = 2 : tensor<2x3xf32> -> tensor<8x3xf32>
  return %0 : tensor<8x3xf32>
}
