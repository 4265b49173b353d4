func.func @main(%x: tensor<4x30000xf32>) -> tensor<4x30000xf32> {
  %e = flow.exp %x : tensor<4x30000xf32>
  %m = flow.mul %e, %x : (tensor<4x30000xf32>, tensor<4x30000xf32>) -> tensor<4x30000xf32>
  %s = flow.softmax %m axis = 1 : tensor<4x30000xf32>
  return %s : tensor<4x30000xf32>
}
