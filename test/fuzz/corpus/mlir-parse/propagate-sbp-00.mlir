flow.mesh @mesh [2]
func.func @data_parallel(%x: tensor<8x16xf32> {flow.sbp = #flow.sbp<[S(0)]>},
                         %w1: tensor<16x32xf32>, %b1: tensor<32xf32>,
                         %w2: tensor<32x4xf32>) -> tensor<8x4xf32>
    attributes {flow.mesh = @mesh} {
  %0 = flow.matmul %x, %w1 : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %1 = flow.add %0, %b1 : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %2 = flow.relu %1 : tensor<8x32xf32>
  %3 = flow.matmul %2, %w2 : (tensor<8x32xf32>, tensor<32x4xf32>) -> tensor<8x4xf32>
  return %3 : tensor<8x4xf32>
}
