func.func @f() attributes {flow.mesh = 2 : i64} {
  return
}
