flow.mesh @m [2]
func.func @f(%a: tensor<4xf32> {flow.sbp = #flow.sbp<[]>}) attributes {flow.mesh = @m} {
  return
}
