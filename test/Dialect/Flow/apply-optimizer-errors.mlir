// flow-apply-optimizer's refusals, and the training attributes' verifiers.
// RUN: flow-opt %s -split-input-file --flow-autodiff --flow-apply-optimizer -verify-diagnostics

// expected-error @+1 {{'flow.optimizer' of @kind: 'kind' must be "sgd" or "adamw"}}
func.func @kind(%w: tensor<3xf32> {flow.requires_grad}) -> tensor<f32>
    attributes {flow.optimizer = {kind = "lamb"}} {
  %l = flow.reduce_sum %w [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{unknown entry 'momentum' (adamw takes weight_decay, max_grad_norm, beta1, beta2, eps, skip_nonfinite, shard_state)}}
func.func @entry(%w: tensor<3xf32> {flow.requires_grad}) -> tensor<f32>
    attributes {flow.optimizer = {kind = "adamw", momentum = 0.9}} {
  %l = flow.reduce_sum %w [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{@nothing has an optimizer but no gradients}}
func.func @nothing(%w: tensor<3xf32>) -> tensor<f32>
    attributes {flow.optimizer = {kind = "sgd"}} {
  %l = flow.reduce_sum %w [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{'flow.state_init' on argument #0 must be "zeros"}}
func.func @init(%w: tensor<3xf32> {flow.state = "w", flow.state_init = "ones"}) -> tensor<3xf32> {
  return %w : tensor<3xf32>
}

// -----

// expected-error @+1 {{'flow.learning_rate' marks a float tensor of one element (unit attribute)}}
func.func @rate(%lr: tensor<2xf32> {flow.learning_rate}) -> tensor<2xf32> {
  return %lr : tensor<2xf32>
}

// -----

// expected-error @+1 {{'flow.optimizer' must be a dictionary on a function}}
func.func @not_a_dictionary() attributes {flow.optimizer = "sgd"} {
  return
}

// -----

// expected-error @+1 {{'skip_nonfinite' must be true or false}}
func.func @skip_flag(%w: tensor<3xf32> {flow.requires_grad}) -> tensor<f32>
    attributes {flow.optimizer = {kind = "sgd", skip_nonfinite = 1.0}} {
  %l = flow.reduce_sum %w [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}
