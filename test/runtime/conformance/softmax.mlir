// Device conformance: reductions (a row softmax and a total).
func.func @main(%x: tensor<16x100xf32>) -> (tensor<16x100xf32>, tensor<f32>) {
  %s = flow.softmax %x axis = 1 : tensor<16x100xf32>
  %t = flow.reduce_sum %x [0, 1] : tensor<16x100xf32> -> tensor<f32>
  return %s, %t : tensor<16x100xf32>, tensor<f32>
}
