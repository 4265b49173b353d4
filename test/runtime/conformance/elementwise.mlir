// Device conformance: element-wise kernels (dispatch commands).
// y = exp(-relu(a + b)) * a
func.func @main(%a: tensor<64x33xf32>, %b: tensor<33xf32>) -> tensor<64x33xf32> {
  %s = flow.add %a, %b : (tensor<64x33xf32>, tensor<33xf32>) -> tensor<64x33xf32>
  %r = flow.relu %s : tensor<64x33xf32>
  %n = flow.neg %r : tensor<64x33xf32>
  %e = flow.exp %n : tensor<64x33xf32>
  %y = flow.mul %e, %a : (tensor<64x33xf32>, tensor<64x33xf32>) -> tensor<64x33xf32>
  return %y : tensor<64x33xf32>
}
