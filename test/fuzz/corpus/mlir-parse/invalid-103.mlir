func.func @parameter_without_name() -> tensor<4xf32> {
  %w = flow.parameter "" : tensor<4xf32>
  return %w : tensor<4xf32>
}
