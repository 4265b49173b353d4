func.func @batch_of_one(%x: tensor<1x12x8x8xf32>, %one: tensor<1x1xf32>)
    -> (tensor<1x12x8x8xf32>, tensor<1x12x8x8xf32>, tensor<1x12x8x8xf32>,
        tensor<1x12x8xf32>, tensor<1x8x8xf32>, tensor<8x8xf32>, tensor<1x1xf32>) {
  %0 = flow.relu %x : tensor<1x12x8x8xf32>
  %1 = flow.softmax %x axis = 3 : tensor<1x12x8x8xf32>
  %2 = flow.softmax %x axis = 1 : tensor<1x12x8x8xf32>
  %3 = flow.reduce_sum %x [3] : tensor<1x12x8x8xf32> -> tensor<1x12x8xf32>
  %4 = flow.reduce_sum %x [1] : tensor<1x12x8x8xf32> -> tensor<1x8x8xf32>
  %5 = flow.reduce_sum %x [0, 1] : tensor<1x12x8x8xf32> -> tensor<8x8xf32>
  %6 = flow.relu %one : tensor<1x1xf32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<1x12x8x8xf32>, tensor<1x12x8x8xf32>, tensor<1x12x8x8xf32>,
      tensor<1x12x8xf32>, tensor<1x8x8xf32>, tensor<8x8xf32>, tensor<1x1xf32>
}
