// RUN: not flow-compile %s -o /dev/null 2>&1 | FileCheck %s

// One parameter name, two types.

// CHECK: error: parameter 'w' is used with type 'tensor<2x2xf32>' here and 'tensor<4xf32>' elsewhere
module attributes {flow.parameters = "m.safetensors"} {
  func.func @main() -> (tensor<4xf32>, tensor<2x2xf32>) {
    %w = flow.parameter "w" : tensor<4xf32>
    %v = flow.parameter "w" : tensor<2x2xf32>
    return %w, %v : tensor<4xf32>, tensor<2x2xf32>
  }
}
