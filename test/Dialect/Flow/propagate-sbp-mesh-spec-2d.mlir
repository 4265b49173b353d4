// RUN: flow-opt %s --flow-propagate-sbp=mesh-spec=%S/Inputs/two-axes.json | FileCheck %s
// RUN: flow-opt %s --flow-propagate-sbp=mesh-spec=h100-nodes | FileCheck %s

// Two levels of links (two-axes.json: 1 GB/s between the groups of mesh
// axis 0, 100 GB/s within them; h100-nodes: InfiniBand between nodes,
// NVLink within): a product worth splitting (8.6 GFLOP, its result needed
// whole) is split over the fast inner axis only, where gathering its rows
// costs a tenth of what splitting saves; over the outer axis the gather
// would cost more than the product.
// CHECK-LABEL: func.func @product
// CHECK: flow.matmul %arg0, %arg1 {flow.operand_sbp = [#flow.sbp<[B, S(0)]>, #flow.sbp<[B, B]>], flow.sbp = [#flow.sbp<[B, S(0)]>]}
flow.mesh @m [2, 2]
func.func @product(%x: tensor<4096x1024xf32>, %w: tensor<1024x1024xf32>)
    -> tensor<4096x1024xf32> attributes {flow.mesh = @m} {
  %0 = flow.matmul %x, %w : (tensor<4096x1024xf32>, tensor<1024x1024xf32>) -> tensor<4096x1024xf32>
  return %0 : tensor<4096x1024xf32>
}
