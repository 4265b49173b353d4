func.func @f(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "flow.concat"() {axis = 0 : i64} : () -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
