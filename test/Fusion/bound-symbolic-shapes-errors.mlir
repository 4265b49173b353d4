// What flow-bound-symbolic-shapes cannot compile yet is refused by name.
// RUN: flow-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(func.func(flow-form-dispatch-regions),flow-outline-kernels,flow-bound-symbolic-shapes)'

// A symbolic dimension that is not the rows.
func.func @inner(%x: tensor<2x?xf32, #flow.shape<[2, seq]>>) -> tensor<2x?xf32, #flow.shape<[2, seq]>>
    attributes {flow.dims = [#flow.dim<"seq", 1, 8>]} {
  // expected-error @+1 {{has type 'tensor<2x?xf32, #flow.shape<[2, seq]>>': dimension 1 (seq) is symbolic and is not the row dimension (dimension 0); only a tensor's rows may vary in size yet}}
  %e = flow.exp %x : tensor<2x?xf32, #flow.shape<[2, seq]>>
  return %e : tensor<2x?xf32, #flow.shape<[2, seq]>>
}

// -----

// A kernel that sums its rows.
func.func @sum_rows(%x: tensor<?x4xf32, #flow.shape<[batch, 4]>>) -> tensor<4xf32>
    attributes {flow.dims = [#flow.dim<"batch", 1, 8>]} {
  // expected-error @+1 {{kernel over rows of extent batch combines its rows}}
  %s = flow.reduce_sum %x [0] : tensor<?x4xf32, #flow.shape<[batch, 4]>> -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// A library matmul that contracts over the rows.
func.func @contract(%x: tensor<?x4xf32, #flow.shape<[batch, 4]>>, %y: tensor<?x3xf32, #flow.shape<[batch, 3]>>) -> tensor<4x3xf32>
    attributes {flow.dims = [#flow.dim<"batch", 1, 8>]} {
  // expected-error @+1 {{contracts over a symbolic dimension: this is not compiled yet}}
  %g = flow.matmul %x, %y {transpose_lhs} : (tensor<?x4xf32, #flow.shape<[batch, 4]>>, tensor<?x3xf32, #flow.shape<[batch, 3]>>) -> tensor<4x3xf32>
  return %g : tensor<4x3xf32>
}
