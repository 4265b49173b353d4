// A small CNN: (conv 3x3 -> batch_norm -> relu -> max_pool) twice, then a
// linear classifier. Input 2x3x16x16, 10 classes.
func.func @forward(%x: tensor<2x3x16x16xf32>,
                   %k1: tensor<8x3x3x3xf32>, %c1: tensor<8xf32>,
                   %s1: tensor<8xf32>, %t1: tensor<8xf32>, %m1: tensor<8xf32>, %v1: tensor<8xf32>,
                   %k2: tensor<16x8x3x3xf32>,
                   %s2: tensor<16xf32>, %t2: tensor<16xf32>, %m2: tensor<16xf32>, %v2: tensor<16xf32>,
                   %w: tensor<256x10xf32>, %b: tensor<10xf32>) -> tensor<2x10xf32> {
  %0 = flow.conv2d %x, %k1, %c1 strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1
      : (tensor<2x3x16x16xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>) -> tensor<2x8x16x16xf32>
  %1 = flow.batch_norm %0, %s1, %t1, %m1, %v1 epsilon = 1.0e-05
      : (tensor<2x8x16x16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8x16x16xf32>
  %2 = flow.relu %1 : tensor<2x8x16x16xf32>
  %3 = flow.max_pool2d %2 kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1]
      : tensor<2x8x16x16xf32> -> tensor<2x8x8x8xf32>
  %4 = flow.conv2d %3, %k2 strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1
      : (tensor<2x8x8x8xf32>, tensor<16x8x3x3xf32>) -> tensor<2x16x8x8xf32>
  %5 = flow.batch_norm %4, %s2, %t2, %m2, %v2 epsilon = 1.0e-05
      : (tensor<2x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x16x8x8xf32>
  %6 = flow.relu %5 : tensor<2x16x8x8xf32>
  %7 = flow.max_pool2d %6 kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1]
      : tensor<2x16x8x8xf32> -> tensor<2x16x4x4xf32>
  %8 = flow.reshape %7 : tensor<2x16x4x4xf32> -> tensor<2x256xf32>
  %9 = flow.matmul %8, %w : (tensor<2x256xf32>, tensor<256x10xf32>) -> tensor<2x10xf32>
  %10 = flow.add %9, %b : (tensor<2x10xf32>, tensor<10xf32>) -> tensor<2x10xf32>
  return %10 : tensor<2x10xf32>
}
