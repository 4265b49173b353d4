// Source of the compiled-tiny-mlp fuzz seeds (test/fuzz/README.md): a
// matmul with bias and ReLU (for CUDA, one GEMM with its library epilogue).
func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x4xf32>, %b: tensor<4xf32>) -> tensor<4x4xf32> {
  %m = flow.matmul %x, %w : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %a = flow.add %m, %b : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
  %r = flow.relu %a : tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}
