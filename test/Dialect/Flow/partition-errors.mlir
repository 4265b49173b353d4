// RUN: flow-opt %s -split-input-file --flow-partition -verify-diagnostics

// Partitioning needs SBP propagation first.
flow.mesh @m [2]
func.func @not_propagated(%x: tensor<8xf32>) -> tensor<8xf32> attributes {flow.mesh = @m} {
  // expected-error @+1 {{has no SBP: run flow-propagate-sbp before flow-partition}}
  %0 = flow.relu %x : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// An uneven split that a reshape cannot keep.
flow.mesh @m [2]
func.func @uneven_reshape(%x: tensor<3x4xf32> {flow.sbp = #flow.sbp<[S(0)]>}) -> (tensor<12xf32> {flow.sbp = #flow.sbp<[S(0)]>})
    attributes {flow.mesh = @m} {
  // expected-error @+1 {{cannot partition this reshape: the device's piece of the operand has 8 elements but its piece of the result has 6}}
  %0 = flow.reshape %x {flow.operand_sbp = [#flow.sbp<[S(0)]>], flow.sbp = [#flow.sbp<[S(0)]>]} : tensor<3x4xf32> -> tensor<12xf32>
  return %0 : tensor<12xf32>
}

// -----

// A grouped convolution whose pieces cut a group (2 groups of 4 channels on
// 4 devices: flow-propagate-sbp never picks this signature).
flow.mesh @m4 [4]
func.func @cut_group(%x: tensor<1x8x4x4xf32> {flow.sbp = #flow.sbp<[S(1)]>},
                     %w: tensor<8x4x1x1xf32> {flow.sbp = #flow.sbp<[S(0)]>})
    -> (tensor<1x8x4x4xf32> {flow.sbp = #flow.sbp<[S(1)]>}) attributes {flow.mesh = @m4} {
  // expected-error @+1 {{cannot partition this convolution: the device's 2 input channels are not whole groups of 4}}
  %0 = flow.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 2
      {flow.operand_sbp = [#flow.sbp<[S(1)]>, #flow.sbp<[S(0)]>], flow.sbp = [#flow.sbp<[S(1)]>]}
      : (tensor<1x8x4x4xf32>, tensor<8x4x1x1xf32>) -> tensor<1x8x4x4xf32>
  return %0 : tensor<1x8x4x4xf32>
}
