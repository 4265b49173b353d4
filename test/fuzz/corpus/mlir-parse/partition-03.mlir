flow.mesh @m [2]
func.func @local(%x: tensor<8x6xf32>)
    -> (tensor<8x6xf32> {flow.sbp = #flow.sbp<[S(0)]>}, tensor<8x6xf32> {flow.sbp = #flow.sbp<[P]>})
    attributes {flow.mesh = @m} {
  return %x, %x : tensor<8x6xf32>, tensor<8x6xf32>
}
