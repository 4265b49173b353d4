flow.mesh @m [2]
func.func @gather(%x: tensor<8x6xf32> {flow.sbp = #flow.sbp<[S(0)]>}) -> (tensor<8x6xf32> {flow.sbp = #flow.sbp<[B]>})
    attributes {flow.mesh = @m} {
  %0 = flow.relu %x {flow.operand_sbp = [#flow.sbp<[B]>], flow.sbp = [#flow.sbp<[B]>]} : tensor<8x6xf32>
  return %0 : tensor<8x6xf32>
}
