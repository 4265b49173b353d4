func.func @single_device(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = flow.relu %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
