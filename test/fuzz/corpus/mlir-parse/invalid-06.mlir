flow.mesh @m [2, 4]
func.func @f(%a: tensor<4xf32>) -> (tensor<4xf32> {flow.sbp = #flow.sbp<[S(0), S(0)]>}) attributes {flow.mesh = @m} {
  return %a : tensor<4xf32>
}
