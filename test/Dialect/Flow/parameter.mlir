// RUN: flow-opt %s -split-input-file | FileCheck %s
// RUN: flow-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(flow-form-dispatch-regions),flow-outline-kernels)' | FileCheck %s --check-prefix=OUTLINE
// RUN: flow-opt %s -split-input-file -canonicalize | FileCheck %s --check-prefix=CANON

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

// -----

// A piece of a parameter (a device's piece of a split weight) round-trips;
// a slice of a parameter folds into its piece, and a slice of a piece into
// a piece of the same tensor.
// CHECK-LABEL: func.func @pieces
// CHECK: flow.parameter "w" piece [2, 0] of [8, 4] : tensor<3x4xf32>
// CANON-LABEL: func.func @pieces
// CANON-DAG: flow.parameter "w" piece [2, 0] of [8, 4] : tensor<3x4xf32>
// CANON-DAG: flow.parameter "w" piece [0, 1] of [8, 4] : tensor<8x2xf32>
// CANON-DAG: flow.parameter "w" piece [3, 1] of [8, 4] : tensor<2x3xf32>
// CANON-DAG: flow.slice {{.*}} strides = [2, 1]
module attributes {flow.parameters = "w.safetensors"} {
  func.func @pieces() -> (tensor<3x4xf32>, tensor<8x2xf32>, tensor<2x3xf32>, tensor<4x4xf32>) {
    %p = flow.parameter "w" piece [2, 0] of [8, 4] : tensor<3x4xf32>
    %w = flow.parameter "w" : tensor<8x4xf32>
    %s = flow.slice %w starts = [0, 1] limits = [8, 3] strides = [1, 1] : tensor<8x4xf32> -> tensor<8x2xf32>
    %t = flow.slice %p starts = [1, 1] limits = [3, 4] strides = [1, 1] : tensor<3x4xf32> -> tensor<2x3xf32>
    %u = flow.slice %w starts = [0, 0] limits = [8, 4] strides = [2, 1] : tensor<8x4xf32> -> tensor<4x4xf32>
    return %p, %s, %t, %u : tensor<3x4xf32>, tensor<8x2xf32>, tensor<2x3xf32>, tensor<4x4xf32>
  }
}

// -----

// A device's piece by SBP round-trips; a slice of it stays a slice (its
// offsets are the device's, known when the runtime binds it).
// CHECK-LABEL: func.func @by_sbp
// CHECK: flow.parameter "w" sbp <[S(0)]> of [8, 4] : tensor<4x4xf32>
// CANON-LABEL: func.func @by_sbp
// CANON: flow.parameter "w" sbp <[S(0)]> of [8, 4] : tensor<4x4xf32>
// CANON: flow.slice
module attributes {flow.parameters = "w.safetensors"} {
  flow.mesh @m [2]
  func.func @by_sbp() -> tensor<2x4xf32> attributes {flow.mesh = @m} {
    %p = flow.parameter "w" sbp <[S(0)]> of [8, 4] : tensor<4x4xf32>
    %t = flow.slice %p starts = [1, 0] limits = [3, 4] strides = [1, 1] : tensor<4x4xf32> -> tensor<2x4xf32>
    return %t : tensor<2x4xf32>
  }
}
