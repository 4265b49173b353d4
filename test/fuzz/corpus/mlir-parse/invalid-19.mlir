flow.mesh @m [4]
func.func @f(%a: tensor<3xf32>) -> tensor<3xf32> {
  %0 = flow.annotate %a as #flow.sbp<[S(0)]> on @m : tensor<3xf32>
  return %0 : tensor<3xf32>
}
