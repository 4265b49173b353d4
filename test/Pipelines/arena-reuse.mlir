// The arena plan reuses a buffer once its value is dead: a chain of five
// kernels (one op each, --fusion=off) over 1 KiB values needs two 1 KiB
// slices, not four. Fused, the chain is one kernel and needs no arena.
// RUN: flow-compile %s -o %t.fbin --report=%t.json --fusion=off
// RUN: FileCheck %s --input-file=%t.json
// RUN: flow-compile %s -o %t.fused.fbin --report=%t.fused.json
// RUN: FileCheck %s --input-file=%t.fused.json --check-prefix=FUSED

// CHECK: "arena_bytes": 2048
// CHECK: "dispatches": 5
// CHECK: "kernel_bytes": 10240
// CHECK: "transient_bytes": 4096
// FUSED: "arena_bytes": 0
// FUSED: "dispatches": 1
// FUSED: "kernel_bytes": 2048
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
