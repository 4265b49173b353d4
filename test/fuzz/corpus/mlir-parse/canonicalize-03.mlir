func.func @reshape_constant() -> tensor<2x2xi32> {
  %0 = flow.constant dense<[1, 2, 3, 4]> : tensor<4xi32>
  %1 = flow.reshape %0 : tensor<4xi32> -> tensor<2x2xi32>
  return %1 : tensor<2x2xi32>
}
