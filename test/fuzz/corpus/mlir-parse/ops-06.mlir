flow.mesh @mesh1d [4]
flow.mesh @mesh2d [2, 4]
func.func @data_movement(%x: tensor<2x3x4xf32>, %y: tensor<2x5x4xf32>, %t: tensor<1000x64xf32>,
                         %ids: tensor<2x16xi64>, %r: tensor<1x4xf32>, %ids32: tensor<3xi32>)
    -> tensor<6x4xf32> {
  %0 = flow.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %1 = flow.transpose %x [0, 2, 1] : tensor<2x3x4xf32> -> tensor<2x4x3xf32>
  %2 = flow.broadcast_to %r : tensor<1x4xf32> -> tensor<2x3x4xf32>
  %3 = flow.concat %x, %y, %2 axis = 1
      : (tensor<2x3x4xf32>, tensor<2x5x4xf32>, tensor<2x3x4xf32>) -> tensor<2x11x4xf32>
  %4 = flow.slice %y starts = [0, 1, 0] limits = [2, 5, 4] strides = [1, 2, 3]
      : tensor<2x5x4xf32> -> tensor<2x2x2xf32>
  %5 = flow.gather %t[%ids] axis = 0 : (tensor<1000x64xf32>, tensor<2x16xi64>) -> tensor<2x16x64xf32>
  %6 = flow.gather %x[%ids32] axis = 1 : (tensor<2x3x4xf32>, tensor<3xi32>) -> tensor<2x3x4xf32>
  %7 = flow.pad %x low = [0, 1, 0] high = [0, 2, 1] value = 0.0 : tensor<2x3x4xf32> -> tensor<2x6x5xf32>
  %8 = flow.pad %x low = [0, 0, 0] high = [1, 0, 0] value = -1.0 : tensor<2x3x4xf32> -> tensor<3x3x4xf32>
  return %0 : tensor<6x4xf32>
}
