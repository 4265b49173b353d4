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

// -----

flow.mesh @a [2]
func.func @pinned_signature_not_a_rule(%x: tensor<8x6xf32>) -> tensor<8x6xf32> attributes {flow.mesh = @a} {
  // A softmax cannot read S(0) and write S(1).
  // expected-error @+1 {{the SBP signature written on the op is not one of its signatures on this mesh}}
  %0 = flow.softmax %x axis = 1 {flow.operand_sbp = [#flow.sbp<[S(0)]>], flow.sbp = [#flow.sbp<[S(1)]>]} : tensor<8x6xf32>
  return %0 : tensor<8x6xf32>
}

// -----

flow.mesh @a [4]
func.func @pinned_reshape_uneven(%x: tensor<2x6x7xf32>) -> tensor<2x42xf32> attributes {flow.mesh = @a} {
  // 6 heads do not cut into 4 equal pieces: the merge cannot keep the split.
  // expected-error @+1 {{the SBP signature written on the op is not one of its signatures on this mesh}}
  %0 = flow.reshape %x {flow.operand_sbp = [#flow.sbp<[S(1)]>], flow.sbp = [#flow.sbp<[S(1)]>]} : tensor<2x6x7xf32> -> tensor<2x42xf32>
  return %0 : tensor<2x42xf32>
}

// -----

flow.mesh @a [4]
func.func @pinned_conv_cuts_groups(%x: tensor<1x8x4x4xf32>, %w: tensor<8x4x1x1xf32>) -> tensor<1x8x4x4xf32> attributes {flow.mesh = @a} {
  // 2 groups cannot be shared by 4 devices whole.
  // expected-error @+1 {{the SBP signature written on the op is not one of its signatures on this mesh}}
  %0 = flow.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 2
      {flow.operand_sbp = [#flow.sbp<[S(1)]>, #flow.sbp<[S(0)]>], flow.sbp = [#flow.sbp<[S(1)]>]}
      : (tensor<1x8x4x4xf32>, tensor<8x4x1x1xf32>) -> tensor<1x8x4x4xf32>
  return %0 : tensor<1x8x4x4xf32>
}
