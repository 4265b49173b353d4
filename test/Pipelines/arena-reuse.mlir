// The arena plan reuses a buffer once its value is dead: a chain of five
// kernels over 1 KiB values needs two 1 KiB slices, not four.
// RUN: flow-compile %s -o %t.fbin --report=%t.json
// RUN: FileCheck %s --input-file=%t.json

// CHECK: "arena_bytes": 2048
// CHECK: "dispatches": 5
// CHECK: "transient_bytes": 4096
func.func @chain(%x: tensor<256xf32>) -> tensor<256xf32> {
  %0 = flow.relu %x : tensor<256xf32>
  %1 = flow.exp %0 : tensor<256xf32>
  %2 = flow.neg %1 : tensor<256xf32>
  %3 = flow.tanh %2 : tensor<256xf32>
  %4 = flow.abs %3 : tensor<256xf32>
  return %4 : tensor<256xf32>
}
