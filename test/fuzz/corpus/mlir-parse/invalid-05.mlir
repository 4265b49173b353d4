flow.mesh @m [2]
func.func @f(%a: tensor<4x4xf32> {flow.sbp = #flow.sbp<[S(2)]>}) attributes {flow.mesh = @m} {
  return
}
