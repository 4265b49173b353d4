flow.mesh @tp2 [2]
func.func @megatron(%x: tensor<4x16xf32>,
                    %w1: tensor<16x64xf32> {flow.sbp = #flow.sbp<[S(1)]>},
                    %w2: tensor<64x16xf32> {flow.sbp = #flow.sbp<[S(0)]>}) -> tensor<4x16xf32>
    attributes {flow.mesh = @tp2} {
  %0 = flow.matmul %x, %w1 : (tensor<4x16xf32>, tensor<16x64xf32>) -> tensor<4x64xf32>
  %1 = flow.gelu %0 : tensor<4x64xf32>
  %2 = flow.matmul %1, %w2 : (tensor<4x64xf32>, tensor<64x16xf32>) -> tensor<4x16xf32>
  return %2 : tensor<4x16xf32>
}
