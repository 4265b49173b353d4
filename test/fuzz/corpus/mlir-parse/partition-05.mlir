flow.mesh @m4 [4]
func.func @uneven(%x: tensor<5x3xf32> {flow.sbp = #flow.sbp<[S(0)]>}) -> (tensor<5x3xf32> {flow.sbp = #flow.sbp<[B]>})
    attributes {flow.mesh = @m4} {
  %0 = flow.exp %x {flow.operand_sbp = [#flow.sbp<[S(0)]>], flow.sbp = [#flow.sbp<[S(0)]>]} : tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
}
