// RUN: flow-opt %s -split-input-file --flow-propagate-sbp | FileCheck %s
// RUN: flow-opt %s -split-input-file --flow-propagate-sbp=search=greedy | FileCheck %s --check-prefix=GREEDY

// The refinement of greedy placement: an op moves to another signature
// when that lowers the boxing of its operands and results as their users
// want them.

// A Megatron MLP with a residual and a layer norm after it. Greedy
// placement sees only the norm's operand: reduce-scattering the partial
// sums is cheaper than all-reducing them, so it normalizes pieces and the
// next column-parallel product all-gathers them (the same bytes as an
// all-reduce, in two calls). Seen with its user, the norm takes the whole
// rows: one all-reduce, of the same bytes before or after the residual is
// added (to the partial sums on one device).
// CHECK-LABEL: func.func @norm_after_row_parallel
// CHECK: flow.matmul {{.*}} flow.sbp = [#flow.sbp<[P]>]
// CHECK: flow.add {{.*}} {flow.operand_sbp = [#flow.sbp<{{\[}}[[ADD:P|B]]{{\]}}>, #flow.sbp<{{\[}}[[ADD]]{{\]}}>], flow.sbp = [#flow.sbp<{{\[}}[[ADD]]{{\]}}>]}
// CHECK: flow.layer_norm {{.*}} {flow.operand_sbp = [#flow.sbp<[B]>], flow.sbp = [#flow.sbp<[B]>]}
// CHECK: flow.matmul {{.*}} {flow.operand_sbp = [#flow.sbp<[B]>, #flow.sbp<[S(1)]>], flow.sbp = [#flow.sbp<[S(1)]>]}
// GREEDY-LABEL: func.func @norm_after_row_parallel
// GREEDY: flow.add {{.*}} flow.sbp = [#flow.sbp<[P]>]
// GREEDY: flow.layer_norm {{.*}} {flow.operand_sbp = [#flow.sbp<[S(0)]>], flow.sbp = [#flow.sbp<[S(0)]>]}
// GREEDY: flow.matmul {{.*}} {flow.operand_sbp = [#flow.sbp<[B]>, #flow.sbp<[S(1)]>], flow.sbp = [#flow.sbp<[S(1)]>]}
flow.mesh @tp [2]
func.func @norm_after_row_parallel(
    %x: tensor<64x32xf32>,
    %w1: tensor<32x128xf32> {flow.sbp = #flow.sbp<[S(1)]>},
    %w2: tensor<128x32xf32> {flow.sbp = #flow.sbp<[S(0)]>},
    %w3: tensor<32x128xf32> {flow.sbp = #flow.sbp<[S(1)]>})
    -> (tensor<64x128xf32> {flow.sbp = #flow.sbp<[S(1)]>})
    attributes {flow.mesh = @tp} {
  %0 = flow.matmul %x, %w1 : (tensor<64x32xf32>, tensor<32x128xf32>) -> tensor<64x128xf32>
  %1 = flow.gelu %0 : tensor<64x128xf32>
  %2 = flow.matmul %1, %w2 : (tensor<64x128xf32>, tensor<128x32xf32>) -> tensor<64x32xf32>
  %3 = flow.add %2, %x : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<64x32xf32>
  %4 = flow.layer_norm %3 axis = 1 epsilon = 1.0e-5 : (tensor<64x32xf32>) -> tensor<64x32xf32>
  %5 = flow.matmul %4, %w3 : (tensor<64x32xf32>, tensor<32x128xf32>) -> tensor<64x128xf32>
  return %5 : tensor<64x128xf32>
}

// -----

// Only the result is pinned split: greedy placement keeps every op whole
// (each device does all the work) and slices at the end; the refinement
// pulls the split back to the input, where slicing costs nothing, and
// nothing moves between devices.
// CHECK-LABEL: func.func @result_pinned
// CHECK: flow.matmul {{.*}} {flow.operand_sbp = [#flow.sbp<[S(0)]>, #flow.sbp<[B]>], flow.sbp = [#flow.sbp<[S(0)]>]}
// CHECK: flow.relu {{.*}} {flow.operand_sbp = [#flow.sbp<[S(0)]>], flow.sbp = [#flow.sbp<[S(0)]>]}
// CHECK: flow.matmul {{.*}} {flow.operand_sbp = [#flow.sbp<[S(0)]>, #flow.sbp<[B]>], flow.sbp = [#flow.sbp<[S(0)]>]}
// CHECK: flow.exp {{.*}} {flow.operand_sbp = [#flow.sbp<[S(0)]>], flow.sbp = [#flow.sbp<[S(0)]>]}
// GREEDY-LABEL: func.func @result_pinned
// GREEDY: flow.matmul {{.*}} flow.sbp = [#flow.sbp<[B]>]
// GREEDY: flow.exp {{.*}} {flow.operand_sbp = [#flow.sbp<[B]>], flow.sbp = [#flow.sbp<[B]>]}
flow.mesh @dp [4]
func.func @result_pinned(%x: tensor<64x16xf32>, %w1: tensor<16x32xf32>,
                         %w2: tensor<32x8xf32>)
    -> (tensor<64x8xf32> {flow.sbp = #flow.sbp<[S(0)]>})
    attributes {flow.mesh = @dp} {
  %0 = flow.matmul %x, %w1 : (tensor<64x16xf32>, tensor<16x32xf32>) -> tensor<64x32xf32>
  %1 = flow.relu %0 : tensor<64x32xf32>
  %2 = flow.matmul %1, %w2 : (tensor<64x32xf32>, tensor<32x8xf32>) -> tensor<64x8xf32>
  %3 = flow.exp %2 : tensor<64x8xf32>
  return %3 : tensor<64x8xf32>
}

// -----

// A pinned signature stays where it is written, and a value used twice in
// the same layout is boxed once: the two users of the partial sums want
// them whole, so one all-reduce serves both (the refinement prices it
// once and keeps it).
// CHECK-LABEL: func.func @pinned_and_shared
// CHECK: flow.relu {{.*}} {flow.operand_sbp = [#flow.sbp<[S(1)]>], flow.sbp = [#flow.sbp<[S(1)]>]}
// CHECK: flow.exp {{.*}} {flow.operand_sbp = [#flow.sbp<[B]>], flow.sbp = [#flow.sbp<[B]>]}
// CHECK: flow.tanh {{.*}} {flow.operand_sbp = [#flow.sbp<[B]>], flow.sbp = [#flow.sbp<[B]>]}
// GREEDY-LABEL: func.func @pinned_and_shared
// GREEDY: flow.exp {{.*}} {flow.operand_sbp = [#flow.sbp<[S(0)]>], flow.sbp = [#flow.sbp<[S(0)]>]}
flow.mesh @m [2]
func.func @pinned_and_shared(%x: tensor<8x16xf32>,
                             %w: tensor<16x16xf32> {flow.sbp = #flow.sbp<[S(0)]>})
    -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>)
    attributes {flow.mesh = @m} {
  %0 = flow.relu %x {flow.operand_sbp = [#flow.sbp<[S(1)]>], flow.sbp = [#flow.sbp<[S(1)]>]} : tensor<8x16xf32>
  %1 = flow.matmul %0, %w : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %2 = flow.exp %1 : tensor<8x16xf32>
  %3 = flow.tanh %1 : tensor<8x16xf32>
  return %1, %2, %3 : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
}

// -----

// A norm and the reshape after it: moving either alone costs more (the
// norm alone would be sliced again for the reshape, the reshape alone
// gathers what its user gathered), so the norm moves with its user: one
// all-reduce of the partial sums, where greedy placement reduce-scatters
// them and all-gathers the reshaped rows.
// CHECK-LABEL: func.func @norm_then_reshape
// CHECK: flow.layer_norm {{.*}} {flow.operand_sbp = [#flow.sbp<[B]>], flow.sbp = [#flow.sbp<[B]>]}
// CHECK: flow.reshape {{.*}} {flow.operand_sbp = [#flow.sbp<[B]>], flow.sbp = [#flow.sbp<[B]>]}
// CHECK: flow.matmul {{.*}} {flow.operand_sbp = [#flow.sbp<[B]>, #flow.sbp<[S(1)]>], flow.sbp = [#flow.sbp<[S(1)]>]}
// GREEDY-LABEL: func.func @norm_then_reshape
// GREEDY: flow.layer_norm {{.*}} {flow.operand_sbp = [#flow.sbp<[S(0)]>], flow.sbp = [#flow.sbp<[S(0)]>]}
// GREEDY: flow.reshape {{.*}} {flow.operand_sbp = [#flow.sbp<[S(0)]>], flow.sbp = [#flow.sbp<[S(0)]>]}
flow.mesh @tp [2]
func.func @norm_then_reshape(
    %h: tensor<4x8x32xf32>,
    %w1: tensor<32x32xf32> {flow.sbp = #flow.sbp<[S(0)]>},
    %w2: tensor<32x64xf32> {flow.sbp = #flow.sbp<[S(1)]>})
    -> (tensor<32x64xf32> {flow.sbp = #flow.sbp<[S(1)]>})
    attributes {flow.mesh = @tp} {
  %hs = flow.annotate %h as #flow.sbp<[S(2)]> on @tp : tensor<4x8x32xf32>
  %0 = flow.matmul %hs, %w1 : (tensor<4x8x32xf32>, tensor<32x32xf32>) -> tensor<4x8x32xf32>
  %1 = flow.layer_norm %0 axis = 2 epsilon = 1.0e-5 : (tensor<4x8x32xf32>) -> tensor<4x8x32xf32>
  %2 = flow.reshape %1 : tensor<4x8x32xf32> -> tensor<32x32xf32>
  %3 = flow.matmul %2, %w2 : (tensor<32x32xf32>, tensor<32x64xf32>) -> tensor<32x64xf32>
  return %3 : tensor<32x64xf32>
}

// -----

// A weight's gradient from a split batch: all-reducing the partial
// products moves 2 x 7 MB; gathering both activations would move less
// (3 MB and 9 MB gathered, half of it per device) but computes the whole
// 3.6 GFLOP product on every device. The refinement weighs compute against
// bytes and keeps the split product. With 32 rows the gathered
// activations are tiny and the doubled product cheap: it gathers them.
// CHECK-LABEL: func.func @weight_gradient
// CHECK: flow.matmul {{.*}} {flow.operand_sbp = [#flow.sbp<[S(0)]>, #flow.sbp<[S(0)]>], flow.sbp = [#flow.sbp<[P]>]
// CHECK-LABEL: func.func @weight_gradient_small_batch
// CHECK: flow.matmul {{.*}} {flow.operand_sbp = [#flow.sbp<[B]>, #flow.sbp<[B]>], flow.sbp = [#flow.sbp<[B]>]
flow.mesh @dp [2]
func.func @weight_gradient(%x: tensor<1024x768xf32> {flow.sbp = #flow.sbp<[S(0)]>},
                           %dy: tensor<1024x2304xf32> {flow.sbp = #flow.sbp<[S(0)]>})
    -> tensor<768x2304xf32> attributes {flow.mesh = @dp} {
  %0 = flow.matmul %x, %dy {transpose_lhs} : (tensor<1024x768xf32>, tensor<1024x2304xf32>) -> tensor<768x2304xf32>
  return %0 : tensor<768x2304xf32>
}
func.func @weight_gradient_small_batch(%x: tensor<32x768xf32> {flow.sbp = #flow.sbp<[S(0)]>},
                                       %dy: tensor<32x2304xf32> {flow.sbp = #flow.sbp<[S(0)]>})
    -> tensor<768x2304xf32> attributes {flow.mesh = @dp} {
  %0 = flow.matmul %x, %dy {transpose_lhs} : (tensor<32x768xf32>, tensor<32x2304xf32>) -> tensor<768x2304xf32>
  return %0 : tensor<768x2304xf32>
}
