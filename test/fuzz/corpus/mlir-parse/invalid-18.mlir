flow.mesh @m [2, 2]
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = flow.annotate %a as #flow.sbp<[B]> on @m : tensor<4xf32>
  return %0 : tensor<4xf32>
}
