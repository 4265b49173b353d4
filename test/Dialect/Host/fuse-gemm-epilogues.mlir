// RUN: flow-opt %s -split-input-file --flow-fuse-gemm-epilogues | FileCheck %s
// RUN: flow-opt %s -split-input-file --flow-fuse-gemm-epilogues --flow-plan-memory=in-place=1 | FileCheck %s --check-prefix=PLAN

// An element-wise kernel over the GEMM's rows, right after it (buffer ops
// in between do not count), becomes its epilogue.
// CHECK-LABEL: func.func @bias_relu
// CHECK: host.gemm
// CHECK: host.dispatch @k(%{{.*}}, %{{.*}}) outs(%{{.*}}) {gemm_epilogue, in_place_operands = array<i64: 0>}
// The epilogue shares the GEMM's position: its output never reuses the
// bytes of the GEMM's operands (other pieces still read them), but may take
// over the GEMM's result, row by row.
// PLAN-LABEL: func.func @bias_relu
// PLAN: %[[X:.*]] = host.slice %{{.*}}[[[OX:[0-9]+]]] live[1, 2]
// PLAN: %[[T:.*]] = host.slice %{{.*}}[[[OT:[0-9]+]]] live[2, 2]
// PLAN: host.gemm %[[X]], %{{.*}} -> %[[T]]
// PLAN: host.slice %{{.*}}[[[OT]]] live[2, 3] in_place
func.func private @k(tensor<64x64xf32>, tensor<64xf32>) -> tensor<64x64xf32> attributes {flow.kernel, flow.workgroup_extent = 64 : i64}
func.func private @x(tensor<64x64xf32>) -> tensor<64x64xf32> attributes {flow.kernel, flow.workgroup_extent = 64 : i64}
func.func @bias_relu(%in: memref<64x64xf32>, %w: memref<64x64xf32>, %b: memref<64xf32>, %out: memref<64x64xf32>) attributes {flow.host_outputs = 1 : i64} {
  %x = host.alloc : memref<64x64xf32>
  host.dispatch @x(%in) outs(%x) : (memref<64x64xf32>) -> (memref<64x64xf32>)
  %t = host.alloc : memref<64x64xf32>
  host.gemm %x, %w -> %t : memref<64x64xf32>, memref<64x64xf32> -> memref<64x64xf32>
  %o = host.alloc : memref<64x64xf32>
  host.dispatch @k(%t, %b) outs(%o) {in_place_operands = array<i64: 0>} : (memref<64x64xf32>, memref<64xf32>) -> (memref<64x64xf32>)
  host.copy %o -> %out : memref<64x64xf32> -> memref<64x64xf32>
  return
}

// -----

// Not an epilogue: its rows are not the GEMM's; it does not read the
// GEMM's result element-wise; a command comes between; a batched GEMM.
// CHECK-LABEL: func.func @refused
// CHECK-NOT: gemm_epilogue
func.func private @rows1(tensor<64x64xf32>) -> tensor<64x64xf32> attributes {flow.kernel, flow.workgroup_extent = 1 : i64}
func.func private @k(tensor<64x64xf32>) -> tensor<64x64xf32> attributes {flow.kernel, flow.workgroup_extent = 64 : i64}
func.func private @kb(tensor<2x64x64xf32>) -> tensor<2x64x64xf32> attributes {flow.kernel, flow.workgroup_extent = 128 : i64}
func.func @refused(%x: memref<64x64xf32>, %xb: memref<2x64x64xf32>, %out: memref<64x64xf32>, %outb: memref<2x64x64xf32>) attributes {flow.host_outputs = 2 : i64} {
  %t = host.alloc : memref<64x64xf32>
  host.gemm %x, %x -> %t : memref<64x64xf32>, memref<64x64xf32> -> memref<64x64xf32>
  %a = host.alloc : memref<64x64xf32>
  host.dispatch @rows1(%t) outs(%a) {in_place_operands = array<i64: 0>} : (memref<64x64xf32>) -> (memref<64x64xf32>)
  %t2 = host.alloc : memref<64x64xf32>
  host.gemm %x, %x -> %t2 : memref<64x64xf32>, memref<64x64xf32> -> memref<64x64xf32>
  %b = host.alloc : memref<64x64xf32>
  host.dispatch @k(%t2) outs(%b) : (memref<64x64xf32>) -> (memref<64x64xf32>)
  %t3 = host.alloc : memref<64x64xf32>
  host.gemm %a, %b -> %t3 : memref<64x64xf32>, memref<64x64xf32> -> memref<64x64xf32>
  host.copy %t3 -> %out : memref<64x64xf32> -> memref<64x64xf32>
  host.dispatch @k(%t3) outs(%out) {in_place_operands = array<i64: 0>} : (memref<64x64xf32>) -> (memref<64x64xf32>)
  %tb = host.alloc : memref<2x64x64xf32>
  host.gemm %xb, %xb -> %tb : memref<2x64x64xf32>, memref<2x64x64xf32> -> memref<2x64x64xf32>
  host.dispatch @kb(%tb) outs(%outb) {in_place_operands = array<i64: 0>} : (memref<2x64x64xf32>) -> (memref<2x64x64xf32>)
  return
}
