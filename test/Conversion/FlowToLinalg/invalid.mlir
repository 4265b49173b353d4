// RUN: flow-opt %s -split-input-file --flow-convert-to-linalg -verify-diagnostics

flow.mesh @m [2]
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'flow.all_reduce' has no single-device lowering: collectives need a compile for a device mesh}}
  %0 = flow.all_reduce sum %x on @m axes = [0] : tensor<4xf32>
  return %0 : tensor<4xf32>
}
