flow.mesh @four [4]
func.func @sizes(%a: tensor<3x8xf32> {flow.sbp = #flow.sbp<[B]>},
                 %b: tensor<5x8xf32> {flow.sbp = #flow.sbp<[S(0)]>})
    -> (tensor<3x8xf32>, tensor<5x8xf32>) attributes {flow.mesh = @four} {
  %0 = flow.relu %a : tensor<3x8xf32>
  %1 = flow.relu %b : tensor<5x8xf32>
  return %0, %1 : tensor<3x8xf32>, tensor<5x8xf32>
}
