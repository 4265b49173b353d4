// Auto-parallel under a memory limit (flow-compile --memory-limit): memory
// per device is priced into the measure until the plan fits.
// RUN: flow-opt %s --flow-place-pipeline="auto-parallel=1 mesh-spec=%S/../Dialect/Flow/Inputs/slow-calls.json" | FileCheck %s --check-prefix=SLOW
// RUN: flow-opt %s --flow-place-pipeline="auto-parallel=1 mesh-spec=%S/../Dialect/Flow/Inputs/slow-calls.json memory-limit=100000000" | FileCheck %s --check-prefix=LIMIT
// RUN: not flow-opt %s --flow-place-pipeline="auto-parallel=1 mesh-spec=%S/../Dialect/Flow/Inputs/slow-calls.json memory-limit=1000000" 2>&1 | FileCheck %s --check-prefix=TOOSMALL
// RUN: flow-opt %s --flow-place-pipeline="auto-parallel=1 mesh-spec=%S/../Dialect/Flow/Inputs/tiny-memory.json" 2>&1 | FileCheck %s --check-prefix=DEVICE

// Memory: where every call costs a second (slow-calls.json), two 64 MiB
// weights are best kept whole on every device (128 MiB each, no
// collective); under a 100 MB limit they are split as Megatron splits
// them (columns, then rows: one all-reduce, 32 MiB a device); under 1 MB
// no plan fits, and the error says what the smallest needs.
// SLOW-LABEL: func.func @weights
// SLOW-SAME: memory_bytes = 134610944
// SLOW: flow.matmul %arg0, %0 {flow.operand_sbp = [#flow.sbp<[B]>, #flow.sbp<[B]>], flow.sbp = [#flow.sbp<[B]>]}
// SLOW: flow.matmul %{{.*}}, %1 {flow.operand_sbp = [#flow.sbp<[B]>, #flow.sbp<[B]>], flow.sbp = [#flow.sbp<[B]>]}
// LIMIT-LABEL: func.func @weights
// LIMIT-SAME: all_reduce_seconds = 1.0000
// LIMIT-SAME: memory_bytes = 33849344 : i64, memory_limit_bytes = 100000000 : i64
// LIMIT: flow.matmul %arg0, %0 {flow.operand_sbp = [#flow.sbp<[B]>, #flow.sbp<[S(1)]>], flow.sbp = [#flow.sbp<[S(1)]>]}
// LIMIT: flow.matmul %{{.*}}, %1 {flow.operand_sbp = [#flow.sbp<[S(1)]>, #flow.sbp<[S(0)]>], flow.sbp = [#flow.sbp<[P]>]}
// TOOSMALL: error: no plan found fits the memory limit of 1000000 bytes per device: the smallest needs 32.09 MiB
// With no limit given, the device's memory (1 MiB in tiny-memory.json)
// bounds the plan; a plan that cannot fit it is compiled, with a warning
// (the peak is the model's estimate).
// DEVICE: warning: no plan found fits the memory limit of 1.00 MiB per device: the smallest needs 32.09 MiB (the device's memory in mesh description 'tiny-memory'); compiled as if without a limit
// DEVICE: func.func @weights
module attributes {flow.parameters = "w.safetensors"} {
flow.mesh @m [4]
func.func @weights(%x: tensor<8x4096xf32>) -> tensor<8x4096xf32> attributes {flow.mesh = @m} {
  %w1 = flow.parameter "w1" : tensor<4096x4096xf32>
  %w2 = flow.parameter "w2" : tensor<4096x4096xf32>
  %h = flow.matmul %x, %w1 : (tensor<8x4096xf32>, tensor<4096x4096xf32>) -> tensor<8x4096xf32>
  %r = flow.relu %h : tensor<8x4096xf32>
  %y = flow.matmul %r, %w2 : (tensor<8x4096xf32>, tensor<4096x4096xf32>) -> tensor<8x4096xf32>
  return %y : tensor<8x4096xf32>
}
}
