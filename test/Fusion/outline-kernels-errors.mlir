// RUN: flow-opt %s -split-input-file -verify-diagnostics --flow-outline-kernels

// Outlining takes regions: a compute op left outside one is an error.
func.func @loose(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{'flow.relu' op is not in a flow.dispatch_region: run flow-form-dispatch-regions before outlining}}
  %0 = flow.relu %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
