flow.mesh @m [2]
func.func @f(%a: tensor<4xf32> {flow.sbp = #flow.sbp<[X]>}) attributes {flow.mesh = @m} {
  return
}
