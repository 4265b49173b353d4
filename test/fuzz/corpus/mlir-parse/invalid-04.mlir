flow.mesh @m [2, 2]
func.func @f(%a: tensor<4xf32> {flow.sbp = #flow.sbp<[S(0)]>}) attributes {flow.mesh = @m} {
  return
}
