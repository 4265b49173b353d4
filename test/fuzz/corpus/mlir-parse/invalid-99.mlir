flow.mesh @m [4, 2]
func.func @f(%a: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %0 = flow.broadcast %a on @m axes = [1] root = 2 : tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
