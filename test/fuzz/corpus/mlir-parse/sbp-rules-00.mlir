flow.mesh @m [2]
func.func @rules(%x: tensor<4x8xf32>, %v: tensor<8xf32>, %w: tensor<8x6xf32>,
                 %b3: tensor<2x4x8xf32>, %img: tensor<2x4x6x6xf32>,
                 %f: tensor<8x4x3x3xf32>, %t: tensor<10x8xf32>,
                 %ids: tensor<2x3xi64>) attributes {flow.mesh = @m} {
  %0 = flow.relu %x : tensor<4x8xf32>
  %1 = flow.neg %x : tensor<4x8xf32>
  %2 = flow.add %x, %v : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %3 = flow.mul %x, %v : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %4 = flow.matmul %x, %w : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
  %5 = flow.matmul %b3, %b3 {transpose_rhs} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
  %6 = flow.reduce_sum %x [1] : tensor<4x8xf32> -> tensor<4xf32>
  %7 = flow.reduce_max %x [0] {keepdims} : tensor<4x8xf32> -> tensor<1x8xf32>
  %8 = flow.softmax %x axis = 1 : tensor<4x8xf32>
  %9 = flow.layer_norm %x weight %v bias %v axis = 1 epsilon = 1.0e-05
      : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %10 = flow.conv2d %img, %f strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1
      : (tensor<2x4x6x6xf32>, tensor<8x4x3x3xf32>) -> tensor<2x8x6x6xf32>
  %11 = flow.transpose %x [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  %12 = flow.reshape %b3 : tensor<2x4x8xf32> -> tensor<2x32xf32>
  %13 = flow.gather %t[%ids] axis = 0 : (tensor<10x8xf32>, tensor<2x3xi64>) -> tensor<2x3x8xf32>
  %14 = flow.concat %x, %x axis = 1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x16xf32>
  return
}
