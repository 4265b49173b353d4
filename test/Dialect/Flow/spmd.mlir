// RUN: flow-opt %s --flow-propagate-sbp --flow-partition | FileCheck %s

// Propagation then partitioning, end to end: the Megatron MLP (a
// column-split then a row-split linear) has exactly one collective, an
// all-reduce of the result.
// CHECK-LABEL: func.func @megatron(%arg0: tensor<4x16xf32>, %arg1: tensor<16x32xf32>, %arg2: tensor<32x16xf32>) -> tensor<4x16xf32>
// CHECK-SAME: flow.ranks = array<i64: 0, 1>
// CHECK-COUNT-1: flow.all_reduce
// CHECK-NOT: flow.all_gather
// CHECK: return
flow.mesh @tp2 [2]
func.func @megatron(%x: tensor<4x16xf32>,
                    %w1: tensor<16x64xf32> {flow.sbp = #flow.sbp<[S(1)]>},
                    %w2: tensor<64x16xf32> {flow.sbp = #flow.sbp<[S(0)]>}) -> tensor<4x16xf32>
    attributes {flow.mesh = @tp2} {
  %0 = flow.matmul %x, %w1 : (tensor<4x16xf32>, tensor<16x64xf32>) -> tensor<4x64xf32>
  %1 = flow.gelu %0 : tensor<4x64xf32>
  %2 = flow.matmul %1, %w2 : (tensor<4x64xf32>, tensor<64x16xf32>) -> tensor<4x16xf32>
  return %2 : tensor<4x16xf32>
}
