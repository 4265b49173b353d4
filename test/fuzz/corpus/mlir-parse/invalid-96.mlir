flow.mesh @m [4]
func.func @f(%a: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %0 = flow.all_to_all %a on @m axes = [0] split_dim = 1 concat_dim = 0 : tensor<8x4xf32> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
