// Source of the compiled-tiny-ew fuzz seed (test/fuzz/README.md): an
// element-wise chain with a row maximum.
func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %s = flow.add %x, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %e = flow.exp %s : tensor<4x8xf32>
  %m = flow.reduce_max %e [1] : tensor<4x8xf32> -> tensor<4xf32>
  %r = flow.reshape %m : tensor<4xf32> -> tensor<4x1xf32>
  %d = flow.sub %e, %r : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %d : tensor<4x8xf32>
}
