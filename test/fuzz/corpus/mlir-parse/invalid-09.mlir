flow.mesh @m [2]
func.func @f(%a: tensor<4xf32> {flow.sbp = 1 : i64}) attributes {flow.mesh = @m} {
  return
}
