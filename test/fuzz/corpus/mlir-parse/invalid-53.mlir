func.func @f(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = flow.layer_norm %a axis = 2 epsilon = 1.0e-5 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
