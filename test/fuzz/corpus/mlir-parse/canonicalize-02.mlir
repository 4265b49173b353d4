func.func @reshape_identity(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = flow.reshape %x : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
