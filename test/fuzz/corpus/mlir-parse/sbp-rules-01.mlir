flow.mesh @m [2]
func.func @more(%x: tensor<4x8xf32>, %i: tensor<4x8xi32>, %c: tensor<4x8xi1>, %v: tensor<8xf32>,
                %img: tensor<2x4x6x6xf32>, %s: tensor<4xf32>) attributes {flow.mesh = @m} {
  %0 = flow.abs %x : tensor<4x8xf32>
  %1 = flow.exp %x : tensor<4x8xf32>
  %2 = flow.log %x : tensor<4x8xf32>
  %3 = flow.sqrt %x : tensor<4x8xf32>
  %4 = flow.rsqrt %x : tensor<4x8xf32>
  %5 = flow.tanh %x : tensor<4x8xf32>
  %6 = flow.erf %x : tensor<4x8xf32>
  %7 = flow.sigmoid %x : tensor<4x8xf32>
  %8 = flow.silu %x : tensor<4x8xf32>
  %9 = flow.gelu %x : tensor<4x8xf32>
  %10 = flow.cast %x : tensor<4x8xf32> to tensor<4x8xbf16>
  %11 = flow.cast %x : tensor<4x8xf32> to tensor<4x8xi32>
  %12 = flow.sub %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %13 = flow.div %x, %v : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %14 = flow.maximum %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %15 = flow.minimum %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %16 = flow.pow %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %17 = flow.compare lt, %x, %v : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  %18 = flow.select %c, %x, %v : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %19 = flow.im2col %img kernel = [3, 3] strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1]
      : tensor<2x4x6x6xf32> -> tensor<2x4x3x3x6x6xf32>
  %20 = flow.reduce_mean %x [0] : tensor<4x8xf32> -> tensor<8xf32>
  %21 = flow.log_softmax %x axis = 0 : tensor<4x8xf32>
  %22 = flow.rms_norm %x weight %v axis = 1 epsilon = 1.0e-05 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %23 = flow.batch_norm %img, %s, %s, %s, %s epsilon = 1.0e-05
      : (tensor<2x4x6x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x6x6xf32>
  %24 = flow.max_pool2d %img kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1]
      : tensor<2x4x6x6xf32> -> tensor<2x4x3x3xf32>
  %25 = flow.avg_pool2d %img kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0]
      : tensor<2x4x6x6xf32> -> tensor<2x4x3x3xf32>
  %26 = flow.broadcast_to %v : tensor<8xf32> -> tensor<4x8xf32>
  %27 = flow.slice %x starts = [0, 2] limits = [4, 6] strides = [1, 1] : tensor<4x8xf32> -> tensor<4x4xf32>
  %28 = flow.pad %x low = [1, 0] high = [0, 0] value = 0.0 : tensor<4x8xf32> -> tensor<5x8xf32>
  %29 = flow.pad %x low = [1, 0] high = [0, 0] value = 1.0 : tensor<4x8xf32> -> tensor<5x8xf32>
  %30 = flow.constant dense<1.0> : tensor<4xf32>
  %31 = flow.relu %i : tensor<4x8xi32>
  return
}
