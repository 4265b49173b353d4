func.func @g() {
  return
}
func.func @f() attributes {flow.mesh = @g} {
  return
}
