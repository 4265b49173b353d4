// RUN: flow-opt %s --flow-propagate-sbp | FileCheck %s --check-prefix=CPU
// RUN: flow-opt %s --flow-propagate-sbp=mesh-spec=%S/Inputs/fast-memory.json | FileCheck %s --check-prefix=FAST
// RUN: flow-opt %s --flow-propagate-sbp=mesh-spec=%S/Inputs/no-memory-bandwidth.json | FileCheck %s --check-prefix=WORK
// RUN: not flow-opt %s --flow-propagate-sbp=mesh-spec=%S/Inputs/bad-memory-bandwidth.json 2>&1 | FileCheck %s --check-prefix=BAD

// An op takes the longer of its work at the device's FLOP/s and its
// pieces' bytes at the memory's bandwidth. Adding two 4 MiB tensors reads
// 8 MiB and writes 4 MiB: 12582912 bytes, 968 us at cpu-mpi's 13 GB/s,
// 12.6 us at 1000 GB/s; its 1048576 FLOPs take 8.4 us at 125 GFLOP/s
// (the time without a memory bandwidth in the description). The reshape
// is a view and takes no time.
// CPU: compute_seconds = 9.679{{[0-9]*}}E-4
// FAST: compute_seconds = 1.258{{[0-9]*}}E-5
// WORK: compute_seconds = 8.388{{[0-9]*}}E-6
// BAD: error: mesh description: {{.*}}bad-memory-bandwidth.json: device needs "memory_gb_per_s", a positive number
flow.mesh @m [2]
func.func @add(%x: tensor<1024x1024xf32> {flow.sbp = #flow.sbp<[B]>},
               %y: tensor<1024x1024xf32> {flow.sbp = #flow.sbp<[B]>})
    -> (tensor<1048576xf32> {flow.sbp = #flow.sbp<[B]>}) attributes {flow.mesh = @m} {
  %s = flow.add %x, %y {flow.operand_sbp = [#flow.sbp<[B]>, #flow.sbp<[B]>], flow.sbp = [#flow.sbp<[B]>]} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %r = flow.reshape %s {flow.operand_sbp = [#flow.sbp<[B]>], flow.sbp = [#flow.sbp<[B]>]} : tensor<1024x1024xf32> -> tensor<1048576xf32>
  return %r : tensor<1048576xf32>
}
