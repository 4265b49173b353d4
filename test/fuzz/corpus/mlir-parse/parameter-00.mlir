module attributes {flow.parameters = "mlp.safetensors"} {
  func.func @main(%x: tensor<2x8xf32>) -> tensor<2x4xf32> {
    %w = flow.parameter "fc1.weight" : tensor<8x4xf32>
    %b = flow.parameter "fc1.bias" : tensor<4xf32>
    %y = flow.matmul %x, %w : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
    %z = flow.add %y, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    return %z : tensor<2x4xf32>
  }
}
