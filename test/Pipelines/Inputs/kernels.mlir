// A module of kernels, as the flow phase leaves them (for
// phase-pipelines.mlir). Not a test itself.
func.func private @k(%m: tensor<8x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> attributes {flow.kernel, flow.workgroup_extent = 8 : i64} {
  %a = flow.add %m, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %r = flow.relu %a : tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}
