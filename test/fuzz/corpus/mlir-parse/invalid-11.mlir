func.func @f() attributes {flow.mesh = @nowhere} {
  return
}
