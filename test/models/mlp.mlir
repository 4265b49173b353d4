// A 3-layer MLP: 784 -> 256 -> 128 -> 10 with ReLU, then log_softmax.
func.func @forward(%x: tensor<16x784xf32>,
                   %w1: tensor<784x256xf32>, %b1: tensor<256xf32>,
                   %w2: tensor<256x128xf32>, %b2: tensor<128xf32>,
                   %w3: tensor<128x10xf32>, %b3: tensor<10xf32>) -> tensor<16x10xf32> {
  %m1 = flow.matmul %x, %w1 : (tensor<16x784xf32>, tensor<784x256xf32>) -> tensor<16x256xf32>
  %a1 = flow.add %m1, %b1 : (tensor<16x256xf32>, tensor<256xf32>) -> tensor<16x256xf32>
  %h1 = flow.relu %a1 : tensor<16x256xf32>
  %m2 = flow.matmul %h1, %w2 : (tensor<16x256xf32>, tensor<256x128xf32>) -> tensor<16x128xf32>
  %a2 = flow.add %m2, %b2 : (tensor<16x128xf32>, tensor<128xf32>) -> tensor<16x128xf32>
  %h2 = flow.relu %a2 : tensor<16x128xf32>
  %m3 = flow.matmul %h2, %w3 : (tensor<16x128xf32>, tensor<128x10xf32>) -> tensor<16x10xf32>
  %a3 = flow.add %m3, %b3 : (tensor<16x10xf32>, tensor<10xf32>) -> tensor<16x10xf32>
  %y = flow.log_softmax %a3 axis = 1 : tensor<16x10xf32>
  return %y : tensor<16x10xf32>
}
