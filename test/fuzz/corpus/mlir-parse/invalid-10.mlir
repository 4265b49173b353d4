flow.mesh @m [2]
func.func @f(%a: tensor<4xf32> {flow.layout = #flow.sbp<[B]>}) attributes {flow.mesh = @m} {
  return
}
