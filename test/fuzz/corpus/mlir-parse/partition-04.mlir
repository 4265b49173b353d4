flow.mesh @m [2]
func.func @split_to_partial(%x: tensor<8x6xf32> {flow.sbp = #flow.sbp<[S(0)]>})
    -> (tensor<8x6xf32> {flow.sbp = #flow.sbp<[P]>}) attributes {flow.mesh = @m} {
  return %x : tensor<8x6xf32>
}
