// A mesh function compiles to one program per distinct device: the SBPs
// are propagated, the program partitioned, and the collectives run on the
// host schedule between kernels and GEMMs.
// RUN: flow-compile %s --compile-to=flow | FileCheck %s --check-prefix=FLOW
// RUN: flow-compile %s --compile-to=host | FileCheck %s --check-prefix=HOST
// RUN: flow-compile %s -o %t.fbin --report=%t.json && FileCheck %s --input-file=%t.json --check-prefix=REPORT

flow.mesh @mesh [2]

func.func @forward(%x: tensor<8x16xf32> {flow.sbp = #flow.sbp<[S(0)]>}, %w: tensor<16x32xf32>,
                   %b: tensor<32xf32>) -> tensor<8x32xf32> attributes {flow.mesh = @mesh} {
  %m = flow.matmul %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %a = flow.add %m, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %r = flow.relu %a : tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// FLOW-LABEL: func.func @forward(%{{.*}}: tensor<4x16xf32>, %{{.*}}: tensor<16x32xf32>, %{{.*}}: tensor<32xf32>) -> tensor<8x32xf32>
// FLOW-SAME: flow.global_inputs = {{\[\[}}tensor<8x16xf32>, #flow.sbp<[S(0)]>], [tensor<16x32xf32>, #flow.sbp<[B]>], [tensor<32xf32>, #flow.sbp<[B]>{{\]\]}}
// FLOW-SAME: flow.ranks = array<i64: 0, 1>
// FLOW: flow.matmul {{.*}} -> tensor<4x32xf32>
// FLOW: %[[R:.*]] = call @forward_k0
// FLOW: %[[G:.*]] = flow.all_gather %[[R]] on @mesh axes = [0] dim = 0 : tensor<4x32xf32> -> tensor<8x32xf32>
// FLOW: return %[[G]]

// On the host schedule the collective gathers the kernel's slice straight
// into the output buffer.
// HOST-LABEL: func.func @forward
// HOST-SAME: (%{{.*}}: memref<4x16xf32>, %{{.*}}: memref<16x32xf32>, %{{.*}}: memref<32xf32>, %[[OUT:.*]]: memref<8x32xf32>)
// HOST-SAME: flow.host_outputs = 1
// HOST-SAME: flow.ranks = array<i64: 0, 1>
// HOST: host.gemm
// HOST: %[[S:.*]] = host.slice
// HOST: host.dispatch @forward_k0({{.*}}) outs(%[[S]])
// HOST: host.collective all_gather %[[S]] -> %[[OUT]] on @mesh axes = [0] {dim = 0 : i64} : memref<4x32xf32> -> memref<8x32xf32>
// HOST-NEXT: return

// REPORT: "async_collectives": 0,
// REPORT: "collective_ops": [
// REPORT: "async": false,
// REPORT-NEXT: "bytes_per_device": 1024,
// REPORT-NEXT: "function": "forward",
// REPORT-NEXT: "mesh_axes": [
// REPORT-NEXT: 0
// REPORT-NEXT: ],
// REPORT-NEXT: "op": "all_gather"
// REPORT: "collectives": 1
// REPORT: "gemms": 1
// Every value's SBP: the arguments, then each op's result.
// REPORT: "placements": [
// REPORT: "sbp": "#flow.sbp<[S(0)]>",
// REPORT-NEXT: "value": "argument 0"
// REPORT: "sbp": "#flow.sbp<[B]>",
// REPORT-NEXT: "value": "argument 1"
// REPORT: "sbp": "#flow.sbp<[S(0)]>",
// REPORT-NEXT: "value": "flow.matmul result 0
// REPORT: "sbp": "#flow.sbp<[S(0)]>",
// REPORT-NEXT: "value": "flow.add result 0
// REPORT: "sbp": "#flow.sbp<[S(0)]>",
// REPORT-NEXT: "value": "flow.relu result 0
