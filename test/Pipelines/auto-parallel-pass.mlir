// RUN: flow-opt %s --flow-auto-parallel="mesh-spec=h100-nvlink" | FileCheck %s
// RUN: not flow-opt %s --flow-auto-parallel="mesh-spec=h100-nvlink memory-limit=1000" 2>&1 | FileCheck %s --check-prefix=LIMIT

// flow-auto-parallel is the planner alone (flow-propagate-sbp with the
// exact search over ops and unpinned arguments): the input of a function
// whose result is pinned split is taken split, nothing moves (the report's
// keys, sorted, hold no collective's seconds), and the report names the
// search. Under a limit no plan fits, it says what the
// smallest plan needs.
// CHECK-LABEL: func.func @result_pinned
// CHECK-SAME: %arg0: tensor<4096x512xf32> {flow.sbp = #flow.sbp<[S(0)]>}
// CHECK-SAME: flow.modeled_plan = {compute_seconds = {{[^,]*}}, data_parallel = {{{[^}]*}}}, memory_bytes = {{[0-9]+}} : i64, memory_limit_bytes = {{[0-9]+}} : i64, mesh_spec = "h100-nvlink", search = "exact"
// CHECK: flow.exp %arg0 {flow.operand_sbp = [#flow.sbp<[S(0)]>], flow.sbp = [#flow.sbp<[S(0)]>]}
// CHECK: flow.relu %{{.*}} {flow.operand_sbp = [#flow.sbp<[S(0)]>], flow.sbp = [#flow.sbp<[S(0)]>]}
// LIMIT: error: no plan found fits the memory limit of 1000 bytes per device: the smallest needs 6.00 MiB
flow.mesh @m [4]
func.func @result_pinned(%x: tensor<4096x512xf32>) -> (tensor<4096x512xf32> {flow.sbp = #flow.sbp<[S(0)]>})
    attributes {flow.mesh = @m} {
  %e = flow.exp %x : tensor<4096x512xf32>
  %r = flow.relu %e : tensor<4096x512xf32>
  return %r : tensor<4096x512xf32>
}
