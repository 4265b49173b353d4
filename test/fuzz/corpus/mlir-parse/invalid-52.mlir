func.func @f(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = flow.log_softmax %a axis = -1 : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
