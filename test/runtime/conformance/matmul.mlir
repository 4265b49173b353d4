// Device conformance: a library GEMM with its bias (gemm commands).
// y = x @ w + bias
func.func @main(%x: tensor<24x40xf32>, %w: tensor<40x56xf32>, %bias: tensor<56xf32>) -> tensor<24x56xf32> {
  %m = flow.matmul %x, %w : (tensor<24x40xf32>, tensor<40x56xf32>) -> tensor<24x56xf32>
  %y = flow.add %m, %bias : (tensor<24x56xf32>, tensor<56xf32>) -> tensor<24x56xf32>
  return %y : tensor<24x56xf32>
}
