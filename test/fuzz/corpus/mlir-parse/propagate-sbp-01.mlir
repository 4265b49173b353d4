flow.mesh @tp [4]
func.func @tensor_parallel(%x: tensor<8x16xf32>,
                           %w1: tensor<16x64xf32> {flow.sbp = #flow.sbp<[S(1)]>},
                           %b1: tensor<64xf32> {flow.sbp = #flow.sbp<[S(0)]>},
                           %w2: tensor<64x16xf32>) -> tensor<8x16xf32>
    attributes {flow.mesh = @tp} {
  %0 = flow.matmul %x, %w1 : (tensor<8x16xf32>, tensor<16x64xf32>) -> tensor<8x64xf32>
  %1 = flow.add %0, %b1 : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32>
  %2 = flow.gelu %1 : tensor<8x64xf32>
  %w2s = flow.annotate %w2 as #flow.sbp<[S(0)]> on @tp : tensor<64x16xf32>
  %3 = flow.matmul %2, %w2s : (tensor<8x64xf32>, tensor<64x16xf32>) -> tensor<8x16xf32>
  return %3 : tensor<8x16xf32>
}
