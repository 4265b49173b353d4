flow.mesh @m [4]
func.func @f(%a: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %0 = flow.broadcast %a on @m axes = [0] root = -1 : tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
