func.func @mlp(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>) -> tensor<256xf32> {
  %b = flow.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<32xf32>
  %half = flow.constant dense<0.5> : tensor<f32>
  %0 = flow.matmul %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %1 = flow.add %0, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %2 = flow.maximum %1, %half : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  %3 = flow.reshape %2 : tensor<8x32xf32> -> tensor<256xf32>
  return %3 : tensor<256xf32>
}
