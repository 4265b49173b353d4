// Auto-parallel: flow-propagate-sbp with free arguments and the exact search
// (flow-compile --auto-parallel), on mesh descriptions where the right plan
// is known. The place pipeline runs autodiff and the optimizer first, so a
// training step's parameters, gradients and updates are placed together.
// RUN: flow-opt %s -split-input-file --flow-place-pipeline="auto-parallel=1 mesh-spec=h100-nvlink" | FileCheck %s

// A huge batch and small weights: data parallel. Each step all-reduces
// two 4 MiB gradients (58 us on NVLink); splitting the weights instead
// would all-reduce the 256 MiB activation before its square. The report
// carries plain data parallel and tensor parallel (inputs whole, weights
// split) by the same measure.
// CHECK-LABEL: func.func @huge_batch
// CHECK-SAME: %arg0: tensor<65536x1024xf32> {flow.sbp = #flow.sbp<[S(0)]>}
// CHECK-SAME: %arg1: tensor<1024x1024xf32> {flow.sbp = #flow.sbp<[B]>, flow.state = "arg1"}
// CHECK-SAME: %arg2: tensor<1024x1024xf32> {flow.sbp = #flow.sbp<[B]>, flow.state = "arg2"}
// CHECK-SAME: flow.modeled_plan = {all_reduce_seconds = 5.79{{[0-9]*}}E-5 : f64, compute_seconds = {{.*}}, data_parallel = {all_reduce_seconds = 5.79{{[0-9]*}}E-5 : f64,
// CHECK-SAME: search = "exact", tensor_parallel = {all_gather_seconds
flow.mesh @m [4]
func.func @huge_batch(%x: tensor<65536x1024xf32>, %w1: tensor<1024x1024xf32> {flow.requires_grad},
                      %w2: tensor<1024x1024xf32> {flow.requires_grad}) -> tensor<f32>
    attributes {flow.mesh = @m, flow.optimizer = {kind = "sgd"}} {
  %h = flow.matmul %x, %w1 : (tensor<65536x1024xf32>, tensor<1024x1024xf32>) -> tensor<65536x1024xf32>
  %r = flow.relu %h : tensor<65536x1024xf32>
  %y = flow.matmul %r, %w2 : (tensor<65536x1024xf32>, tensor<1024x1024xf32>) -> tensor<65536x1024xf32>
  %q = flow.mul %y, %y : (tensor<65536x1024xf32>, tensor<65536x1024xf32>) -> tensor<65536x1024xf32>
  %l = flow.reduce_sum %q [0, 1] : tensor<65536x1024xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Huge weights and a tiny batch: tensor parallel. Data parallel would
// all-reduce two 256 MiB gradients; split weights move 8-row activations.
// Each device keeps a quarter of each weight (336 MB against 1.34 GB).
// CHECK-LABEL: func.func @huge_weights
// CHECK-SAME: %arg0: tensor<8x8192xf32> {flow.sbp = #flow.sbp<[B]>}
// CHECK-SAME: %arg1: tensor<8192x8192xf32> {flow.sbp = #flow.sbp<[S({{[01]}})]>, flow.state = "arg1"}
// CHECK-SAME: %arg2: tensor<8192x8192xf32> {flow.sbp = #flow.sbp<[S({{[01]}})]>, flow.state = "arg2"}
// CHECK-SAME: data_parallel = {{{.*}}memory_bytes = 1342242824 : i64}, memory_bytes = 335806472 : i64
flow.mesh @m [4]
func.func @huge_weights(%x: tensor<8x8192xf32>, %w1: tensor<8192x8192xf32> {flow.requires_grad},
                        %w2: tensor<8192x8192xf32> {flow.requires_grad}) -> tensor<f32>
    attributes {flow.mesh = @m, flow.optimizer = {kind = "sgd"}} {
  %h = flow.matmul %x, %w1 : (tensor<8x8192xf32>, tensor<8192x8192xf32>) -> tensor<8x8192xf32>
  %r = flow.relu %h : tensor<8x8192xf32>
  %y = flow.matmul %r, %w2 : (tensor<8x8192xf32>, tensor<8192x8192xf32>) -> tensor<8x8192xf32>
  %q = flow.mul %y, %y : (tensor<8x8192xf32>, tensor<8x8192xf32>) -> tensor<8x8192xf32>
  %l = flow.reduce_sum %q [0, 1] : tensor<8x8192xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Pins are constraints: the first weight pinned whole stays whole (and its
// gradient is reduced to whole for its update); the second is still split.
// CHECK-LABEL: func.func @pinned
// CHECK-SAME: %arg1: tensor<8192x8192xf32> {flow.sbp = #flow.sbp<[B]>, flow.state = "arg1"}
// CHECK-SAME: %arg2: tensor<8192x8192xf32> {flow.sbp = #flow.sbp<[S({{[01]}})]>, flow.state = "arg2"}
flow.mesh @m [4]
func.func @pinned(%x: tensor<8x8192xf32>, %w1: tensor<8192x8192xf32> {flow.requires_grad, flow.sbp = #flow.sbp<[B]>},
                  %w2: tensor<8192x8192xf32> {flow.requires_grad}) -> tensor<f32>
    attributes {flow.mesh = @m, flow.optimizer = {kind = "sgd"}} {
  %h = flow.matmul %x, %w1 : (tensor<8x8192xf32>, tensor<8192x8192xf32>) -> tensor<8x8192xf32>
  %r = flow.relu %h : tensor<8x8192xf32>
  %y = flow.matmul %r, %w2 : (tensor<8x8192xf32>, tensor<8192x8192xf32>) -> tensor<8x8192xf32>
  %q = flow.mul %y, %y : (tensor<8x8192xf32>, tensor<8x8192xf32>) -> tensor<8x8192xf32>
  %l = flow.reduce_sum %q [0, 1] : tensor<8x8192xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Only the result is pinned, split by rows: the input is taken split as
// well and nothing moves (no collective in the modeled plan); an annotated
// value keeps its pin, and is gathered for it.
// CHECK-LABEL: func.func @result_pinned
// CHECK-SAME: %arg0: tensor<4096x512xf32> {flow.sbp = #flow.sbp<[S(0)]>}
// CHECK-SAME: flow.modeled_plan = {compute_seconds
// CHECK: flow.exp %arg0 {flow.operand_sbp = [#flow.sbp<[S(0)]>], flow.sbp = [#flow.sbp<[S(0)]>]}
// CHECK: flow.relu %{{.*}} {flow.operand_sbp = [#flow.sbp<[S(0)]>], flow.sbp = [#flow.sbp<[S(0)]>]}
// CHECK-LABEL: func.func @annotated
// CHECK-SAME: all_gather_seconds
// CHECK: flow.annotate %{{.*}} as #flow.sbp<[B]>
flow.mesh @m [4]
func.func @result_pinned(%x: tensor<4096x512xf32>) -> (tensor<4096x512xf32> {flow.sbp = #flow.sbp<[S(0)]>})
    attributes {flow.mesh = @m} {
  %e = flow.exp %x : tensor<4096x512xf32>
  %r = flow.relu %e : tensor<4096x512xf32>
  return %r : tensor<4096x512xf32>
}
func.func @annotated(%x: tensor<4096x512xf32>) -> (tensor<4096x512xf32> {flow.sbp = #flow.sbp<[S(0)]>})
    attributes {flow.mesh = @m} {
  %e = flow.exp %x : tensor<4096x512xf32>
  %a = flow.annotate %e as #flow.sbp<[B]> on @m : tensor<4096x512xf32>
  %r = flow.relu %a : tensor<4096x512xf32>
  return %r : tensor<4096x512xf32>
}

// -----

// A 6x6 grid of element-wise ops on a 2x4 mesh: eliminating the grid over
// both axes at once needs a table of 5^10 entries (each op has 25 layouts
// of its result), past the budget. The search then runs one axis at a
// time (4 or 5 choices per op), and every op keeps the pinned layout of
// the input and result: no collective at all.
// CHECK-LABEL: func.func @grid_2d
// CHECK-SAME: flow.modeled_plan = {compute_seconds = {{[^,]*}}, data_parallel = {{.*}} search = "exact by mesh axis ({{0, 1|1, 0}}) (the exact search over every axis gave up: a table of 9765625 entries
// CHECK-COUNT-35: flow.sbp = [#flow.sbp<[S(0), S(1)]>]}
// CHECK-NOT: #flow.sbp<[{{[^]]*}}B{{[^]]*}}]>
flow.mesh @m [2, 4]
func.func @grid_2d(%x: tensor<64x64x64xf32> {flow.sbp = #flow.sbp<[S(0), S(1)]>}) -> (tensor<64x64x64xf32> {flow.sbp = #flow.sbp<[S(0), S(1)]>})
    attributes {flow.mesh = @m} {
  %a0_1 = flow.neg %x : tensor<64x64x64xf32>
  %a0_2 = flow.neg %a0_1 : tensor<64x64x64xf32>
  %a0_3 = flow.neg %a0_2 : tensor<64x64x64xf32>
  %a0_4 = flow.neg %a0_3 : tensor<64x64x64xf32>
  %a0_5 = flow.neg %a0_4 : tensor<64x64x64xf32>
  %a1_0 = flow.neg %x : tensor<64x64x64xf32>
  %a1_1 = flow.add %a0_1, %a1_0 : (tensor<64x64x64xf32>, tensor<64x64x64xf32>) -> tensor<64x64x64xf32>
  %a1_2 = flow.add %a0_2, %a1_1 : (tensor<64x64x64xf32>, tensor<64x64x64xf32>) -> tensor<64x64x64xf32>
  %a1_3 = flow.add %a0_3, %a1_2 : (tensor<64x64x64xf32>, tensor<64x64x64xf32>) -> tensor<64x64x64xf32>
  %a1_4 = flow.add %a0_4, %a1_3 : (tensor<64x64x64xf32>, tensor<64x64x64xf32>) -> tensor<64x64x64xf32>
  %a1_5 = flow.add %a0_5, %a1_4 : (tensor<64x64x64xf32>, tensor<64x64x64xf32>) -> tensor<64x64x64xf32>
  %a2_0 = flow.neg %a1_0 : tensor<64x64x64xf32>
  %a2_1 = flow.add %a1_1, %a2_0 : (tensor<64x64x64xf32>, tensor<64x64x64xf32>) -> tensor<64x64x64xf32>
  %a2_2 = flow.add %a1_2, %a2_1 : (tensor<64x64x64xf32>, tensor<64x64x64xf32>) -> tensor<64x64x64xf32>
  %a2_3 = flow.add %a1_3, %a2_2 : (tensor<64x64x64xf32>, tensor<64x64x64xf32>) -> tensor<64x64x64xf32>
  %a2_4 = flow.add %a1_4, %a2_3 : (tensor<64x64x64xf32>, tensor<64x64x64xf32>) -> tensor<64x64x64xf32>
  %a2_5 = flow.add %a1_5, %a2_4 : (tensor<64x64x64xf32>, tensor<64x64x64xf32>) -> tensor<64x64x64xf32>
  %a3_0 = flow.neg %a2_0 : tensor<64x64x64xf32>
  %a3_1 = flow.add %a2_1, %a3_0 : (tensor<64x64x64xf32>, tensor<64x64x64xf32>) -> tensor<64x64x64xf32>
  %a3_2 = flow.add %a2_2, %a3_1 : (tensor<64x64x64xf32>, tensor<64x64x64xf32>) -> tensor<64x64x64xf32>
  %a3_3 = flow.add %a2_3, %a3_2 : (tensor<64x64x64xf32>, tensor<64x64x64xf32>) -> tensor<64x64x64xf32>
  %a3_4 = flow.add %a2_4, %a3_3 : (tensor<64x64x64xf32>, tensor<64x64x64xf32>) -> tensor<64x64x64xf32>
  %a3_5 = flow.add %a2_5, %a3_4 : (tensor<64x64x64xf32>, tensor<64x64x64xf32>) -> tensor<64x64x64xf32>
  %a4_0 = flow.neg %a3_0 : tensor<64x64x64xf32>
  %a4_1 = flow.add %a3_1, %a4_0 : (tensor<64x64x64xf32>, tensor<64x64x64xf32>) -> tensor<64x64x64xf32>
  %a4_2 = flow.add %a3_2, %a4_1 : (tensor<64x64x64xf32>, tensor<64x64x64xf32>) -> tensor<64x64x64xf32>
  %a4_3 = flow.add %a3_3, %a4_2 : (tensor<64x64x64xf32>, tensor<64x64x64xf32>) -> tensor<64x64x64xf32>
  %a4_4 = flow.add %a3_4, %a4_3 : (tensor<64x64x64xf32>, tensor<64x64x64xf32>) -> tensor<64x64x64xf32>
  %a4_5 = flow.add %a3_5, %a4_4 : (tensor<64x64x64xf32>, tensor<64x64x64xf32>) -> tensor<64x64x64xf32>
  %a5_0 = flow.neg %a4_0 : tensor<64x64x64xf32>
  %a5_1 = flow.add %a4_1, %a5_0 : (tensor<64x64x64xf32>, tensor<64x64x64xf32>) -> tensor<64x64x64xf32>
  %a5_2 = flow.add %a4_2, %a5_1 : (tensor<64x64x64xf32>, tensor<64x64x64xf32>) -> tensor<64x64x64xf32>
  %a5_3 = flow.add %a4_3, %a5_2 : (tensor<64x64x64xf32>, tensor<64x64x64xf32>) -> tensor<64x64x64xf32>
  %a5_4 = flow.add %a4_4, %a5_3 : (tensor<64x64x64xf32>, tensor<64x64x64xf32>) -> tensor<64x64x64xf32>
  %a5_5 = flow.add %a4_5, %a5_4 : (tensor<64x64x64xf32>, tensor<64x64x64xf32>) -> tensor<64x64x64xf32>
  return %a5_5 : tensor<64x64x64xf32>
}
