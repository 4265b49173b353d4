flow.mesh @m [2]
func.func @swap(%x: tensor<8x6xf32> {flow.sbp = #flow.sbp<[S(0)]>}) -> (tensor<8x6xf32> {flow.sbp = #flow.sbp<[S(1)]>})
    attributes {flow.mesh = @m} {
  return %x : tensor<8x6xf32>
}
