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
