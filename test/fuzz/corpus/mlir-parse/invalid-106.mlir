flow.mesh @m [2]
func.func @op_sbp_split_out_of_range(%x: tensor<4xf32>) -> tensor<4xf32> attributes {flow.mesh = @m} {
  %0 = flow.relu %x {flow.sbp = [#flow.sbp<[S(1)]>]} : tensor<4xf32>
  return %0 : tensor<4xf32>
}
