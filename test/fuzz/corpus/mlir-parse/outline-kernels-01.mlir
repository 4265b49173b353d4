func.func @rows(%x: tensor<4x8xf32>, %h: tensor<4x4xf16>) -> (tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4x4xf16>) {
  %0 = flow.softmax %x axis = 0 : tensor<4x8xf32>
  %1 = flow.reduce_sum %x [1] : tensor<4x8xf32> -> tensor<4xf32>
  %2 = flow.reduce_max %x [0] : tensor<4x8xf32> -> tensor<8xf32>
  %3 = flow.matmul %h, %h : (tensor<4x4xf16>, tensor<4x4xf16>) -> tensor<4x4xf16>
  return %0, %1, %2, %3 : tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4x4xf16>
}
