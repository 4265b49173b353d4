// A transformer encoder layer (post-norm, as torch.nn.TransformerEncoderLayer
// with norm_first=False and GELU): batch 2, sequence 16, model 64, 4 heads of
// 16, feed-forward 256.
func.func @forward(%x: tensor<2x16x64xf32>,
                   %wq: tensor<64x64xf32>, %bq: tensor<64xf32>,
                   %wk: tensor<64x64xf32>, %bk: tensor<64xf32>,
                   %wv: tensor<64x64xf32>, %bv: tensor<64xf32>,
                   %wo: tensor<64x64xf32>, %bo: tensor<64xf32>,
                   %g1: tensor<64xf32>, %n1: tensor<64xf32>,
                   %w1: tensor<64x256xf32>, %c1: tensor<256xf32>,
                   %w2: tensor<256x64xf32>, %c2: tensor<64xf32>,
                   %g2: tensor<64xf32>, %n2: tensor<64xf32>) -> tensor<2x16x64xf32> {
  // Projections to heads: [2, 16, 64] -> [2, 4, 16, 16].
  %q0 = flow.matmul %x, %wq : (tensor<2x16x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  %q1 = flow.add %q0, %bq : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %q2 = flow.reshape %q1 : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
  %q = flow.transpose %q2 [0, 2, 1, 3] : tensor<2x16x4x16xf32> -> tensor<2x4x16x16xf32>
  %k0 = flow.matmul %x, %wk : (tensor<2x16x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  %k1 = flow.add %k0, %bk : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %k2 = flow.reshape %k1 : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
  %k = flow.transpose %k2 [0, 2, 1, 3] : tensor<2x16x4x16xf32> -> tensor<2x4x16x16xf32>
  %v0 = flow.matmul %x, %wv : (tensor<2x16x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  %v1 = flow.add %v0, %bv : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %v2 = flow.reshape %v1 : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
  %v = flow.transpose %v2 [0, 2, 1, 3] : tensor<2x16x4x16xf32> -> tensor<2x4x16x16xf32>
  // Scaled dot-product attention.
  %s0 = flow.matmul %q, %k {transpose_rhs} : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  %scale = flow.constant dense<0.25> : tensor<f32>
  %s1 = flow.mul %s0, %scale : (tensor<2x4x16x16xf32>, tensor<f32>) -> tensor<2x4x16x16xf32>
  %p = flow.softmax %s1 axis = 3 : tensor<2x4x16x16xf32>
  %o0 = flow.matmul %p, %v : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  %o1 = flow.transpose %o0 [0, 2, 1, 3] : tensor<2x4x16x16xf32> -> tensor<2x16x4x16xf32>
  %o2 = flow.reshape %o1 : tensor<2x16x4x16xf32> -> tensor<2x16x64xf32>
  %a0 = flow.matmul %o2, %wo : (tensor<2x16x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  %a1 = flow.add %a0, %bo : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  // Residual and norm.
  %r1 = flow.add %x, %a1 : (tensor<2x16x64xf32>, tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
  %h = flow.layer_norm %r1 weight %g1 bias %n1 axis = 2 epsilon = 1.0e-05
      : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  // Feed-forward with GELU, residual and norm.
  %f0 = flow.matmul %h, %w1 : (tensor<2x16x64xf32>, tensor<64x256xf32>) -> tensor<2x16x256xf32>
  %f1 = flow.add %f0, %c1 : (tensor<2x16x256xf32>, tensor<256xf32>) -> tensor<2x16x256xf32>
  %f2 = flow.gelu %f1 : tensor<2x16x256xf32>
  %f3 = flow.matmul %f2, %w2 : (tensor<2x16x256xf32>, tensor<256x64xf32>) -> tensor<2x16x64xf32>
  %f4 = flow.add %f3, %c2 : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %r2 = flow.add %h, %f4 : (tensor<2x16x64xf32>, tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
  %y = flow.layer_norm %r2 weight %g2 bias %n2 axis = 2 epsilon = 1.0e-05
      : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}
