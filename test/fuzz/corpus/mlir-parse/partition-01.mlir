flow.mesh @m [2]
func.func @partials(%x: tensor<8x6xf32> {flow.sbp = #flow.sbp<[P]>},
                    %y: tensor<8x6xf32> {flow.sbp = #flow.sbp<[P(max)]>})
    -> (tensor<8x6xf32> {flow.sbp = #flow.sbp<[B]>}, tensor<8x6xf32> {flow.sbp = #flow.sbp<[S(1)]>},
        tensor<8x6xf32> {flow.sbp = #flow.sbp<[B]>})
    attributes {flow.mesh = @m} {
  return %x, %x, %y : tensor<8x6xf32>, tensor<8x6xf32>, tensor<8x6xf32>
}
