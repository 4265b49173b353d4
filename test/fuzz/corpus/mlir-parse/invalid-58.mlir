func.func @f(%a: tensor<4x8xf32>, %g: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = flow.rms_norm %a weight %g axis = 1 epsilon = 1.0e-5 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
