// RUN: not flow-compile %s -o /dev/null 2>&1 | FileCheck %s

// A module that uses parameters must name its archive.

// CHECK: error: the module uses flow.parameter but has no 'flow.parameters' attribute naming its parameter archive
func.func @main() -> tensor<4xf32> {
  %w = flow.parameter "w" : tensor<4xf32>
  return %w : tensor<4xf32>
}

