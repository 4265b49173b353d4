func.func @f(%x: tensor<4x8x8xf32>) -> tensor<1x4x3x3x6x6xf32> {
  %0 = "flow.im2col"(%x) {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<4x8x8xf32>) -> tensor<1x4x3x3x6x6xf32>
  return %0 : tensor<1x4x3x3x6x6xf32>
}
