func.func @f(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = flow.softmax %a axis = 2 : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
