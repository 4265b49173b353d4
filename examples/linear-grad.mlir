// The gradients of a loss (docs/training.md): flow-autodiff appends dL/dw
// and dL/db to the results of @loss.
func.func @loss(%x: tensor<4x8xf32>, %w: tensor<8x2xf32> {flow.requires_grad},
                %b: tensor<2xf32> {flow.requires_grad}) -> tensor<f32> {
  %y = flow.matmul %x, %w : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  %z = flow.add %y, %b : (tensor<4x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  %t = flow.tanh %z : tensor<4x2xf32>
  %l = flow.reduce_sum %t [0, 1] : tensor<4x2xf32> -> tensor<f32>
  return %l : tensor<f32>
}
