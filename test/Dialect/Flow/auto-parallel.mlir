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
