flow.mesh @mesh1d [4]
flow.mesh @mesh2d [2, 4]
func.func @sbp_forms(%a: tensor<8x16xf32> {flow.sbp = #flow.sbp<[S(0), B]>},
                     %b: tensor<8x16xf32> {flow.sbp = #flow.sbp<[P(sum), P(max)]>})
    -> (tensor<8x16xf32> {flow.sbp = #flow.sbp<[B, S(1)]>})
    attributes {flow.mesh = @mesh2d} {
  %0 = flow.annotate %a as #flow.sbp<[S(1)]> on @mesh1d : tensor<8x16xf32>
  %1 = flow.annotate %0 as #flow.sbp<[S(0), S(0)]> on @mesh2d : tensor<8x16xf32>
  %2 = flow.annotate %1 as #flow.sbp<[P, B]> on @mesh2d : tensor<8x16xf32>
  return %2 : tensor<8x16xf32>
}

func.func @constant() -> (tensor<2x2xf32>, tensor<4xi64>, tensor<i1>, tensor<3xbf16>) {
  %0 = flow.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %1 = flow.constant dense<7> : tensor<4xi64>
  %2 = flow.constant dense<true> : tensor<i1>
  %3 = flow.constant dense<0.5> : tensor<3xbf16>
  return %0, %1, %2, %3 : tensor<2x2xf32>, tensor<4xi64>, tensor<i1>, tensor<3xbf16>
}
