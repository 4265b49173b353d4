flow.mesh @mesh1d [4]
flow.mesh @mesh2d [2, 4]
func.func @reductions(%x: tensor<2x16x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>,
                      %gb: tensor<16x64xf32>, %i: tensor<4x8xi32>) -> tensor<2xf32> {
  %0 = flow.reduce_sum %x [1, 2] : tensor<2x16x64xf32> -> tensor<2xf32>
  %1 = flow.reduce_mean %x [2] {keepdims} : tensor<2x16x64xf32> -> tensor<2x16x1xf32>
  %2 = flow.reduce_max %i [0] : tensor<4x8xi32> -> tensor<8xi32>
  %3 = flow.softmax %x axis = 2 : tensor<2x16x64xf32>
  %4 = flow.log_softmax %x axis = 0 : tensor<2x16x64xf32>
  %5 = flow.layer_norm %x weight %g bias %b axis = 2 epsilon = 1.0e-05
      : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %6 = flow.layer_norm %x weight %gb axis = 1 epsilon = 1.0e-05
      : (tensor<2x16x64xf32>, tensor<16x64xf32>) -> tensor<2x16x64xf32>
  %7 = flow.layer_norm %x bias %b axis = 2 epsilon = 1.0e-05
      : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %8 = flow.layer_norm %x axis = 2 epsilon = 0.0 : (tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
  %9 = flow.rms_norm %x weight %g axis = 2 epsilon = 1.0e-06
      : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %10 = flow.rms_norm %x axis = 2 epsilon = 1.0e-05 : (tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
  return %0 : tensor<2xf32>
}
