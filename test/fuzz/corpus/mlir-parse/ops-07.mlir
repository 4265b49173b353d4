flow.mesh @mesh1d [4]
flow.mesh @mesh2d [2, 4]
func.func @collectives(%x: tensor<2x16xf32>, %y: tensor<8x16xf32>, %i: tensor<4xi32>) -> tensor<8x16xf32> {
  %0 = flow.all_reduce sum %y on @mesh2d axes = [1] : tensor<8x16xf32>
  %1 = flow.all_reduce max %i on @mesh2d axes = [0, 1] : tensor<4xi32>
  %2 = flow.all_gather %x on @mesh1d axes = [0] dim = 0 : tensor<2x16xf32> -> tensor<8x16xf32>
  %u = flow.all_gather %x on @mesh1d axes = [0] dim = 0 : tensor<2x16xf32> -> tensor<7x16xf32>
  %3 = flow.all_gather %x on @mesh2d axes = [0, 1] dim = 1 : tensor<2x16xf32> -> tensor<2x128xf32>
  %4 = flow.reduce_scatter sum %y on @mesh1d axes = [0] dim = 0 : tensor<8x16xf32> -> tensor<2x16xf32>
  %5 = flow.reduce_scatter max %y on @mesh2d axes = [0] dim = 1 : tensor<8x16xf32> -> tensor<8x8xf32>
  %6 = flow.all_to_all %x on @mesh1d axes = [0] split_dim = 1 concat_dim = 0 : tensor<2x16xf32> -> tensor<8x4xf32>
  %7 = flow.all_to_all %y on @mesh1d axes = [0] split_dim = 0 concat_dim = 0 : tensor<8x16xf32> -> tensor<8x16xf32>
  %8 = flow.broadcast %y on @mesh2d axes = [1] root = 3 : tensor<8x16xf32>
  return %8 : tensor<8x16xf32>
}
