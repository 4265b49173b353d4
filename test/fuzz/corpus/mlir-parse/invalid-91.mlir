flow.mesh @m [4]
func.func @f(%a: tensor<8xi1>) -> tensor<8xi1> {
  %0 = flow.all_reduce sum %a on @m axes = [0] : tensor<8xi1>
  return %0 : tensor<8xi1>
}
