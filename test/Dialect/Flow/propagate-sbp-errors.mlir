// RUN: flow-opt %s -split-input-file --flow-propagate-sbp -verify-diagnostics

flow.mesh @a [2]
flow.mesh @b [4]
func.func @other_mesh(%x: tensor<8xf32>) -> tensor<8xf32> attributes {flow.mesh = @a} {
  // expected-error @+1 {{annotates on mesh @b but the function runs on @a}}
  %0 = flow.annotate %x as #flow.sbp<[S(0)]> on @b : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

flow.mesh @a [2]
func.func @collective_in_global_program(%x: tensor<8xf32>) -> tensor<8xf32> attributes {flow.mesh = @a} {
  // expected-error @+1 {{has no SBP signature: it cannot be placed on a mesh}}
  %0 = flow.all_reduce sum %x on @a axes = [0] : tensor<8xf32>
  return %0 : tensor<8xf32>
}
