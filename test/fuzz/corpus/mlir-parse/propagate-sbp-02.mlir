flow.mesh @mesh2d [2, 2]
func.func @two_d(%x: tensor<8x16xf32> {flow.sbp = #flow.sbp<[S(0), B]>},
                 %w1: tensor<16x32xf32> {flow.sbp = #flow.sbp<[B, S(1)]>},
                 %w2: tensor<32x16xf32> {flow.sbp = #flow.sbp<[B, S(0)]>})
    -> (tensor<8x16xf32> {flow.sbp = #flow.sbp<[S(0), B]>})
    attributes {flow.mesh = @mesh2d} {
  %0 = flow.matmul %x, %w1 : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %1 = flow.relu %0 : tensor<8x32xf32>
  %2 = flow.matmul %1, %w2 : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  %3 = flow.softmax %2 axis = 1 : tensor<8x16xf32>
  return %3 : tensor<8x16xf32>
}
