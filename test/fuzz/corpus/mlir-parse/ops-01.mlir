flow.mesh @mesh1d [4]
flow.mesh @mesh2d [2, 4]
func.func @unary(%x: tensor<4x8xf32>, %h: tensor<4xf16>, %i: tensor<4xi32>) -> tensor<4x8xf32> {
  %0 = flow.neg %x : tensor<4x8xf32>
  %1 = flow.abs %i : tensor<4xi32>
  %2 = flow.exp %0 : tensor<4x8xf32>
  %3 = flow.log %2 : tensor<4x8xf32>
  %4 = flow.sqrt %3 : tensor<4x8xf32>
  %5 = flow.rsqrt %4 : tensor<4x8xf32>
  %6 = flow.tanh %5 : tensor<4x8xf32>
  %e = flow.erf %6 : tensor<4x8xf32>
  %7 = flow.sigmoid %h : tensor<4xf16>
  %8 = flow.relu %1 : tensor<4xi32>
  %9 = flow.gelu %6 : tensor<4x8xf32>
  %10 = flow.gelu %9 approximate = tanh : tensor<4x8xf32>
  %11 = flow.silu %10 : tensor<4x8xf32>
  %12 = flow.cast %11 : tensor<4x8xf32> to tensor<4x8xbf16>
  %13 = flow.cast %8 : tensor<4xi32> to tensor<4xi1>
  return %11 : tensor<4x8xf32>
}
