flow.mesh @mesh1d [4]
flow.mesh @mesh2d [2, 4]
func.func @cnn_ops(%x: tensor<1x16x32x32xf32>, %s: tensor<16xf32>, %b: tensor<16xf32>,
                   %m: tensor<16xf32>, %v: tensor<16xf32>) -> tensor<1x16x16x16xf32> {
  %0 = flow.batch_norm %x, %s, %b, %m, %v epsilon = 1.0e-05
      : (tensor<1x16x32x32xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
      -> tensor<1x16x32x32xf32>
  %1 = flow.max_pool2d %0 kernel = [3, 3] strides = [2, 2] padding = [1, 1, 1, 1] dilations = [1, 1]
      : tensor<1x16x32x32xf32> -> tensor<1x16x16x16xf32>
  %2 = flow.max_pool2d %0 kernel = [3, 3] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1] {ceil_mode}
      : tensor<1x16x32x32xf32> -> tensor<1x16x16x16xf32>
  %3 = flow.avg_pool2d %0 kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0]
      : tensor<1x16x32x32xf32> -> tensor<1x16x16x16xf32>
  %4 = flow.avg_pool2d %0 kernel = [3, 3] strides = [2, 2] padding = [1, 1, 1, 1] {ceil_mode, count_include_pad}
      : tensor<1x16x32x32xf32> -> tensor<1x16x17x17xf32>
  return %1 : tensor<1x16x16x16xf32>
}
