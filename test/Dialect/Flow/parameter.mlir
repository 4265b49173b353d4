// RUN: flow-opt %s -split-input-file | FileCheck %s
// RUN: flow-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(flow-form-dispatch-regions),flow-outline-kernels)' | FileCheck %s --check-prefix=OUTLINE

// Parameters round-trip, stay on the host when kernels are outlined (the
// runtime binds them from the archive), and a module that uses them must
// name its archive.

// CHECK: module attributes {flow.parameters = "mlp.safetensors"}
// CHECK: %[[W:.*]] = flow.parameter "fc1.weight" : tensor<8x4xf32>
// CHECK: flow.parameter "fc1.bias" : tensor<4xf32>
// OUTLINE-LABEL: func.func @main
// OUTLINE: flow.parameter "fc1.weight"
// OUTLINE: flow.parameter "fc1.bias"
// OUTLINE: call @main_k0
module attributes {flow.parameters = "mlp.safetensors"} {
  func.func @main(%x: tensor<2x8xf32>) -> tensor<2x4xf32> {
    %w = flow.parameter "fc1.weight" : tensor<8x4xf32>
    %b = flow.parameter "fc1.bias" : tensor<4xf32>
    %y = flow.matmul %x, %w : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
    %z = flow.add %y, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    return %z : tensor<2x4xf32>
  }
}
