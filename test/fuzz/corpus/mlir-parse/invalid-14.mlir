func.func @f() attributes {flow.sharding = 2 : i64} {
  return
}
