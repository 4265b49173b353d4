flow.mesh @mesh [2]

func.func @forward(%x: tensor<8x784xf32> {flow.sbp = #flow.sbp<[S(0)]>},
                   %w1: tensor<784x256xf32>, %b1: tensor<256xf32>,
                   %w2: tensor<256x128xf32>, %b2: tensor<128xf32>,
                   %w3: tensor<128x10xf32>, %b3: tensor<10xf32>)
    -> tensor<8x10xf32> attributes {flow.mesh = @mesh} {
  %h0 = flow.annotate %x as #flow.sbp<[S(0)]> on @mesh : tensor<8x784xf32>

  %m1 = flow.matmul %h0, %w1 : (tensor<8x784xf32>, tensor<784x256xf32>) -> tensor<8x256xf32>
  %a1 = flow.add %m1, %b1 : (tensor<8x256xf32>, tensor<256xf32>) -> tensor<8x256xf32>
  %h1 = flow.relu %a1 : tensor<8x256xf32>

  %m2 = flow.matmul %h1, %w2 : (tensor<8x256xf32>, tensor<256x128xf32>) -> tensor<8x128xf32>
  %a2 = flow.add %m2, %b2 : (tensor<8x128xf32>, tensor<128xf32>) -> tensor<8x128xf32>
  %h2 = flow.relu %a2 : tensor<8x128xf32>

  %m3 = flow.matmul %h2, %w3 : (tensor<8x128xf32>, tensor<128x10xf32>) -> tensor<8x10xf32>
  %a3 = flow.add %m3, %b3 : (tensor<8x10xf32>, tensor<10xf32>) -> tensor<8x10xf32>
  %zero = flow.constant dense<0.0> : tensor<10xf32>
  %a4 = flow.add %a3, %zero : (tensor<8x10xf32>, tensor<10xf32>) -> tensor<8x10xf32>
  %p = flow.softmax %a4 axis = 1 : tensor<8x10xf32>
  return %p : tensor<8x10xf32>
}
