// Device conformance: rows wider than a block's 48 KiB of static shared
// memory (the softmax of exp(x) * x over 20000 f32: the fused prologue's
// row, 80000 bytes, is a temporary the CUDA target keeps in dynamic shared
// memory).
func.func @main(%x: tensor<4x20000xf32>) -> tensor<4x20000xf32> {
  %e = flow.exp %x : tensor<4x20000xf32>
  %m = flow.mul %e, %x : (tensor<4x20000xf32>, tensor<4x20000xf32>) -> tensor<4x20000xf32>
  %s = flow.softmax %m axis = 1 : tensor<4x20000xf32>
  return %s : tensor<4x20000xf32>
}
