flow.mesh @m [2]
func.func @f(%a: i32 {flow.sbp = #flow.sbp<[S(0)]>}) attributes {flow.mesh = @m} {
  return
}
