module {
  func.func @main(%arg0: tensor<4x300xf32>) -> (tensor<4x300xf32>, tensor<4x300xf32>) {
    %values, %indices = flow.sort %arg0 axis = 1 : tensor<4x300xf32> -> (tensor<4x300xf32>, tensor<4x300xi64>)
    %0 = flow.cumsum %arg0 axis = 0 : tensor<4x300xf32>
    return %values, %0 : tensor<4x300xf32>, tensor<4x300xf32>
  }
}