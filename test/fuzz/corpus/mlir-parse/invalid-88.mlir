flow.mesh @m [2, 2]
func.func @f(%a: tensor<8xf32>) -> tensor<8xf32> {
  %0 = flow.all_reduce max %a on @m axes = [1, 1] : tensor<8xf32>
  return %0 : tensor<8xf32>
}
