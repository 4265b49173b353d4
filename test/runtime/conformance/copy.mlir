// Device conformance: copies (an input returned as it is, and reshaped).
func.func @main(%a: tensor<6x10xf32>) -> (tensor<6x10xf32>, tensor<60xf32>) {
  %r = flow.reshape %a : tensor<6x10xf32> -> tensor<60xf32>
  return %a, %r : tensor<6x10xf32>, tensor<60xf32>
}
