flow.mesh @m [2]
func.func @operand_sbp_count(%x: tensor<4xf32>) -> tensor<4xf32> attributes {flow.mesh = @m} {
  %0 = flow.relu %x {flow.operand_sbp = []} : tensor<4xf32>
  return %0 : tensor<4xf32>
}
