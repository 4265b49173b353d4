flow.mesh @m [4]
func.func @f(%a: tensor<8xf32>) -> tensor<8xf32> {
  %0 = flow.all_reduce sum %a on @m axes = [1] : tensor<8xf32>
  return %0 : tensor<8xf32>
}
