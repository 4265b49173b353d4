// RUN: flow-opt %s --flow-partition | FileCheck %s

// The partition hooks on an uneven split: 7 rows over 3 devices are 3, 2
// and 2, so devices 1 and 2 share a program and device 0 has its own. Each
// op writes itself in the device's terms: a slice's limit on a split
// dimension it takes whole is the piece's length; pad, concat, gather of
// split indices and a reshape keeping the split are the same ops on
// pieces; a sum over the split rows is a partial sum, reduced; a mean
// divides by the global count (7), not the piece's.
// CHECK-LABEL: func.func @slice_r0(%arg0: tensor<3x6xf32>) -> tensor<3x4xf32>
// CHECK: flow.slice %arg0 starts = [0, 1] limits = [3, 5] strides = [1, 1] : tensor<3x6xf32> -> tensor<3x4xf32>
// CHECK-LABEL: func.func @slice_r1(%arg0: tensor<2x6xf32>) -> tensor<2x4xf32>
// CHECK-SAME: flow.ranks = array<i64: 1, 2>
// CHECK: flow.slice %arg0 starts = [0, 1] limits = [2, 5] strides = [1, 1] : tensor<2x6xf32> -> tensor<2x4xf32>
// CHECK-LABEL: func.func @pad_r1
// CHECK: flow.pad %arg0 low = [0, 1] high = [0, 2] value = 0.000000e+00 : tensor<2x6xf32> -> tensor<2x9xf32>
// CHECK-LABEL: func.func @concat_r1
// CHECK: flow.concat %arg0, %arg1 axis = 1 : (tensor<2x6xf32>, tensor<2x2xf32>) -> tensor<2x8xf32>
// CHECK-LABEL: func.func @gather_r1
// CHECK: flow.gather %arg0[%arg1] axis = 0 : (tensor<10x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
// CHECK-LABEL: func.func @reshape_r1
// CHECK: flow.reshape %arg0 : tensor<2x6xf32> -> tensor<2x2x3xf32>
// CHECK-LABEL: func.func @sum_r1
// CHECK: %[[S:.*]] = flow.reduce_sum %arg0 [0] : tensor<2x6xf32> -> tensor<6xf32>
// CHECK: flow.all_reduce sum %[[S]] on @m axes = [0] : tensor<6xf32>
// CHECK-LABEL: func.func @mean_r1
// CHECK: %[[S:.*]] = flow.reduce_sum %arg0 [0] : tensor<2x6xf32> -> tensor<6xf32>
// CHECK: %[[N:.*]] = flow.constant dense<0.142857149> : tensor<f32>
// CHECK: %[[M:.*]] = flow.mul %[[S]], %[[N]]
// CHECK: flow.all_reduce sum %[[M]] on @m axes = [0] : tensor<6xf32>
flow.mesh @m [3]
func.func @slice(%x: tensor<7x6xf32> {flow.sbp = #flow.sbp<[S(0)]>}) -> (tensor<7x4xf32> {flow.sbp = #flow.sbp<[S(0)]>}) attributes {flow.mesh = @m} {
  %0 = flow.slice %x starts = [0, 1] limits = [7, 5] strides = [1, 1] {flow.operand_sbp = [#flow.sbp<[S(0)]>], flow.sbp = [#flow.sbp<[S(0)]>]} : tensor<7x6xf32> -> tensor<7x4xf32>
  return %0 : tensor<7x4xf32>
}
func.func @pad(%x: tensor<7x6xf32> {flow.sbp = #flow.sbp<[S(0)]>}) -> (tensor<7x9xf32> {flow.sbp = #flow.sbp<[S(0)]>}) attributes {flow.mesh = @m} {
  %0 = flow.pad %x low = [0, 1] high = [0, 2] value = 0.0 {flow.operand_sbp = [#flow.sbp<[S(0)]>], flow.sbp = [#flow.sbp<[S(0)]>]} : tensor<7x6xf32> -> tensor<7x9xf32>
  return %0 : tensor<7x9xf32>
}
func.func @concat(%x: tensor<7x6xf32> {flow.sbp = #flow.sbp<[S(0)]>}, %y: tensor<7x2xf32> {flow.sbp = #flow.sbp<[S(0)]>}) -> (tensor<7x8xf32> {flow.sbp = #flow.sbp<[S(0)]>}) attributes {flow.mesh = @m} {
  %0 = flow.concat %x, %y axis = 1 {flow.operand_sbp = [#flow.sbp<[S(0)]>, #flow.sbp<[S(0)]>], flow.sbp = [#flow.sbp<[S(0)]>]} : (tensor<7x6xf32>, tensor<7x2xf32>) -> tensor<7x8xf32>
  return %0 : tensor<7x8xf32>
}
func.func @gather(%t: tensor<10x4xf32>, %i: tensor<7xi64> {flow.sbp = #flow.sbp<[S(0)]>}) -> (tensor<7x4xf32> {flow.sbp = #flow.sbp<[S(0)]>}) attributes {flow.mesh = @m} {
  %0 = flow.gather %t[%i] axis = 0 {flow.operand_sbp = [#flow.sbp<[B]>, #flow.sbp<[S(0)]>], flow.sbp = [#flow.sbp<[S(0)]>]} : (tensor<10x4xf32>, tensor<7xi64>) -> tensor<7x4xf32>
  return %0 : tensor<7x4xf32>
}
func.func @reshape(%x: tensor<7x6xf32> {flow.sbp = #flow.sbp<[S(0)]>}) -> (tensor<7x2x3xf32> {flow.sbp = #flow.sbp<[S(0)]>}) attributes {flow.mesh = @m} {
  %0 = flow.reshape %x {flow.operand_sbp = [#flow.sbp<[S(0)]>], flow.sbp = [#flow.sbp<[S(0)]>]} : tensor<7x6xf32> -> tensor<7x2x3xf32>
  return %0 : tensor<7x2x3xf32>
}
func.func @sum(%x: tensor<7x6xf32> {flow.sbp = #flow.sbp<[S(0)]>}) -> tensor<6xf32> attributes {flow.mesh = @m} {
  %0 = flow.reduce_sum %x [0] {flow.operand_sbp = [#flow.sbp<[S(0)]>], flow.sbp = [#flow.sbp<[P]>]} : tensor<7x6xf32> -> tensor<6xf32>
  return %0 : tensor<6xf32>
}
func.func @mean(%x: tensor<7x6xf32> {flow.sbp = #flow.sbp<[S(0)]>}) -> tensor<6xf32> attributes {flow.mesh = @m} {
  %0 = flow.reduce_mean %x [0] {flow.operand_sbp = [#flow.sbp<[S(0)]>], flow.sbp = [#flow.sbp<[P]>]} : tensor<7x6xf32> -> tensor<6xf32>
  return %0 : tensor<6xf32>
}
