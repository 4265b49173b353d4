// flow-apply-optimizer: the update each optimizer builds, and the state it
// adds.
// RUN: flow-opt %s -split-input-file --flow-autodiff --flow-apply-optimizer --canonicalize | FileCheck %s

// SGD with momentum: the learning rate and the momentum buffer become
// arguments; the parameter's gradient result becomes its next value, and
// the buffer's next value follows it. An unnamed parameter is named argN.
// CHECK-LABEL: func.func @sgd
// CHECK-SAME: (%{{.*}}: tensor<4x3xf32>, %[[W:.*]]: tensor<3x2xf32> {flow.state = "arg1"}, %[[LR:.*]]: tensor<f32> {flow.learning_rate},
// CHECK-SAME: %[[BUF:.*]]: tensor<3x2xf32> {flow.state = "arg1.momentum_buffer", flow.state_init = "zeros"})
// CHECK-SAME: -> (tensor<f32>, tensor<3x2xf32> {flow.state = "arg1"}, tensor<3x2xf32> {flow.state = "arg1.momentum_buffer"})
// CHECK: %[[G:.*]] = flow.matmul %{{.*}}, %{{.*}} {transpose_lhs}
// CHECK: %[[M:.*]] = flow.mul %[[BUF]], %{{.*}} : (tensor<3x2xf32>, tensor<f32>)
// CHECK: %[[NEWBUF:.*]] = flow.add %[[M]], %[[G]]
// CHECK: %[[STEP:.*]] = flow.mul %[[LR]], %[[NEWBUF]]
// CHECK: %[[NEWW:.*]] = flow.sub %[[W]], %[[STEP]]
// CHECK: return %{{.*}}, %[[NEWW]], %[[NEWBUF]]
func.func @sgd(%x: tensor<4x3xf32>, %w: tensor<3x2xf32> {flow.requires_grad}) -> tensor<f32>
    attributes {flow.optimizer = {kind = "sgd", momentum = 0.9}} {
  %y = flow.matmul %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %l = flow.reduce_sum %y [0, 1] : tensor<4x2xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// AdamW: the step count (i64, shared) and two moments per parameter, named
// after the parameter's state.
// CHECK-LABEL: func.func @adamw
// CHECK-SAME: %{{.*}}: tensor<3xf32> {flow.state = "b"}, %{{.*}}: tensor<f32> {flow.learning_rate},
// CHECK-SAME: %[[T:.*]]: tensor<i64> {flow.state = "optimizer.step", flow.state_init = "zeros"},
// CHECK-SAME: %{{.*}}: tensor<3xf32> {flow.state = "b.exp_avg", flow.state_init = "zeros"},
// CHECK-SAME: %{{.*}}: tensor<3xf32> {flow.state = "b.exp_avg_sq", flow.state_init = "zeros"})
// CHECK-SAME: -> (tensor<f32>, tensor<3xf32> {flow.state = "b"}, tensor<i64> {flow.state = "optimizer.step"},
// CHECK-SAME: tensor<3xf32> {flow.state = "b.exp_avg"}, tensor<3xf32> {flow.state = "b.exp_avg_sq"})
// CHECK: %[[T1:.*]] = flow.add %[[T]], %{{.*}} : (tensor<i64>, tensor<i64>) -> tensor<i64>
// CHECK: flow.cast %[[T1]] : tensor<i64> to tensor<f32>
// CHECK: flow.pow
// CHECK: flow.sqrt
func.func @adamw(%b: tensor<3xf32> {flow.requires_grad, flow.state = "b"}) -> tensor<f32>
    attributes {flow.optimizer = {kind = "adamw", max_grad_norm = 1.0}} {
  %e = flow.exp %b : tensor<3xf32>
  %l = flow.reduce_sum %e [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// skip_nonfinite: every state's next value is its old one unless the loss
// is finite (loss - loss == 0 is false for NaN and infinities).
// CHECK-LABEL: func.func @guarded
// CHECK-SAME: (%[[W:[^:]*]]: tensor<3xf32> {flow.state = "w"}, %{{[^:]*}}: tensor<f32> {flow.learning_rate}, %[[BUF:[^:]*]]: tensor<3xf32>
// CHECK: %[[L:.*]] = flow.reduce_sum
// CHECK: %[[D:.*]] = flow.sub %[[L]], %[[L]] : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK: %[[OK:.*]] = flow.compare eq, %[[D]], %{{.*}} : (tensor<f32>, tensor<f32>) -> tensor<i1>
// CHECK-DAG: %[[NW:.*]] = flow.select %[[OK]], %{{.*}}, %[[W]]
// CHECK-DAG: %[[NB:.*]] = flow.select %[[OK]], %{{.*}}, %[[BUF]]
// CHECK: return %[[L]], %[[NW]], %[[NB]]
func.func @guarded(%w: tensor<3xf32> {flow.requires_grad, flow.state = "w"}) -> tensor<f32>
    attributes {flow.optimizer = {kind = "sgd", momentum = 0.9, skip_nonfinite = true}} {
  %l = flow.reduce_sum %w [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// State the step updates itself (a generator's offset) is kept too when
// the loss is not finite.
// CHECK-LABEL: func.func @own_state
// CHECK-SAME: %[[OFF:[^:]*]]: tensor<i64> {flow.state = "rng.offset"}
// CHECK: %[[OK:.*]] = flow.compare eq
// CHECK-DAG: %[[NW:.*]] = flow.select %[[OK]], %{{.*}}, %{{.*}} : (tensor<i1>, tensor<3xf32>, tensor<3xf32>)
// CHECK-DAG: %[[NO:.*]] = flow.select %[[OK]], %{{.*}}, %[[OFF]] : (tensor<i1>, tensor<i64>, tensor<i64>)
// CHECK: return %{{.*}}, %[[NO]], %[[NW]]
func.func @own_state(%w: tensor<3xf32> {flow.requires_grad, flow.state = "w"},
                     %offset: tensor<i64> {flow.state = "rng.offset"})
    -> (tensor<f32>, tensor<i64> {flow.state = "rng.offset"})
    attributes {flow.optimizer = {kind = "sgd", skip_nonfinite = true}} {
  %l = flow.reduce_sum %w [0] : tensor<3xf32> -> tensor<f32>
  %one = flow.constant dense<1> : tensor<i64>
  %next = flow.add %offset, %one : (tensor<i64>, tensor<i64>) -> tensor<i64>
  return %l, %next : tensor<f32>, tensor<i64>
}

// -----

// On a mesh a moment is laid out as its parameter (each device updates the
// piece it keeps); a parameter with no SBP is replicated, and so are its
// moments.
// CHECK-LABEL: func.func @moments_follow
// CHECK-SAME: tensor<8x6xf32> {flow.sbp = #flow.sbp<[B, S(0)]>, flow.state = "w.exp_avg", flow.state_init = "zeros"}
// CHECK-SAME: tensor<8x6xf32> {flow.sbp = #flow.sbp<[B, S(0)]>, flow.state = "w.exp_avg_sq", flow.state_init = "zeros"}
// CHECK-SAME: tensor<1xf32> {flow.sbp = #flow.sbp<[B, B]>, flow.state = "c.exp_avg", flow.state_init = "zeros"}
// CHECK-SAME: -> (tensor<f32>, tensor<8x6xf32> {flow.state = "w"}, tensor<1xf32> {flow.state = "c"}, tensor<i64> {flow.state = "optimizer.step"}, tensor<8x6xf32> {flow.sbp = #flow.sbp<[B, S(0)]>, flow.state = "w.exp_avg"}
flow.mesh @m [2, 2]
func.func @moments_follow(%w: tensor<8x6xf32> {flow.requires_grad, flow.state = "w", flow.sbp = #flow.sbp<[B, S(0)]>},
                          %c: tensor<1xf32> {flow.requires_grad, flow.state = "c"})
    -> tensor<f32> attributes {flow.mesh = @m, flow.optimizer = {kind = "adamw"}} {
  %s = flow.reduce_sum %w [0, 1] : tensor<8x6xf32> -> tensor<f32>
  %t = flow.reduce_sum %c [0] : tensor<1xf32> -> tensor<f32>
  %l = flow.add %s, %t : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// ZeRO on a 2-D mesh: a moment is also split over the first axis, along
// the first dimension the other axis does not split (rows are split on
// axis 1, so columns on axis 0); one with fewer elements than the axis has
// devices stays as its parameter.
// CHECK-LABEL: func.func @zero_2d
// CHECK-SAME: tensor<8x6xf32> {flow.sbp = #flow.sbp<[S(1), S(0)]>, flow.state = "w.momentum_buffer", flow.state_init = "zeros"}
// CHECK-SAME: tensor<1xf32> {flow.sbp = #flow.sbp<[B, B]>, flow.state = "c.momentum_buffer", flow.state_init = "zeros"}
// CHECK-SAME: tensor<8x6xf32> {flow.sbp = #flow.sbp<[S(1), S(0)]>, flow.state = "w.momentum_buffer"}
// The gradients are laid out as their updates run, before any update op
// reads them (each is then reduced once).
// CHECK-DAG: flow.annotate %{{.*}} as #flow.sbp<[S(1), S(0)]> on @m : tensor<8x6xf32>
// CHECK-DAG: flow.annotate %{{.*}} as #flow.sbp<[B, B]> on @m : tensor<1xf32>
flow.mesh @m [2, 2]
func.func @zero_2d(%w: tensor<8x6xf32> {flow.requires_grad, flow.state = "w", flow.sbp = #flow.sbp<[B, S(0)]>},
                   %c: tensor<1xf32> {flow.requires_grad, flow.state = "c"})
    -> tensor<f32> attributes {flow.mesh = @m, flow.optimizer = {kind = "sgd", momentum = 0.9, shard_state = true}} {
  %s = flow.reduce_sum %w [0, 1] : tensor<8x6xf32> -> tensor<f32>
  %t = flow.reduce_sum %c [0] : tensor<1xf32> -> tensor<f32>
  %l = flow.add %s, %t : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %l : tensor<f32>
}
