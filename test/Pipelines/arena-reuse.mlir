// The arena plan (flow/Support/MemoryPlan.h, run by the .fbin writer):
// buffers reuse the slices of dead values, an element-wise kernel writes
// over an operand that dies at it, and the report gives the arena next to
// its lower bound and the unplanned total.
// RUN: flow-compile %s -o %t.fbin --report=%t.json --fusion=off --in-place --memory-plot=%t.svg
// RUN: FileCheck %s --input-file=%t.json
// RUN: FileCheck %s --input-file=%t.svg --check-prefix=PLOT
// RUN: flow-compile %s -o %t.fused.fbin --report=%t.fused.json
// RUN: flow-compile %s -o %t.apart.fbin --report=%t.apart.json --fusion=off
// RUN: FileCheck %s --input-file=%t.apart.json --check-prefix=APART
// RUN: FileCheck %s --input-file=%t.fused.json --check-prefix=FUSED

// One op per kernel (--fusion=off), in place (--in-place): five element-wise
// kernels over 1 KiB values run in one 1 KiB slice (each writes over its
// dying input); softmax
// is not element-wise, so that chain needs two slices. The largest arena is
// the softmaxes' 2 KiB, which is also its lower bound.
// CHECK: "arena_bytes": 2048
// CHECK: "arena_lower_bound": 2048
// CHECK: "dispatches": 10
// CHECK: "in_place_buffers": 3
// CHECK: "kernel_bytes": 20480
// CHECK: "memory_plans": [
// CHECK: "arena_bytes": 1024,
// CHECK: "buffers": [
// CHECK-NEXT: {
// CHECK-NEXT: "first": 1,
// CHECK-NEXT: "in_place": false,
// CHECK-NEXT: "last": 2,
// CHECK-NEXT: "offset": 0,
// CHECK-NEXT: "size": 1024,
// CHECK-NEXT: "value": "@chain_k0 (arena-reuse.mlir:{{[0-9]+}}:8)"
// CHECK-NEXT: },
// CHECK-NEXT: {
// CHECK-NEXT: "first": 2,
// CHECK-NEXT: "in_place": true,
// CHECK-NEXT: "last": 3,
// CHECK-NEXT: "offset": 0,
// CHECK: "function": "chain",
// CHECK-NEXT: "heuristic":
// CHECK-NEXT: "lower_bound": 1024,
// CHECK-NEXT: "unplanned_bytes": 4096
// CHECK: "arena_bytes": 2048,
// CHECK: "function": "softmaxes",
// CHECK-NEXT: "heuristic":
// CHECK-NEXT: "lower_bound": 2048,
// CHECK-NEXT: "unplanned_bytes": 4096
// CHECK: "transient_bytes": 8192

// Without --in-place the element-wise chain takes two slices too.
// APART: "in_place_buffers": 0
// APART: "memory_plans": [
// APART: "arena_bytes": 2048,
// APART: "function": "chain",

// The plot draws the largest arena, with its lower bound.
// PLOT: <svg
// PLOT: @softmaxes: arena 0.00 MiB, lower bound 0.00 MiB
// PLOT-COUNT-4: <rect x=
// PLOT: lower bound</text>
// PLOT: </svg>

// Fused, the element-wise chain is one kernel, and so are the five
// softmaxes (reductions over the same rows share a kernel, which computes
// them row by row): nothing is left for the arena.
// FUSED: "arena_bytes": 0
// FUSED: "dispatches": 2
// FUSED: "kernel_bytes": 4096
// FUSED: "kernel_ops": [
// FUSED-NEXT: {
// FUSED-NEXT: "bytes": 2048,
// FUSED-NEXT: "kernel": "chain_k0",
// FUSED-NEXT: "ops": [
// FUSED-NEXT: "flow.relu",
// FUSED-NEXT: "flow.exp",
// FUSED-NEXT: "flow.neg",
// FUSED-NEXT: "flow.tanh",
// FUSED-NEXT: "flow.abs"
// FUSED-NEXT: ],
// FUSED-NEXT: "rows": 256
// FUSED: "transient_bytes": 0
func.func @chain(%x: tensor<256xf32>) -> tensor<256xf32> {
  %0 = flow.relu %x : tensor<256xf32>
  %1 = flow.exp %0 : tensor<256xf32>
  %2 = flow.neg %1 : tensor<256xf32>
  %3 = flow.tanh %2 : tensor<256xf32>
  %4 = flow.abs %3 : tensor<256xf32>
  return %4 : tensor<256xf32>
}

func.func @softmaxes(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %0 = flow.softmax %x axis = 1 : tensor<16x16xf32>
  %1 = flow.softmax %0 axis = 1 : tensor<16x16xf32>
  %2 = flow.softmax %1 axis = 1 : tensor<16x16xf32>
  %3 = flow.softmax %2 axis = 1 : tensor<16x16xf32>
  %4 = flow.softmax %3 axis = 1 : tensor<16x16xf32>
  return %4 : tensor<16x16xf32>
}
