// flow-autodiff's refusals: each names what is wrong.
// RUN: flow-opt %s -split-input-file --flow-autodiff -verify-diagnostics

// expected-error @+1 {{the loss (result 0 of @not_scalar) is 'tensor<4xf32>'; the loss must be a float tensor of one element (a scalar)}}
func.func @not_scalar(%x: tensor<4xf32> {flow.requires_grad}) -> tensor<4xf32> {
  %y = flow.exp %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// expected-error @+1 {{the loss (result 0 of @integer_loss) is 'tensor<i64>'}}
func.func @integer_loss(%x: tensor<4xf32> {flow.requires_grad}) -> tensor<i64> {
  %i = flow.argmax %x axis = 0 : tensor<4xf32> -> tensor<i64>
  return %i : tensor<i64>
}

// -----

func.func @no_rule(%x: tensor<8xf32> {flow.requires_grad}) -> tensor<f32> {
  // expected-error @+1 {{flow-autodiff: 'flow.sort' has no gradient rule, and the loss depends on a differentiated argument through it}}
  %v, %i = flow.sort %x axis = 0 : tensor<8xf32> -> (tensor<8xf32>, tensor<8xi64>)
  %l = flow.reduce_max %v [0] : tensor<8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// An argument the loss does not depend on gets zeros, and a warning.
func.func @unreached(%x: tensor<4xf32> {flow.requires_grad},
                     // expected-warning @+1 {{argument #1 of @unreached does not reach the loss; its gradient is zero}}
                     %w: tensor<4xf32> {flow.requires_grad}) -> (tensor<f32>, tensor<4xf32>) {
  %y = flow.exp %x : tensor<4xf32>
  %l = flow.reduce_sum %y [0] : tensor<4xf32> -> tensor<f32>
  return %l, %w : tensor<f32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{@called is called from elsewhere; differentiate a function no other function calls (inline it first)}}
func.func @called(%x: tensor<4xf32> {flow.requires_grad}) -> tensor<f32> {
  %l = flow.reduce_sum %x [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
func.func @caller(%x: tensor<4xf32>) -> tensor<f32> {
  %l = func.call @called(%x) : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{argument #0 is marked 'flow.requires_grad' but is a 'tensor<4xi32>': only float tensors have gradients}}
func.func @integer_argument(%x: tensor<4xi32> {flow.requires_grad}) -> tensor<f32> {
  %f = flow.cast %x : tensor<4xi32> to tensor<4xf32>
  %l = flow.reduce_sum %f [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{flow-autodiff: cannot recompute 'flow.nonsense': not an op}}
func.func @f(%x: tensor<4xf32> {flow.requires_grad}) -> tensor<f32>
    attributes {flow.recompute = ["flow.nonsense"]} {
  %l = flow.reduce_sum %x [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{flow-autodiff: 'flow.recompute' must be an array of op names}}
func.func @f(%x: tensor<4xf32> {flow.requires_grad}) -> tensor<f32>
    attributes {flow.recompute = [3]} {
  %l = flow.reduce_sum %x [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
