func.func @f(%t: tensor<0x4xf32>, %i: tensor<3xi64>) -> tensor<3x4xf32> {
  %0 = flow.gather %t[%i] axis = 0 : (tensor<0x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}
