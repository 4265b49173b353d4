// RUN: flow-opt %s -split-input-file --flow-partition | FileCheck %s

// Each boxing route, on the ops' recorded SBPs (flow-propagate-sbp's
// output written by hand).

// S -> B: all-gather. Every device runs the same program.
// CHECK-LABEL: func.func @gather(%arg0: tensor<4x6xf32>) -> tensor<8x6xf32>
// CHECK-SAME: flow.partition_of = "gather", flow.ranks = array<i64: 0, 1>
// CHECK: %[[G:.*]] = flow.all_gather %arg0 on @m axes = [0] dim = 0 : tensor<4x6xf32> -> tensor<8x6xf32>
// CHECK: flow.relu %[[G]] : tensor<8x6xf32>
flow.mesh @m [2]
func.func @gather(%x: tensor<8x6xf32> {flow.sbp = #flow.sbp<[S(0)]>}) -> (tensor<8x6xf32> {flow.sbp = #flow.sbp<[B]>})
    attributes {flow.mesh = @m} {
  %0 = flow.relu %x {flow.operand_sbp = [#flow.sbp<[B]>], flow.sbp = [#flow.sbp<[B]>]} : tensor<8x6xf32>
  return %0 : tensor<8x6xf32>
}

// -----

// P -> B: all-reduce; P -> S: reduce-scatter; P(max) keeps its kind.
// CHECK-LABEL: func.func @partials
// CHECK: flow.all_reduce sum %arg0 on @m axes = [0] : tensor<8x6xf32>
// CHECK: flow.reduce_scatter sum %arg0 on @m axes = [0] dim = 1 : tensor<8x6xf32> -> tensor<8x3xf32>
// CHECK: flow.all_reduce max %arg1 on @m axes = [0] : tensor<8x6xf32>
flow.mesh @m [2]
func.func @partials(%x: tensor<8x6xf32> {flow.sbp = #flow.sbp<[P]>},
                    %y: tensor<8x6xf32> {flow.sbp = #flow.sbp<[P(max)]>})
    -> (tensor<8x6xf32> {flow.sbp = #flow.sbp<[B]>}, tensor<8x6xf32> {flow.sbp = #flow.sbp<[S(1)]>},
        tensor<8x6xf32> {flow.sbp = #flow.sbp<[B]>})
    attributes {flow.mesh = @m} {
  return %x, %x, %y : tensor<8x6xf32>, tensor<8x6xf32>, tensor<8x6xf32>
}

// -----

// S(i) -> S(j): all-to-all.
// CHECK-LABEL: func.func @swap(%arg0: tensor<4x6xf32>) -> tensor<8x3xf32>
// CHECK: flow.all_to_all %arg0 on @m axes = [0] split_dim = 1 concat_dim = 0 : tensor<4x6xf32> -> tensor<8x3xf32>
flow.mesh @m [2]
func.func @swap(%x: tensor<8x6xf32> {flow.sbp = #flow.sbp<[S(0)]>}) -> (tensor<8x6xf32> {flow.sbp = #flow.sbp<[S(1)]>})
    attributes {flow.mesh = @m} {
  return %x : tensor<8x6xf32>
}

// -----

// B -> S: each device takes its own piece, at offsets the runtime fills in
// for it; B -> P(sum): the first device keeps the value, the others zeros,
// chosen by the device's coordinate (the offset of its piece of a tensor
// shaped like the mesh axis). One program serves both devices.
// CHECK-LABEL: func.func @local(%arg0: tensor<8x6xf32>) -> (tensor<4x6xf32>, tensor<8x6xf32>)
// CHECK-SAME: flow.ranks = array<i64: 0, 1>
// (The device's offsets are read once each, at the top.)
// CHECK: %[[O:.*]] = flow.piece_offsets <[S(0)]> of [8, 6] : tensor<2xi64>
// CHECK: %[[C:.*]] = flow.piece_offsets <[S(0)]> of [2] : tensor<1xi64>
// CHECK: %[[S:.*]] = flow.dynamic_slice %arg0[%[[O]]] : (tensor<8x6xf32>, tensor<2xi64>) -> tensor<4x6xf32>
// CHECK: %[[Z0:.*]] = flow.constant dense<0> : tensor<1xi64>
// CHECK: %[[FIRST:.*]] = flow.compare eq, %[[C]], %[[Z0]]
// CHECK: %[[M:.*]] = flow.reshape %[[FIRST]] : tensor<1xi1> -> tensor<1x1xi1>
// CHECK: %[[Z:.*]] = flow.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[P:.*]] = flow.select %[[M]], %arg0, %[[Z]]
// CHECK: return %[[S]], %[[P]]
// CHECK-NOT: func.func @local_r1
flow.mesh @m [2]
func.func @local(%x: tensor<8x6xf32>)
    -> (tensor<8x6xf32> {flow.sbp = #flow.sbp<[S(0)]>}, tensor<8x6xf32> {flow.sbp = #flow.sbp<[P]>})
    attributes {flow.mesh = @m} {
  return %x, %x : tensor<8x6xf32>, tensor<8x6xf32>
}

// -----

// S -> P has no direct route: through B.
// CHECK-LABEL: func.func @split_to_partial(
// CHECK: %[[G:.*]] = flow.all_gather %arg0
// CHECK: %[[P:.*]] = flow.select %{{.*}}, %[[G]], %{{.*}}
// CHECK: return %[[P]]
flow.mesh @m [2]
func.func @split_to_partial(%x: tensor<8x6xf32> {flow.sbp = #flow.sbp<[S(0)]>})
    -> (tensor<8x6xf32> {flow.sbp = #flow.sbp<[P]>}) attributes {flow.mesh = @m} {
  return %x : tensor<8x6xf32>
}

// -----

// Uneven splits: 5 rows over 4 devices are 2, 1, 1 and 1 rows.
// CHECK-LABEL: func.func @uneven_r0(%arg0: tensor<2x3xf32>) -> tensor<5x3xf32>
// CHECK: flow.all_gather %{{.*}} on @m4 axes = [0] dim = 0 : tensor<2x3xf32> -> tensor<5x3xf32>
// CHECK-LABEL: func.func @uneven_r1(%arg0: tensor<1x3xf32>) -> tensor<5x3xf32>
// CHECK-SAME: flow.ranks = array<i64: 1, 2, 3>
// CHECK: flow.all_gather %{{.*}} on @m4 axes = [0] dim = 0 : tensor<1x3xf32> -> tensor<5x3xf32>
flow.mesh @m4 [4]
func.func @uneven(%x: tensor<5x3xf32> {flow.sbp = #flow.sbp<[S(0)]>}) -> (tensor<5x3xf32> {flow.sbp = #flow.sbp<[B]>})
    attributes {flow.mesh = @m4} {
  %0 = flow.exp %x {flow.operand_sbp = [#flow.sbp<[S(0)]>], flow.sbp = [#flow.sbp<[S(0)]>]} : tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
}

// -----

// A mean over a split axis: the device's sum over the global count, then
// the partial sums are all-reduced.
// CHECK-LABEL: func.func @mean
// CHECK: %[[S:.*]] = flow.reduce_sum %arg0 [1] : tensor<4x4xf32> -> tensor<4xf32>
// CHECK: %[[C:.*]] = flow.constant dense<1.250000e-01> : tensor<f32>
// CHECK: %[[M:.*]] = flow.mul %[[S]], %[[C]]
// CHECK: flow.all_reduce sum %[[M]] on @m axes = [0] : tensor<4xf32>
flow.mesh @m [2]
func.func @mean(%x: tensor<4x8xf32> {flow.sbp = #flow.sbp<[S(1)]>}) -> (tensor<4xf32> {flow.sbp = #flow.sbp<[B]>})
    attributes {flow.mesh = @m} {
  %0 = flow.reduce_mean %x [1] {flow.operand_sbp = [#flow.sbp<[S(1)]>], flow.sbp = [#flow.sbp<[P]>]} : tensor<4x8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A 2-D mesh: collectives run over one mesh axis; splits over both axes
// are undone innermost first.
// CHECK-LABEL: func.func @two_d(%arg0: tensor<2x3xf32>) -> tensor<8x3xf32>
// CHECK: %[[A:.*]] = flow.all_gather %arg0 on @m2 axes = [1] dim = 0 : tensor<2x3xf32> -> tensor<4x3xf32>
// CHECK: flow.all_gather %[[A]] on @m2 axes = [0] dim = 0 : tensor<4x3xf32> -> tensor<8x3xf32>
flow.mesh @m2 [2, 2]
func.func @two_d(%x: tensor<8x3xf32> {flow.sbp = #flow.sbp<[S(0), S(0)]>}) -> (tensor<8x3xf32> {flow.sbp = #flow.sbp<[B, B]>})
    attributes {flow.mesh = @m2} {
  return %x : tensor<8x3xf32>
}

// -----

// Data parallel on one axis, tensor parallel on the other: the partial
// sums are reduced over the tensor-parallel axis only.
// CHECK-LABEL: func.func @dp_tp(%arg0: tensor<4x4xf32>, %arg1: tensor<4x6xf32>) -> tensor<4x6xf32>
// CHECK: %[[Y:.*]] = flow.matmul %arg0, %arg1 : (tensor<4x4xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
// CHECK: flow.all_reduce sum %[[Y]] on @m2 axes = [1] : tensor<4x6xf32>
flow.mesh @m2 [2, 2]
func.func @dp_tp(%x: tensor<8x8xf32> {flow.sbp = #flow.sbp<[S(0), S(1)]>},
                 %w: tensor<8x6xf32> {flow.sbp = #flow.sbp<[B, S(0)]>})
    -> (tensor<8x6xf32> {flow.sbp = #flow.sbp<[S(0), B]>}) attributes {flow.mesh = @m2} {
  %0 = flow.matmul %x, %w {flow.operand_sbp = [#flow.sbp<[S(0), S(1)]>, #flow.sbp<[B, S(0)]>], flow.sbp = [#flow.sbp<[S(0), P]>]}
      : (tensor<8x8xf32>, tensor<8x6xf32>) -> tensor<8x6xf32>
  return %0 : tensor<8x6xf32>
}

// -----

// Two consumers needing the same boxing of one value: one all-gather, its
// result read by both.
// CHECK-LABEL: func.func @shared_boxing
// CHECK: %[[G:.*]] = flow.all_gather %arg0
// CHECK-NOT: flow.all_gather
// CHECK: flow.relu %[[G]]
// CHECK: flow.exp %[[G]]
flow.mesh @m [2]
func.func @shared_boxing(%x: tensor<8x6xf32> {flow.sbp = #flow.sbp<[S(0)]>})
    -> (tensor<8x6xf32> {flow.sbp = #flow.sbp<[B]>}, tensor<8x6xf32> {flow.sbp = #flow.sbp<[B]>})
    attributes {flow.mesh = @m} {
  %0 = flow.relu %x {flow.operand_sbp = [#flow.sbp<[B]>], flow.sbp = [#flow.sbp<[B]>]} : tensor<8x6xf32>
  %1 = flow.exp %x {flow.operand_sbp = [#flow.sbp<[B]>], flow.sbp = [#flow.sbp<[B]>]} : tensor<8x6xf32>
  return %0, %1 : tensor<8x6xf32>, tensor<8x6xf32>
}

// -----

// Splitting a dimension on an outer mesh axis while an inner one already
// splits it: the inner split is undone first and remade after, so the
// pieces nest in mesh order (device (a, b) holds rows 4a + 2b, +2: row 2b
// of its piece under [S(0), B]).
// CHECK-LABEL: func.func @nested(%arg0: tensor<4x3xf32>) -> tensor<2x3xf32>
// CHECK-SAME: flow.ranks = array<i64: 0, 1, 2, 3>
// CHECK: %[[O:.*]] = flow.piece_offsets <[S(0), S(0)]> within <[S(0), B]> of [8, 3] : tensor<2xi64>
// CHECK: %[[G:.*]] = flow.all_gather %arg0 on @m2 axes = [1] dim = 0 : tensor<4x3xf32> -> tensor<8x3xf32>
// CHECK: %[[R:.*]] = flow.reduce_scatter sum %[[G]] on @m2 axes = [0] dim = 0 : tensor<8x3xf32> -> tensor<4x3xf32>
// CHECK: flow.dynamic_slice %[[R]][%[[O]]] : (tensor<4x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
flow.mesh @m2 [2, 2]
func.func @nested(%x: tensor<8x3xf32> {flow.sbp = #flow.sbp<[P, S(0)]>})
    -> (tensor<8x3xf32> {flow.sbp = #flow.sbp<[S(0), S(0)]>}) attributes {flow.mesh = @m2} {
  return %x : tensor<8x3xf32>
}

// -----

// A training step's state names go with the pieces, so each device keeps
// and updates its own (flow-tie-state, the executable's state table).
// CHECK-LABEL: func.func @state(%arg0: tensor<4x4xf32> {flow.state = "w"}, %arg1: tensor<4xf32> {flow.state = "w.momentum_buffer", flow.state_init = "zeros"}, %arg2: tensor<f32> {flow.learning_rate})
// CHECK-SAME: -> (tensor<4x4xf32> {flow.state = "w"}, tensor<4xf32> {flow.state = "w.momentum_buffer"})
flow.mesh @m [2]
func.func @state(%w: tensor<8x4xf32> {flow.sbp = #flow.sbp<[S(0)]>, flow.state = "w"},
                 %m: tensor<8xf32> {flow.sbp = #flow.sbp<[S(0)]>, flow.state = "w.momentum_buffer", flow.state_init = "zeros"},
                 %lr: tensor<f32> {flow.learning_rate})
    -> (tensor<8x4xf32> {flow.sbp = #flow.sbp<[S(0)]>, flow.state = "w"}, tensor<8xf32> {flow.sbp = #flow.sbp<[S(0)]>, flow.state = "w.momentum_buffer"})
    attributes {flow.mesh = @m} {
  return %w, %m : tensor<8x4xf32>, tensor<8xf32>
}

// -----

// [B, S(1)] -> [S(0), S(0)] on 2x2: the outer axis makes a split of the
// dimension the inner axis will split too, so the inner split is undone
// (gathered), not moved first; then both are made, outer first.
// CHECK-LABEL: func.func @nested_make(%arg0: tensor<8x3xf32>) -> tensor<2x6xf32>
// CHECK: %[[O1:.*]] = flow.piece_offsets <[S(0), B]> of [8, 6]
// CHECK: %[[O2:.*]] = flow.piece_offsets <[S(0), S(0)]> within <[S(0), B]> of [8, 6]
// CHECK: %[[G:.*]] = flow.all_gather %arg0 on @m axes = [1] dim = 1 : tensor<8x3xf32> -> tensor<8x6xf32>
// CHECK: %[[O:.*]] = flow.dynamic_slice %[[G]][%[[O1]]] : (tensor<8x6xf32>, tensor<2xi64>) -> tensor<4x6xf32>
// CHECK: flow.dynamic_slice %[[O]][%[[O2]]] : (tensor<4x6xf32>, tensor<2xi64>) -> tensor<2x6xf32>
flow.mesh @m [2, 2]
func.func @nested_make(%x: tensor<8x6xf32> {flow.sbp = #flow.sbp<[B, S(1)]>})
    -> (tensor<8x6xf32> {flow.sbp = #flow.sbp<[S(0), S(0)]>}) attributes {flow.mesh = @m} {
  return %x : tensor<8x6xf32>
}

// -----

// A weight placed split: each device reads its piece of the parameter
// (bound once at load, from its coordinates) instead of slicing the whole
// weight every call, and the whole weight is no longer read. Both devices
// run one program.
// CHECK-LABEL: func.func @weight_piece(
// CHECK-SAME: flow.ranks = array<i64: 0, 1>
// CHECK-NOT: flow.parameter "w" :
// CHECK: flow.parameter "w" sbp <[S(1)]> of [8, 6] : tensor<8x3xf32>
// CHECK-NOT: flow.slice
// CHECK-NOT: func.func @weight_piece_r1
module attributes {flow.parameters = "w.safetensors"} {
flow.mesh @m [2]
func.func @weight_piece(%x: tensor<4x8xf32>) -> (tensor<4x6xf32> {flow.sbp = #flow.sbp<[S(1)]>})
    attributes {flow.mesh = @m} {
  %w = flow.parameter "w" {flow.operand_sbp = [], flow.sbp = [#flow.sbp<[B]>]} : tensor<8x6xf32>
  %y = flow.matmul %x, %w {flow.operand_sbp = [#flow.sbp<[B]>, #flow.sbp<[S(1)]>], flow.sbp = [#flow.sbp<[S(1)]>]}
      : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}
}

// -----

// A block of a weight (the k of a fused q/k/v projection: a slice of the
// parameter folds into one) split by columns: the SBP cuts the block, and
// both devices run one program.
// CHECK-LABEL: func.func @block_piece(
// CHECK-SAME: flow.ranks = array<i64: 0, 1>
// CHECK: flow.parameter "qkv" piece [0, 8] of [8, 24] sbp <[S(1)]> of [8, 8] : tensor<8x4xf32>
// CHECK-NOT: func.func @block_piece_r1
module attributes {flow.parameters = "w.safetensors"} {
flow.mesh @m [2]
func.func @block_piece(%x: tensor<4x8xf32>) -> (tensor<4x8xf32> {flow.sbp = #flow.sbp<[S(1)]>})
    attributes {flow.mesh = @m} {
  %w = flow.parameter "qkv" piece [0, 8] of [8, 24] {flow.operand_sbp = [], flow.sbp = [#flow.sbp<[B]>]} : tensor<8x8xf32>
  %y = flow.matmul %x, %w {flow.operand_sbp = [#flow.sbp<[B]>, #flow.sbp<[S(1)]>], flow.sbp = [#flow.sbp<[S(1)]>]}
      : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
}

// -----

// Uneven pieces of a weight (5 columns over 2 devices: 3 and 2) differ in
// shape, so each device keeps a program, both naming the piece by SBP.
// CHECK-LABEL: func.func @uneven_weight_piece_r0
// CHECK: flow.parameter "w" sbp <[S(1)]> of [8, 5] : tensor<8x3xf32>
// CHECK-LABEL: func.func @uneven_weight_piece_r1
// CHECK: flow.parameter "w" sbp <[S(1)]> of [8, 5] : tensor<8x2xf32>
module attributes {flow.parameters = "w.safetensors"} {
flow.mesh @m [2]
func.func @uneven_weight_piece(%x: tensor<4x8xf32>) -> (tensor<4x5xf32> {flow.sbp = #flow.sbp<[S(1)]>})
    attributes {flow.mesh = @m} {
  %w = flow.parameter "w" {flow.operand_sbp = [], flow.sbp = [#flow.sbp<[B]>]} : tensor<8x5xf32>
  %y = flow.matmul %x, %w {flow.operand_sbp = [#flow.sbp<[B]>, #flow.sbp<[S(1)]>], flow.sbp = [#flow.sbp<[S(1)]>]}
      : (tensor<4x8xf32>, tensor<8x5xf32>) -> tensor<4x5xf32>
  return %y : tensor<4x5xf32>
}
}
