func.func @f() -> tensor<4xf32> {
  %0 = "flow.constant"() {value = dense<1.0> : tensor<2xf32>} : () -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
