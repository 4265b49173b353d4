flow.mesh @mesh1d [4]
flow.mesh @mesh2d [2, 4]
func.func @contractions(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>,
                        %q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>,
                        %img: tensor<1x4x32x32xf32>, %f: tensor<8x2x3x3xf32>,
                        %bias: tensor<8xf32>) -> tensor<8x32xf32> {
  %0 = flow.matmul %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %1 = flow.matmul %q, %k {transpose_rhs} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x8xf32>
  %2 = flow.matmul %x, %0 {transpose_lhs} : (tensor<8x16xf32>, tensor<8x32xf32>) -> tensor<16x32xf32>
  %3 = flow.matmul %q, %w : (tensor<2x4x8x16xf32>, tensor<16x32xf32>) -> tensor<2x4x8x32xf32>
  %4 = flow.conv2d %img, %f, %bias strides = [2, 2] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 2
      : (tensor<1x4x32x32xf32>, tensor<8x2x3x3xf32>, tensor<8xf32>) -> tensor<1x8x16x16xf32>
  %cols = flow.im2col %img kernel = [3, 3] strides = [2, 2] padding = [1, 1, 1, 1] dilations = [1, 1]
      : tensor<1x4x32x32xf32> -> tensor<1x4x3x3x16x16xf32>
  %5 = flow.conv2d %img, %f strides = [1, 1] padding = [0, 0, 0, 0] dilations = [2, 2] groups = 2
      : (tensor<1x4x32x32xf32>, tensor<8x2x3x3xf32>) -> tensor<1x8x28x28xf32>
  return %0 : tensor<8x32xf32>
}
