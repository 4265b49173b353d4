// RUN: flow-opt %s -split-input-file --flow-propagate-sbp | FileCheck %s --check-prefix=CPU
// RUN: flow-opt %s -split-input-file --flow-propagate-sbp=mesh-spec=%S/Inputs/slow-calls.json | FileCheck %s --check-prefix=SLOW
// RUN: flow-opt %s -split-input-file --flow-propagate-sbp=mesh-spec=h100-nvlink | FileCheck %s --check-prefix=H100
// RUN: not flow-opt %s -split-input-file --flow-propagate-sbp=mesh-spec=tpu-pod 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not flow-opt %s -split-input-file --flow-propagate-sbp=mesh-spec=%S/Inputs/bad-spec.json 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not flow-opt %s -split-input-file --flow-propagate-sbp=mesh-spec=%S/Inputs/two-axes.json 2>&1 | FileCheck %s --check-prefix=AXES

// What the planner refuses: a name that is neither a preset nor a file, a
// file that is not a description, one that describes another number of
// mesh axes.
// UNKNOWN: error: mesh description: 'tpu-pod' is neither a preset (cpu-mpi, h100-nvlink, h200-nvlink, h100-nodes) nor a readable file
// BAD: error: mesh description: {{.*}}bad-spec.json: axis 0 needs "bandwidth_gb_per_s", a positive number
// AXES: error: mesh description: mesh description 'two-axes' describes 2 mesh axes, the mesh has 1

// The planner times its choices on a mesh description: per mesh axis a
// bandwidth and a per-call latency, per device f32 FLOP/s (cpu-mpi by
// default). A softmax over a split axis can reduce its two statistics (two
// small all-reduces: two calls) or gather its input (one call, 32 KiB per
// device). At 3 us a call and 0.5 GB/s (cpu-mpi) the statistics are
// cheaper; where a call costs a second (slow-calls.json), or 10 us against
// 450 GB/s (h100-nvlink), one gather is.
// CPU-LABEL: func.func @softmax
// CPU: flow.softmax %arg0 axis = 1 {flow.operand_sbp = [#flow.sbp<[S(1)]>], flow.sbp = [#flow.sbp<[S(1)]>]}
// SLOW-LABEL: func.func @softmax
// SLOW: flow.softmax %arg0 axis = 1 {flow.operand_sbp = [#flow.sbp<[B]>], flow.sbp = [#flow.sbp<[B]>]}
// H100-LABEL: func.func @softmax
// H100: flow.softmax %arg0 axis = 1 {flow.operand_sbp = [#flow.sbp<[B]>], flow.sbp = [#flow.sbp<[B]>]}
flow.mesh @m [2]
func.func @softmax(%x: tensor<4x4096xf32> {flow.sbp = #flow.sbp<[S(1)]>})
    -> (tensor<4x4096xf32> {flow.sbp = #flow.sbp<[S(1)]>}) attributes {flow.mesh = @m} {
  %0 = flow.softmax %x axis = 1 : tensor<4x4096xf32>
  return %0 : tensor<4x4096xf32>
}

// -----

// A product whose result every device needs: computed whole on each
// device (no traffic), or split by rows and gathered. On the CPU preset
// (125 GFLOP/s, 0.5 GB/s) splitting the 17 GFLOP product saves 68 ms for
// 32 ms of gathering; on H100s (67 TFLOP/s, 450 GB/s) 0.13 ms for 0.05 ms;
// where every call costs a second it stays whole.
// CPU-LABEL: func.func @large_product
// CPU: flow.matmul %arg0, %arg1 {flow.operand_sbp = [#flow.sbp<[S(0)]>, #flow.sbp<[B]>], flow.sbp = [#flow.sbp<[S(0)]>]}
// H100-LABEL: func.func @large_product
// H100: flow.matmul %arg0, %arg1 {flow.operand_sbp = [#flow.sbp<[S(0)]>, #flow.sbp<[B]>], flow.sbp = [#flow.sbp<[S(0)]>]}
// SLOW-LABEL: func.func @large_product
// SLOW: flow.matmul %arg0, %arg1 {flow.operand_sbp = [#flow.sbp<[B]>, #flow.sbp<[B]>], flow.sbp = [#flow.sbp<[B]>]}
flow.mesh @m [2]
func.func @large_product(%x: tensor<8192x1024xf32>, %w: tensor<1024x1024xf32>)
    -> tensor<8192x1024xf32> attributes {flow.mesh = @m} {
  %0 = flow.matmul %x, %w : (tensor<8192x1024xf32>, tensor<1024x1024xf32>) -> tensor<8192x1024xf32>
  return %0 : tensor<8192x1024xf32>
}
